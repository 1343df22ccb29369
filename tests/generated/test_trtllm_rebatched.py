"""TensorRT-LLM V2's terms at a new batch size from the same options at another (issue 28).

A one-stage call of plain options whose terms have no resume watermark and no recurrent rows
moves with the batch in B * per-request bytes alone (docs/cost-model.md §4: intercept =
B * per_request + N * ctx_swa, the fixed pools B * cross bytes), so ``_trtllm_capacity``
rebuilds them from the entry of another batch (``_trtllm_rebatched``) instead of validating
and computing them again. Here every family's every model and profile gets, at several
batch sizes, the very terms, plans and answers that a fresh computation gives; and a new
batch size no longer runs ``_compute`` (that test fails at a991777, where each one does).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

GENERATED = Path(__file__).resolve().parents[2] / "generated"
FAMILIES = sorted(p.parent.name for p in GENERATED.glob("*/sizing.py"))
GIB = 1 << 30


def _sizing(family: str):
    return importlib.import_module(f"generated.{family}.sizing")


def _answer(sizing, model: str, **kw):
    try:
        return sizing.engine_capacity(model, 40 * GIB, **kw)
    except ValueError as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("family", FAMILIES)
def test_rebatched_terms_equal_fresh_ones(family):
    sizing = _sizing(family)
    for model in sizing.MODELS:
        seq = min(8192, sizing.MAX_SEQ_LEN[model])
        for profile in sizing.PROFILES[model]:
            for engine in ("trtllm", "trtllm==early-2026"):
                kw = {"engine": engine, "max_seq_len": seq, "max_num_tokens": 3000,
                      "speculative": profile}  # fmt: skip
                _answer(sizing, model, max_batch_size=5, **kw)  # the entry rebatched below
                for batch in (1, 2, 77, 4096):
                    key = (model, profile, batch, 3000, seq, 1)
                    sizing._TRTLLM_PLANS.pop(key, None)
                    sizing._ENGINE_ANSWERS.clear()
                    ours = _answer(sizing, model, max_batch_size=batch, **kw)
                    entry = sizing._TRTLLM_PLANS.get(key)
                    sizing._TRTLLM_PLANS.pop(key, None)
                    sizing._ENGINE_ANSWERS.clear()
                    base = sizing._TRTLLM_BASE.copy()
                    sizing._TRTLLM_BASE.clear()  # computed afresh
                    fresh = _answer(sizing, model, max_batch_size=batch, **kw)
                    sizing._TRTLLM_BASE.update(base)
                    assert ours == fresh, (model, profile, engine, batch)
                    if entry is not None:
                        assert entry[:3] == sizing._TRTLLM_PLANS[key][:3], (model, batch)


@pytest.mark.parametrize(
    ("family", "model", "speculative"),
    [
        ("gemma3", "gemma3_12b", "none"),
        # recurrent rows: one reserved slot (batch-free) and, under MTP, B intermediate states (§8)
        ("qwen3_next", "qwen3_next_80b_a3b", "none"),
        ("qwen3_next", "qwen3_next_80b_a3b", "mtp2"),
    ],
)
def test_a_new_batch_size_computes_no_terms(monkeypatch, family, model, speculative):
    sizing = _sizing(family)
    computed = []
    real = sizing._compute
    monkeypatch.setattr(sizing, "_compute", lambda *a: computed.append(a) or real(*a))
    kw = {"max_seq_len": 6144, "max_num_tokens": 3000, "speculative": speculative}
    for engine in ("trtllm", "trtllm==early-2026"):
        sizing.engine_capacity(model, 33 * GIB, engine=engine, max_batch_size=3, **kw)
    before = len(computed)
    for batch in range(4, 40):
        for engine in ("trtllm", "trtllm==early-2026"):
            got = sizing.engine_capacity(model, 33 * GIB, engine=engine,
                                         max_batch_size=batch, **kw)  # fmt: skip
            assert got.kv_tokens > 0
    assert before <= 1 and len(computed) == before


def test_the_fallback_split_serves_larger_batches_alone():
    # gemma3_27b at 40 GiB: 52 sliding layers hold 17 window pages a request (26 MiB slots),
    # so from about 90 requests not even k = 1 page of full attention fits and the split falls
    # back to its per-grain ratio, whatever the batch; a smaller batch asked after a larger
    # one still gets its own pool ratio. Each answer is trtllm_emit's (plan --emit's route).
    from kvgen.sizing._trtllm_pools import trtllm_emit

    sizing = _sizing("gemma3")
    kw = {"max_seq_len": 8192, "max_num_tokens": 8192, "speculative": "none", "tp_size": 1}
    sizing._TRTLLM_FRAMES.clear()
    for batch in (5000, 8, 3000, 91, 64, 7999, 1):
        got = sizing.engine_capacity("gemma3_27b", 40 * GIB, engine="trtllm",
                                     max_batch_size=batch, **kw)  # fmt: skip
        emit = trtllm_emit(sizing, "gemma3_27b", 40 * GIB, revision="38198e34",
                           max_batch_size=batch, **kw)  # fmt: skip
        assert got.kv_tokens == emit.tokens, batch
    frame = sizing._TRTLLM_FRAMES["38198e34", "gemma3_27b", "none", 8192, 1]
    assert frame.target.slots[40 * GIB, -1, -1][-1] <= 3000  # the least batch with no ratio
