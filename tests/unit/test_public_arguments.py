"""Every public sizing and engine function refuses every hostile argument with a ValueError
naming it (issue 29, C6), whether or not the call reads that argument.

The functions: the generated sizing modules' public functions (docs/python-api.md) and
``kvgen.engine_capacity`` over a loaded spec (docs/api.md, "The engine policies"). Each is
first called with arguments that answer (which also fills its caches: a hostile value equal to
a cached one, ``True`` for 1, ``16.0`` for 16, must be refused all the same), then with one
argument replaced by each hostile value of its kind. ``bench/fuzz_api.py`` runs the same
checks on random calls of every shipped family for as long as it is given.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from types import ModuleType

import kvgen
import pytest
from kvgen._generate.vendored import import_generated
from kvgen._spec.loader import load_family

ROOT = Path(__file__).resolve().parents[2]
GIB40 = 40 << 30


class Opaque:
    def __repr__(self) -> str:
        return "<opaque>"


# What the issue names: unhashable, Decimal, bool, NaN, negative, 0, str, None (where None is
# not taken), and their neighbours (bytes, bytearray, complex, infinity, huge ints).
_ANY = (
    [], {}, set(), Opaque(), b"1", bytearray(b"1"), "1", "abc", 1j, float("nan"), float("inf"),
    Decimal("NaN"),
)  # fmt: skip
_INT = (None, True, False, 0, -1, -5, 1.0, 2.5, Decimal(8), Fraction(8), 1 << 63, 10**30)
HOSTILE = {
    "positive": _ANY + _INT,
    "non-negative": _ANY + tuple(v for v in _INT if v != 0 or type(v) is bool),
    "optional positive": _ANY + _INT[1:],
    "flag": (*_ANY, None, 0, 1, 1.0, "True", Decimal(1)),
    "fraction": (
        *_ANY[:9],
        float("nan"),
        float("inf"),
        None,
        True,
        False,
        0,
        0.0,
        -0.5,
        1.5,
        "0.5",
        Decimal("NaN"),
    ),
    "ratio": (
        *_ANY[:9],
        float("nan"),
        float("inf"),
        None,
        True,
        False,
        0,
        -1.0,
        "0.9",
        Decimal("Infinity"),
    ),
    "name": (*_ANY, None, 0, True, "nope", "NONE", " none", b"none", ["none"]),
    "optional name": (*_ANY, 0, False, "", "FP32"),
}
KINDS = {
    "model": "name", "speculative": "name", "engine": "name", "semantics": "name",
    "mamba_state_update": "name", "tier": "name", "mamba_cache_mode": "name",
    "gdn_prefill_backend": "name", "mamba_radix_cache_strategy": "name",
    "ssm_dtype": "optional name", "max_batch_size": "positive", "max_num_tokens": "positive",
    "max_seq_len": "positive", "tp_size": "positive", "pp_size": "positive",
    "dcp_size": "positive", "requests": "positive", "seq_len": "positive",
    "pp_rank": "non-negative", "max_tokens": "non-negative", "block_size": "optional positive",
    "encoder_tokens": "optional positive", "scratch_reuse": "flag", "block_reuse": "flag",
    "overlap_slack": "flag", "attention_dp": "flag", "engine_terms": "flag",
    "async_scheduling": "flag", "heterogeneous_vocab": "flag",
    "max_util_for_resume": "fraction", "swa_full_tokens_ratio": "fraction",
    "mamba_full_memory_ratio": "ratio",
}  # fmt: skip

SIZING = {"max_batch_size": 8, "max_num_tokens": 2048, "max_seq_len": 4096}
OPTIONS = {
    **SIZING, "speculative": "none", "tp_size": 1, "pp_size": 1, "pp_rank": 0,
    "scratch_reuse": False, "block_reuse": False, "max_util_for_resume": 0.95,
    "overlap_slack": False, "semantics": "trtllm-v2", "attention_dp": False,
    "mamba_state_update": "default", "dcp_size": 1,
}  # fmt: skip
ENGINE = {
    "max_seq_len": 4096, "max_num_tokens": 2048, "block_size": None, "speculative": "none",
    "tp_size": 1, "max_batch_size": 8, "async_scheduling": True, "mamba_cache_mode": "align",
    "gdn_prefill_backend": "flashinfer", "swa_full_tokens_ratio": 0.8,
    "mamba_full_memory_ratio": 0.9, "ssm_dtype": None, "pp_size": 1, "pp_rank": 0,
    "mamba_radix_cache_strategy": "extra_buffer", "heterogeneous_vocab": False,
}  # fmt: skip


def calls(model: str, engines: tuple[str, ...]) -> list[tuple[str, dict[str, object]]]:
    """(function, keyword arguments) of one answering call of every public function; every
    keyword given, so that each is fuzzed."""
    return [
        ("cost_terms", {"model": model, **OPTIONS, "engine_terms": False}),
        ("cache_costs", {"model": model, **OPTIONS}),
        ("quota_from_max_tokens", {"model": model, "max_tokens": 65536, **OPTIONS}),
        ("max_tokens_from_quota", {"model": model, "quota_bytes": {"target": 1 << 33}, **OPTIONS}),
        ("split_budget", {"model": model, "budget_bytes": 1 << 34, "tier": "gpu", **OPTIONS}),
        (
            "quota_for_requests",
            {
                "model": model,
                "requests": 4,
                "seq_len": 4096,
                "speculative": "none",
                "max_num_tokens": 2048,
                "tp_size": 1,
                "pp_size": 1,
                "pp_rank": 0,
                "scratch_reuse": False,
                "block_reuse": False,
                "max_util_for_resume": 0.95,
                "semantics": "exact",
                "dcp_size": 1,
            },
        ),
        (
            "pages_per_request",
            {
                "model": model,
                "speculative": "none",
                "max_seq_len": 4096,
                "pp_size": 1,
                "pp_rank": 0,
                "block_reuse": False,
                "overlap_slack": False,
            },
        ),
        (
            "max_blocks_per_seq",
            {
                "model": model,
                "speculative": "none",
                "max_seq_len": 4096,
                "overlap_slack": False,
                "dcp_size": 1,
            },
        ),
        ("headroom", {"speculative": "none", "overlap_slack": False}),
        *[
            ("engine_capacity", {"model": model, "budget_bytes": GIB40, "engine": engine, **ENGINE})
            for engine in engines
        ],
    ]


def kind_of(function: str, argument: str) -> str:
    if argument == "budget_bytes":
        return "non-negative" if function == "split_budget" else "positive"
    return KINDS[argument]


def refusals(fn, function: str, kwargs: dict[str, object]) -> list[str]:
    """What goes wrong when each argument of an answering call is made hostile in turn."""
    fn(**kwargs)  # answers (and warms every cache the hostile calls below could hit)
    wrong = []
    for argument in kwargs:
        if argument in ("quota_bytes", "family"):
            continue  # their own tests below
        for value in HOSTILE[kind_of(function, argument)]:
            fn(**kwargs)  # the valid call once more: the hostile one comes after a warm call
            label = f"{function}({argument}={value!r}, engine={kwargs.get('engine')})"
            try:
                fn(**{**kwargs, argument: value})
            except ValueError as exc:
                if argument not in str(exc):
                    wrong.append(f"{label}: does not name it: {exc}")
            except Exception as exc:  # what the test is looking for
                wrong.append(f"{label}: {type(exc).__name__}: {exc}")
            else:
                wrong.append(f"{label}: answered")
    return wrong


def generated(family: str) -> ModuleType:
    return import_generated(ROOT / "generated" / family / "sizing.py", f"_c6_{family}")


# A plain model, a hybrid (reads SGLang's Mamba ratio and strategy, vLLM's modes), sliding
# windows with a separate draft, and cross-attention (encoder_tokens; only SGLang answers it).
ENGINES = ("trtllm-v2", "vllm", "sglang")
CASES = [
    ("llama3", "llama3_1_8b", ENGINES),
    ("qwen3_next", "qwen3_next_80b_a3b", ENGINES),
    ("gemma3", "gemma3_27b", ENGINES),
    ("llama3_2_vision", "llama3_2_11b_vision", ("sglang",)),
]


@pytest.mark.parametrize(("family", "model", "engines"), CASES)
def test_every_generated_function_names_every_hostile_argument(
    family: str, model: str, engines: tuple[str, ...]
) -> None:
    module = generated(family)
    wrong = []
    for function, kwargs in calls(model, engines):
        wrong += refusals(getattr(module, function), function, kwargs)
    if family == "llama3_2_vision":
        kwargs = {"model": model, **OPTIONS, "encoder_tokens": 1601}
        wrong += refusals(module.cache_costs, "cache_costs", kwargs)
    assert wrong == []


@pytest.mark.parametrize(("family", "model", "engines"), CASES[:2])
def test_kvgen_engine_capacity_names_every_hostile_argument(
    family: str, model: str, engines: tuple[str, ...]
) -> None:
    spec = load_family(ROOT / "schema" / "families" / f"{family}.yaml")
    wrong = []
    for engine in engines:
        kwargs = {"family": spec, "model": model, "budget_bytes": GIB40, "engine": engine,
                  **ENGINE}  # fmt: skip
        wrong += refusals(kvgen.engine_capacity, "engine_capacity", kwargs)
        for value in (None, 1, "llama3", Opaque(), {}, b"x"):
            try:
                kvgen.engine_capacity(**{**kwargs, "family": value})
            except ValueError as exc:
                if "family" not in str(exc):
                    wrong.append(f"family={value!r} ({engine}): does not name it: {exc}")
            except Exception as exc:  # what the test is looking for
                wrong.append(f"family={value!r} ({engine}): {type(exc).__name__}: {exc}")
            else:
                wrong.append(f"family={value!r} ({engine}): answered")
    assert wrong == []


@pytest.mark.parametrize(
    "quota",
    [None, [], 5, "target", {}, {"nope": 1}, {"target": -1}, {"target": 1.5}, {"target": True},
     {"target": Decimal(1)}, {("t",): 1}, {"target": float("nan")}, {"target": None},
     {"target": []}, {1: 1}, {"target": 1 << 63}],
)  # fmt: skip
def test_max_tokens_from_quota_names_a_hostile_quota(quota: object) -> None:
    module = generated("gemma3")
    with pytest.raises(ValueError, match="quota_bytes"):
        module.max_tokens_from_quota("gemma3_27b", quota, **SIZING)


# --- the reproducers, one by one -------------------------------------------------


@pytest.mark.parametrize("value", [[8], {}, Decimal(8), -5, 0, "abc", None, float("nan")])
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_an_unused_max_batch_size_is_still_checked(engine: str, value: object) -> None:
    # vLLM never reads max_batch_size, and SGLang reads it only on a hybrid under EAGLE/MTP or
    # with the radix cache disabled: on c2a37ec these answered (or, unhashable, TypeError).
    module = generated("llama3")
    with pytest.raises(ValueError, match="max_batch_size must be a positive int"):
        module.engine_capacity("llama3_1_8b", GIB40, engine=engine, max_seq_len=8192,
                               max_num_tokens=8192, max_batch_size=value)  # fmt: skip


def test_sglang_takes_a_decimal_ratio_as_the_number_it_is() -> None:
    # On c2a37ec: TypeError (float * Decimal) in SGLang's Mamba share. A real number is taken
    # as a float: Decimal("0.9") answers what 0.9 does.
    module = generated("qwen3_next")
    kw = {"engine": "sglang", "max_seq_len": 8192, "max_num_tokens": 8192}
    plain = module.engine_capacity("qwen3_next_80b_a3b", GIB40, **kw)
    assert plain == module.engine_capacity(
        "qwen3_next_80b_a3b", GIB40, mamba_full_memory_ratio=Decimal("0.9"), **kw
    )


@pytest.mark.parametrize(
    ("argument", "cached", "equal"),
    [("tp_size", 1, True), ("tp_size", 2, Decimal(2)), ("block_size", 16, 16.0),
     ("block_size", 16, Fraction(16)), ("heterogeneous_vocab", False, 0),
     ("pp_size", 1, True), ("pp_size", 1, 1.0)],
)  # fmt: skip
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_value_equal_to_a_cached_one_is_still_refused(
    engine: str, argument: str, cached: object, equal: object
) -> None:
    # The plan caches are dicts: True == 1 and 16.0 == 16 hash alike, so a lookup alone let
    # them through on c2a37ec once the valid value was cached.
    module = generated("llama3")
    kw = {"engine": engine, "max_seq_len": 8192, "max_num_tokens": 8192}
    module.engine_capacity("llama3_1_8b", GIB40, **kw, **{argument: cached})
    with pytest.raises(ValueError, match=argument):
        module.engine_capacity("llama3_1_8b", GIB40, **kw, **{argument: equal})


def test_numpy_values_are_numbers() -> None:
    numpy = pytest.importorskip("numpy")
    module = generated("qwen3_next")
    kw = {"engine": "sglang", "max_seq_len": 8192, "max_num_tokens": 8192}
    plain = module.engine_capacity("qwen3_next_80b_a3b", GIB40, **kw)
    assert plain == module.engine_capacity(
        "qwen3_next_80b_a3b", numpy.int64(GIB40), tp_size=numpy.int64(1),
        max_batch_size=numpy.int32(8), mamba_full_memory_ratio=numpy.float64(0.9),
        swa_full_tokens_ratio=numpy.float64(0.8), **kw,
    )  # fmt: skip
