"""SGLang 0.5.23's Mamba radix cache settings beyond its CUDA default, as a launch command sets
them: ``engine_capacity(..., mamba_radix_cache_strategy=)`` "extra_buffer_lazy",
"extra_buffer_no_overlap" and "disabled", derived by hand here and matched against SGLang's own
code in tests/unit/test_engines.py (the goldens' ``sglang_flags`` cases).

Qwen3-Next-80B-A3B (config.json): 36 Gated DeltaNet layers, S = 36 x (conv 8,192 channels x 3
rows x 2 B + SSM 32 heads x 128 x 128 x 4 B) = 77,266,944 B of state a request; 12 full layers
x 2 x 2 KV heads x 256 x 2 B = 24,576 B a token. With the radix cache on, SGLang's Mamba share
is budget x 0.9 / 1.9 and K = floor(share / S - 1) slots (one more is padding); it runs at most
K // ratio requests at once (kv_cache_configurator.py resolve_max_num_reqs, refusing 0), the
ratio from _calculate_mamba_ratio: 3 + get_mamba_tracking_slots (2 with the overlap scheduler;
1 without it, or lazy). With the radix cache disabled the ratio is 1 and, max_running_requests
set (kvgen emits it), _handle_max_mamba_cache keeps max(1, max_running_requests) slots, no
memory ratio.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from kvgen._engines.capacity import engine_capacity
from kvgen._spec.loader import load_family

FAMILIES = Path(__file__).resolve().parents[2] / "schema" / "families"

GIB40 = 40 << 30
S = 77_266_944
TOKEN = 24_576
Q = ("qwen3_next_80b_a3b",)
PLAN = {"engine": "sglang", "max_seq_len": 8192, "max_num_tokens": 8192}


@cache
def qwen():
    return load_family(FAMILIES / "qwen3_next.yaml")


@pytest.mark.parametrize("strategy", ["extra_buffer_lazy", "extra_buffer_no_overlap"])
def test_one_tracking_slot_runs_a_quarter_of_the_state_slots(strategy) -> None:
    # 40 GiB: share 20,344,581,928.4 B, K = floor(263.30 - 1) = 262 slots: the same 920,754
    # tokens as extra_buffer ((40 GiB - 263 S) / 24,576), but 262 // 4 = 65 requests run
    # (extra_buffer: 52), below the tokens' 920,754 / 8,192 = 112.4.
    got = engine_capacity(qwen(), *Q, GIB40, mamba_radix_cache_strategy=strategy, **PLAN)
    assert (got.kv_tokens, got.max_concurrency) == ((GIB40 - 263 * S) // TOKEN, 65.0)
    assert got.kv_tokens == 920_754
    # Page 64: 920,754 // 64 = 14,386 pages, 920,704 tokens.
    got = engine_capacity(qwen(), *Q, GIB40, block_size=64, mamba_radix_cache_strategy=strategy,
                          **PLAN)  # fmt: skip
    assert (got.kv_tokens, got.num_blocks) == (920_704, 14_386)
    # 1 GiB: share 508,614,548.2 B, K = floor(6.58 - 1) = 5, 5 // 4 = 1 request (extra_buffer
    # also 1); 768 MiB: K = 3, 3 // 4 = 0: SGLang refuses to start.
    got = engine_capacity(qwen(), *Q, 1 << 30, mamba_radix_cache_strategy=strategy, **PLAN)
    assert (got.kv_tokens, got.max_concurrency) == (((1 << 30) - 6 * S) // TOKEN, 1.0)
    with pytest.raises(ValueError, match=r"3 recurrent state slots, fewer than the 4 .*3 // 4"):
        engine_capacity(qwen(), *Q, 768 << 20, mamba_radix_cache_strategy=strategy, **PLAN)


@pytest.mark.parametrize("strategy", ["extra_buffer_lazy", "extra_buffer_no_overlap"])
def test_the_extra_buffer_refuses_a_page_that_does_not_divide_its_track_interval(strategy):
    # mamba_hook.py validate_mamba_extra_buffer (lazy or not): 256 % 96 = 64, refused.
    with pytest.raises(ValueError, match=rf"block_size 96: .*refuses {strategy} where the page "
                       r"does not divide mamba_track_interval 256"):  # fmt: skip
        engine_capacity(qwen(), *Q, GIB40, block_size=96, mamba_radix_cache_strategy=strategy,
                        **PLAN)  # fmt: skip


def test_the_radix_cache_disabled_keeps_one_slot_per_running_request() -> None:
    # max_running_requests 64: 64 slots + the padding one, 65 S = 5,022,351,360 B; the tokens
    # (42,949,672,960 - 5,022,351,360) / 24,576 = 1,543,266.7 -> 1,543,266; 64 requests run
    # (ratio 1: 64 // 1), below 1,543,266 / 8,192 = 188.4.
    kw = {**PLAN, "mamba_radix_cache_strategy": "disabled"}
    got = engine_capacity(qwen(), *Q, GIB40, max_batch_size=64, **kw)
    assert (got.kv_tokens, got.max_concurrency) == (1_543_266, 64.0)
    assert got.kv_tokens == (GIB40 - 65 * S) // TOKEN
    # Neither validator runs (handle_mamba_radix_cache returns first): any page, 96 too:
    # 1,543,266 // 96 = 16,075 pages = 1,543,200 tokens; 64: 24,113 pages = 1,543,232.
    assert engine_capacity(qwen(), *Q, GIB40, max_batch_size=64, block_size=96,
                           **kw).kv_tokens == 1_543_200  # fmt: skip
    assert engine_capacity(qwen(), *Q, GIB40, max_batch_size=64, block_size=64,
                           **kw).kv_tokens == 1_543_232  # fmt: skip
    # 2 GiB, 8 requests: 9 S = 695,402,496 B, (2,147,483,648 - 695,402,496) / 24,576 =
    # 59,085.3 -> 59,085 tokens; 59,085 / 8,192 = 7.21 requests' tokens, below the 8 slots.
    got = engine_capacity(qwen(), *Q, 2 << 30, max_batch_size=8, **kw)
    assert (got.kv_tokens, got.max_concurrency) == (59_085, 59_085 / 8192)
    # 2 GiB, 64 requests: 65 S = 5.0 GB is more than the budget; SGLang's MemoryPoolConfig
    # says "Not enough memory".
    with pytest.raises(ValueError, match=r"no KV pool \(MemoryPoolConfig.__post_init__"):
        engine_capacity(qwen(), *Q, 2 << 30, max_batch_size=64, **kw)
    with pytest.raises(ValueError, match="max_batch_size"):
        engine_capacity(qwen(), *Q, GIB40, max_batch_size=0, **kw)


def test_the_radix_cache_disabled_reserves_a_drafters_states_per_running_request() -> None:
    # mtp2 (D = 3 draft tokens), page 64, max_running_requests 64: 65 x 3 x S =
    # 15,067,054,080 B of intermediate states and 65 S = 5,022,351,360 B of slots; the tokens
    # (42,949,672,960 - 20,089,405,440) / 24,576 = 930,186.3 -> 14,534 pages = 930,176.
    got = engine_capacity(qwen(), *Q, GIB40, block_size=64, max_batch_size=64, speculative="mtp2",
                          mamba_radix_cache_strategy="disabled", **PLAN)  # fmt: skip
    assert got.kv_tokens == 930_176 == (GIB40 - 65 * 4 * S) // TOKEN // 64 * 64
    assert got.request_bytes == 8192 * TOKEN + 4 * S


def test_an_attention_only_model_is_not_moved_by_the_strategy() -> None:
    # No state slots: the strategy and max_running_requests size nothing (Llama-3.1-8B,
    # 32 layers x 2 x 8 x 128 x 2 B = 131,072 B a token; 40 GiB / 131,072 = 327,680).
    llama = load_family(FAMILIES / "llama3.yaml")
    for strategy in ("extra_buffer_lazy", "extra_buffer_no_overlap", "disabled"):
        got = engine_capacity(llama, "llama3_1_8b", GIB40, mamba_radix_cache_strategy=strategy,
                              **PLAN)  # fmt: skip
        assert (got.kv_tokens, got.max_concurrency) == (327_680, 40.0)


def test_sglangs_goldens_hold_every_setting_on_every_shipped_recurrent_hybrid() -> None:
    # bench/engines/refresh_goldens.py sglang_radix_cases: SGLang's ServerArgs.resolve_once
    # given the flags kvgen plan --emit sglang writes, then its own pool sizing. Each setting,
    # each hybrid, pages 1 and 64 at two budgets: sized, or refused by SGLang (no_buffer at
    # page 64 by validate_mamba_no_buffer; the radix cache disabled at 2 GiB by the 65 slots).
    import json

    from kvgen._deploy.emit import _sglang_mamba_flags

    golden = json.loads((FAMILIES.parents[1] / "tests/fixtures/engines/sglang.json").read_text())
    held: dict[tuple[str, str, int, int], dict] = {}
    for case in golden["cases"]:
        inputs = case["inputs"]
        if "sglang_flags" in inputs and inputs["speculative"] == "none":
            key = (inputs["family"], json.dumps(inputs["sglang_flags"], sort_keys=True),
                   inputs["block_size"], inputs["budget_bytes"])  # fmt: skip
            held[key] = case["engine_output"]
    for name in ("granite4", "nemotron_h", "qwen3_next", "falcon_h1", "kimi_linear"):
        for strategy in ("no_buffer", "extra_buffer_lazy", "extra_buffer_no_overlap", "disabled"):
            flags = json.dumps(_sglang_mamba_flags(strategy)[0], sort_keys=True)
            for page in (1, 64):
                for budget in (GIB40, 2 << 30):
                    got = held[(name, flags, page, budget)]
                    if strategy == "no_buffer" and page == 64:
                        assert got["raised_by"] == "validate_mamba_no_buffer"
                    elif "error" not in got:
                        ratio = {"no_buffer": 3, "disabled": 1}.get(strategy, 4)
                        assert got["mamba_ratio"] == ratio
                        assert got.get("disable_radix_cache", False) == (strategy == "disabled")
