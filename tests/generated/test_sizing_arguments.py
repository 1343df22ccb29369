"""Issue 18 item 11: the generated sizing functions take any ``operator.index`` integer and
answer in plain ints, and refuse what no engine takes with a ValueError naming the argument.

Hand derivations (docs/cost-model.md §4) for llama3_2_vision (tokens_per_block 32, bf16, 8
cross-attention layers of 8 KV heads x 128): one encoder token costs (K+V) 2 x 8 x 128 x 2 B =
4096 B per layer, in whole pages taken at admission, so a request with e encoder tokens holds
8 x ceil(e / 32) x 32 x 4096 B. Under "trtllm-v2" the intercept is B x that (no SWA layer).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

VISION = importlib.import_module("generated.llama3_2_vision.sizing")
LLAMA = importlib.import_module("generated.llama3.sizing")
GEMMA = importlib.import_module("generated.gemma3.sizing")
PLAIN = dict(max_num_tokens=256, max_seq_len=1024)
BIG = 10**400  # past a float's range (~1.8e308)


def _cross_request(encoder_tokens: int) -> int:
    return 8 * -(-encoder_tokens // 32) * 32 * 4096


def test_numpy_encoder_tokens_give_plain_int_answers():
    cost = VISION.cache_costs(
        "llama3_2_11b_vision", max_batch_size=2, encoder_tokens=np.int64(100), **PLAIN
    )["target"]
    # 100 tokens: 4 pages of 32 = 128 tokens, 8 x 128 x 4096 B = 4 MiB per request, B = 2.
    assert cost.intercept == 2 * _cross_request(100) == 8_388_608
    assert type(cost.intercept) is int and type(cost.slope) is int


def test_a_numpy_encoder_count_cannot_wrap_the_intercept():
    # 1601 tokens: 51 pages, 51 x 32 x 4096 x 8 B = 51 MiB per request; at B = 2**40 requests
    # the intercept is 51 x 2**60 B, past int64 (where numpy arithmetic wraps negative).
    cost = VISION.cache_costs(
        "llama3_2_11b_vision", max_batch_size=2**40, encoder_tokens=np.int64(1601), **PLAIN
    )["target"]
    assert cost.intercept == 2**40 * _cross_request(1601) == 51 * 2**60
    assert type(cost.intercept) is int


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: LLAMA.cache_costs("llama3_1_8b", max_batch_size=BIG, **PLAIN), "max_batch_size"),
        (
            lambda: LLAMA.cache_costs(
                "llama3_1_8b", max_batch_size=2, semantics="exact", tp_size=BIG, **PLAIN
            ),
            "tp_size",
        ),
        (
            lambda: LLAMA.quota_from_max_tokens("llama3_1_8b", BIG, max_batch_size=2, **PLAIN),
            "max_tokens",
        ),
        (
            lambda: LLAMA.split_budget("llama3_1_8b", BIG, max_batch_size=2, **PLAIN),
            "budget_bytes",
        ),
        (
            lambda: LLAMA.quota_for_requests(
                "llama3_1_8b", requests=BIG, seq_len=100, max_num_tokens=256
            ),
            "requests",
        ),
        *(
            (
                lambda engine=engine: LLAMA.engine_capacity(
                    "llama3_1_8b", BIG, engine=engine, max_seq_len=1024, max_num_tokens=256
                ),
                "budget_bytes",
            )
            for engine in ("trtllm-v2", "vllm", "sglang")
        ),
    ],
)
def test_integers_past_64_bits_are_a_value_error_naming_the_argument(call, argument):
    with pytest.raises(ValueError, match=f"^{argument} must be <= 9223372036854775807") as info:
        call()
    assert "an int of 1329 bits" in str(info.value)  # 10**400, not 400 digits


@pytest.mark.parametrize(
    ("ratio", "value"),
    [
        ("swa_full_tokens_ratio", 0.0),
        ("swa_full_tokens_ratio", 1.5),
        ("swa_full_tokens_ratio", float("nan")),
        ("swa_full_tokens_ratio", "0.8"),
        ("mamba_full_memory_ratio", -1.0),
        ("mamba_full_memory_ratio", float("inf")),
        ("mamba_full_memory_ratio", BIG),
        ("mamba_full_memory_ratio", None),
    ],
    ids=lambda value: str(value)[:24],
)
def test_sglang_ratios_are_validated(ratio, value):
    with pytest.raises(ValueError, match=f"^{ratio} must be"):
        GEMMA.engine_capacity(
            "gemma3_4b", 1 << 34, engine="sglang", max_seq_len=4096, max_num_tokens=256,
            **{ratio: value},
        )  # fmt: skip


def test_valid_sglang_ratios_still_answer():
    answer = GEMMA.engine_capacity(
        "gemma3_4b", 1 << 34, engine="sglang", max_seq_len=4096, max_num_tokens=256,
        swa_full_tokens_ratio=np.float64(1.0), mamba_full_memory_ratio=3,
    )  # fmt: skip
    assert answer.kv_tokens > 0
