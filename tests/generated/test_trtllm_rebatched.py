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
                    sizing._TRTLLM_SPLIT.cache_clear()
                    ours = _answer(sizing, model, max_batch_size=batch, **kw)
                    entry = sizing._TRTLLM_PLANS.get(key)
                    sizing._TRTLLM_PLANS.pop(key, None)
                    sizing._TRTLLM_SPLIT.cache_clear()
                    base = sizing._TRTLLM_BASE.copy()
                    sizing._TRTLLM_BASE.clear()  # computed afresh
                    fresh = _answer(sizing, model, max_batch_size=batch, **kw)
                    sizing._TRTLLM_BASE.update(base)
                    assert ours == fresh, (model, profile, engine, batch)
                    if entry is not None:
                        assert entry[:3] == sizing._TRTLLM_PLANS[key][:3], (model, batch)


def test_a_new_batch_size_computes_no_terms(monkeypatch):
    sizing = _sizing("gemma3")
    computed = []
    real = sizing._compute
    monkeypatch.setattr(sizing, "_compute", lambda *a: computed.append(a) or real(*a))
    kw = {"max_seq_len": 6144, "max_num_tokens": 3000}
    for engine in ("trtllm", "trtllm==early-2026"):
        sizing.engine_capacity("gemma3_12b", 33 * GIB, engine=engine, max_batch_size=3, **kw)
    before = len(computed)
    for batch in range(4, 40):
        for engine in ("trtllm", "trtllm==early-2026"):
            got = sizing.engine_capacity("gemma3_12b", 33 * GIB, engine=engine,
                                         max_batch_size=batch, **kw)  # fmt: skip
            assert got.kv_tokens > 0
    assert before <= 1 and len(computed) == before
