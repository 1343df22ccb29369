"""engine_capacity's front (its argument checks, refusals and the answers of plain calls) is
written once, in the sizing runtime (``kvgen.sizing.engines_core.engine_capacity``): the
generated modules bind it over their tables, and ``kvgen.engine_capacity`` runs the same code
over hooks that answer from a loaded spec (issue 28: "a fact defined once"; the review of
4e5873c found the check written twice, in ``kvgen._engines.capacity`` and the runtime)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from kvgen._engines import capacity
from kvgen._engines.capacity import engine_capacity
from kvgen._generate.vendored import import_generated
from kvgen._spec.loader import load_family
from kvgen.sizing import engines_core

ROOT = Path(__file__).resolve().parents[2]
GIB = 1 << 30
KW = {"max_seq_len": 8192, "max_num_tokens": 8192}


def _spec(name: str):  # type: ignore[no-untyped-def]
    return load_family(ROOT / "schema" / "families" / f"{name}.yaml")


def test_the_spec_path_runs_the_runtime_front_itself() -> None:
    spec = _spec("llama3")
    engine_capacity(spec, "llama3_1_8b", 40 * GIB, engine="vllm", **KW)
    family, front = capacity._FRONTS[id(spec)]
    assert family is spec
    assert front.__code__ is engines_core.engine_capacity.__code__  # capacity_front
    # No second copy of the checks: the module holds neither the argument check nor the
    # refusal call, and its engine_capacity is one call of the front.
    source = inspect.getsource(capacity)
    assert "_engine_arguments" not in source
    assert ".refusal(" not in source


def test_the_spec_paths_defaults_are_the_runtimes_objects() -> None:
    # The front takes a call whose modes are its defaults by identity (``is``) as plain: the
    # spec path forwards its own defaults, so they must be the very same objects, or every
    # call would take the checked (slow) path.
    ours = inspect.signature(engine_capacity).parameters
    theirs = inspect.signature(engines_core.engine_capacity).parameters
    for name, parameter in theirs.items():
        if parameter.default is not inspect.Parameter.empty:
            assert ours[name].default is parameter.default, name


def test_a_plain_call_is_answered_once_and_looked_up_after() -> None:
    spec = _spec("gemma3")
    for engine in ("vllm", "sglang", "trtllm", "vllm==0.33.0", "trtllm==early-2026"):
        first = engine_capacity(spec, "gemma3_4b", 12 * GIB, engine=engine, **KW)
        again = engine_capacity(spec, "gemma3_4b", 12 * GIB, engine=engine, **KW)
        assert again is first, engine  # the remembered answer, not a new one
        # Another budget is a new answer; a non-plain spelling of the same call (a numpy-like
        # int subclass is not plain) is checked and computed, and equal.
        assert engine_capacity(spec, "gemma3_4b", 13 * GIB, engine=engine, **KW) != first

        class Int(int):
            pass

        other = engine_capacity(spec, "gemma3_4b", Int(12 * GIB), engine=engine, **KW)
        assert other == first and other is not first


def test_errors_from_the_spec_are_the_runtimes_words() -> None:
    spec = _spec("llama3")
    module = import_generated(ROOT / "generated" / "llama3" / "sizing.py", "_front_llama3")
    bad = (
        {"engine": "vllm", "tp_size": 0},
        {"engine": "vllm", "max_batch_size": 9000},  # vLLM: max_num_seqs above the budget
        {"engine": "sglang", "mamba_cache_mode": "x"},
        {"engine": "nope"},
        {"engine": "vllm==0.34.0", "heterogeneous_vocab": True},
        {"engine": "sglang", "pp_size": 2},
    )
    for kw in bad:
        with pytest.raises(ValueError) as from_spec:
            engine_capacity(spec, "llama3_1_8b", 40 * GIB, **{**KW, **kw})
        with pytest.raises(ValueError) as generated:
            module.engine_capacity("llama3_1_8b", 40 * GIB, **{**KW, **kw})
        assert str(from_spec.value) == str(generated.value), kw
        assert type(from_spec.value).__name__ == type(generated.value).__name__, kw


def test_a_family_that_is_no_spec_is_named() -> None:
    with pytest.raises(ValueError, match=r"family must be a kvgen\.Family"):
        engine_capacity("llama3", "llama3_1_8b", 40 * GIB, engine="vllm", **KW)  # type: ignore[arg-type]
