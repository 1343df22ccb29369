"""vLLM's use_heterogeneous_vocab: a separate draft model of another vocabulary in the pool.

vLLM 0.33.0 refuses a "draft_model" drafter whose vocab_size differs from the target's
(vllm/config/speculative.py SpeculativeConfig.verify_equal_vocab_size_if_draft_model) unless
speculative_config's use_heterogeneous_vocab is set: _verify_args then skips the check (and
requires method 'draft_model' and greedy draft sampling). The option builds a token mapping
(v1/spec_decode/draft_model.py VocabMapping) and changes no KV cache spec: the draft's layers
join the pool as any draft model's. The numbers here are issue 22's, which vLLM's own planner
gave from the two config.json files (tests/fixtures/engines/vllm.json, cases with
``heterogeneous_vocab``, recorded by bench/engines/refresh_goldens.py through
vllm_from_config.py: the draft's attention specs marked is_draft).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kvgen._engines.capacity import engine_capacity
from kvgen._model.engine_rows import engine_tables
from kvgen.sizing.engines_core import NotModelled

from tests.sizing_support import import_generated
from tests.unit.test_engines import VLLM, family

ROOT = Path(__file__).resolve().parents[2]
GIB40 = 40 << 30  # 42,949,672,960 B
AT = {"engine": "vllm==0.33.0", "max_seq_len": 8192, "max_num_tokens": 8192, "block_size": 16}


def golden(model: str, **want: object) -> dict:
    """The one vLLM golden built from config.json with use_heterogeneous_vocab."""
    found = [
        case["engine_output"]
        for case in VLLM["cases"]
        if case["inputs"]["model"] == model
        and case["inputs"].get("heterogeneous_vocab") is True
        and all(case["inputs"][key] == value for key, value in want.items())
    ]
    assert len(found) == 1, (model, want, len(found))
    return found[0]


def test_issue_22_gemma3_27b_with_the_1b_draft() -> None:
    # Gemma 3 27B: 52 sliding (1,024) + 10 full layers, 16 KV heads x 128 x 2 (K, V) x 2 B =
    # 8,192 B a token, 131,072 B a 16-token page. Gemma-3-1B: 22 sliding (512) + 4 full, 1 head
    # x 256: 1,024 B a token; vLLM gives its layers blocks of 128 tokens (the same 131,072 B
    # page). Four kinds of 52, 10, 22, 4 layers: 52 >= 1.5 x 4, so groups of 4 layers: 13 + 3
    # + 6 + 1 = 23 groups (4 padding slots), a block 4 x 131,072 = 524,288 B: 81,920 blocks.
    # One request of 8,192 tokens (N 8,192 >= L, so a window keeps every token, + 1 block):
    # target full 3 x 512 + target sliding 13 x 513 + draft full 1 x 64 + draft sliding
    # 6 x 65 = 8,659 blocks = 4,539,809,792 B; 42,949,672,960 / that = 9.461 requests,
    # x 8,192 = 77,501 tokens.
    want = golden("gemma3_27b", speculative="draft_1b", block_size=16, max_model_len=8192,
                  tp_size=1)  # fmt: skip
    assert (want["kv_tokens"], round(want["max_concurrency"], 3)) == (77_501, 9.461)
    assert (want["num_blocks"], want["num_groups"], want["request_bytes"]) == (
        81_920, 23, 4_539_809_792,
    )  # fmt: skip
    got = engine_capacity(family("gemma3"), "gemma3_27b", GIB40, speculative="draft_1b",
                          heterogeneous_vocab=True, **AT)  # fmt: skip
    assert (got.kv_tokens, round(got.max_concurrency, 3)) == (77_501, 9.461)
    assert (got.num_blocks, got.request_bytes) == (81_920, 4_539_809_792)


def test_issue_22_qwen2_5_7b_with_the_0_5b_draft() -> None:
    # Qwen2.5-7B: 28 full layers, 4 KV heads x 128 x 2 x 2 B = 2,048 B a token, 32,768 B a
    # page; Qwen2.5-0.5B: 24 layers, 2 heads x 64: 512 B, 8,192 B a page. All full attention:
    # one group, a block 28 x 32,768 + 24 x 8,192 = 1,114,112 B; 42,949,672,960 // 1,114,112
    # = 38,550 blocks = 616,800 tokens; a request 512 blocks: 38,550 / 512 = 75.293.
    want = golden("qwen2_5_7b", speculative="draft_0_5b", block_size=16, max_model_len=8192,
                  tp_size=1)  # fmt: skip
    assert (want["kv_tokens"], round(want["max_concurrency"], 3)) == (616_800, 75.293)
    assert (want["num_blocks"], want["bytes_per_block"]) == (38_550, 1_114_112)
    got = engine_capacity(family("qwen2_5"), "qwen2_5_7b", GIB40, speculative="draft_0_5b",
                          heterogeneous_vocab=True, **AT)  # fmt: skip
    assert (got.kv_tokens, round(got.max_concurrency, 3)) == (616_800, 75.293)
    assert got.num_blocks == 38_550


@pytest.mark.parametrize(
    ("name", "model", "profile"),
    [("gemma3", "gemma3_27b", "draft_1b"), ("qwen2_5", "qwen2_5_7b", "draft_0_5b")],
)
def test_one_row_refuses_by_default_and_answers_with_the_option(
    name: str, model: str, profile: str
) -> None:
    # The row keeps the draft's layers, marked: vLLM's default refusal and its
    # use_heterogeneous_vocab answer both come from it.
    draft = engine_tables(family(name))[model].drafts[profile]
    assert draft.unmodelled == "vllm_draft_vocab" and draft.draft_model and draft.layers
    with pytest.raises(NotModelled, match="verify_equal_vocab_size_if_draft_model") as info:
        engine_capacity(family(name), model, GIB40, speculative=profile, **AT)
    assert info.value.reason == "vllm_draft_vocab"
    assert "heterogeneous_vocab=True" in str(info.value)
    # The generated module answers the same from its own rows, and refuses the same.
    module = import_generated(ROOT / "generated" / name / "sizing.py", f"_hv_{name}")
    got = module.engine_capacity(model, GIB40, speculative=profile, heterogeneous_vocab=True, **AT)
    package = engine_capacity(
        family(name), model, GIB40, speculative=profile, heterogeneous_vocab=True, **AT
    )
    assert tuple(got) == tuple(package)
    with pytest.raises(ValueError, match="verify_equal_vocab_size_if_draft_model") as err:
        module.engine_capacity(model, GIB40, speculative=profile, **AT)
    assert getattr(err.value, "reason", None) == "vllm_draft_vocab"  # the runtime's NotModelled


def test_the_option_on_an_equal_vocabulary_changes_nothing() -> None:
    # gemma3_1b drafting itself (both 262,144): vLLM checks nothing more with the option.
    fam = family("gemma3")
    plain = engine_capacity(fam, "gemma3_1b", GIB40, speculative="draft_1b", **AT)
    assert plain == engine_capacity(
        fam, "gemma3_1b", GIB40, speculative="draft_1b", heterogeneous_vocab=True, **AT
    )


@pytest.mark.parametrize("profile", ["none", "ngram4"])
def test_the_option_needs_a_draft_model_as_vllm_says(profile: str) -> None:
    # _verify_args: "use_heterogeneous_vocab only works with method='draft_model'".
    module = import_generated(ROOT / "generated" / "gemma3" / "sizing.py", "_hv_gemma3_m")
    kwargs = {"speculative": profile, "heterogeneous_vocab": True, **AT}
    with pytest.raises(ValueError, match="method='draft_model'"):
        engine_capacity(family("gemma3"), "gemma3_27b", GIB40, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="method='draft_model'"):
        module.engine_capacity("gemma3_27b", GIB40, **kwargs)


def test_a_non_bool_is_named() -> None:
    module = import_generated(ROOT / "generated" / "gemma3" / "sizing.py", "_hv_gemma3_b")
    with pytest.raises(ValueError, match="heterogeneous_vocab must be True or False, got 'yes'"):
        module.engine_capacity("gemma3_27b", GIB40, speculative="draft_1b",
                               heterogeneous_vocab="yes", **AT)  # fmt: skip
    with pytest.raises(ValueError, match="heterogeneous_vocab must be True or False, got 'yes'"):
        engine_capacity(family("gemma3"), "gemma3_27b", GIB40, speculative="draft_1b",
                        heterogeneous_vocab="yes", **AT)  # fmt: skip


def test_pard_on_qwen2_5_7b_with_the_option() -> None:
    # PARD is vLLM's draft_model with parallel_drafting; use_heterogeneous_vocab takes it too
    # (_verify_args asks method 'draft_model' only). PARD-Qwen2.5-0.5B's layers are the 0.5B's:
    # the same 1,114,112 B block and 38,550 blocks as draft_0_5b above, 616,800 tokens (its K
    # extra query slots are scheduler tokens, not blocks).
    want = golden("qwen2_5_7b", speculative="pard4", block_size=16, max_model_len=8192,
                  tp_size=1)  # fmt: skip
    assert (want["kv_tokens"], want["num_blocks"]) == (616_800, 38_550)
    got = engine_capacity(family("qwen2_5"), "qwen2_5_7b", GIB40, speculative="pard4",
                          heterogeneous_vocab=True, **AT)  # fmt: skip
    assert (got.kv_tokens, got.num_blocks) == (616_800, 38_550)
