"""Fuzzing of the public sizing and engine functions with hostile arguments.

    python bench/fuzz_api.py --minutes 10

Calls every public function of every shipped family's generated sizing module
(``cost_terms``, ``cache_costs``, ``quota_from_max_tokens``, ``max_tokens_from_quota``,
``split_budget``, ``quota_for_requests``, ``pages_per_request``, ``max_blocks_per_seq``,
``headroom``, ``engine_capacity``) and ``kvgen.engine_capacity`` over the loaded spec, each from
a call that answers, with one to three arguments replaced by a hostile value of its kind
(unhashable, Decimal, bool, NaN, infinity, negative, 0, huge, a string, None where None is not
taken, bytes, complex, an object). Every argument is fuzzed, including those the call's engine
or mode does not read. It reports:

- untyped errors (any exception but ``ValueError``: what a caller cannot catch as bad input),
- accepted (a hostile argument that answered instead of raising ``ValueError``),
- unnamed (the ``ValueError`` for one hostile argument does not name that argument),
- not plain (an answer holding something other than plain non-negative ints, as
  ``bench/fuzz_shim.py`` checks them),
- hangs (one call taking more than ``--hang-s``, default 2 s).

Deterministic for a given ``--seed``. The test suite runs a bounded slice
(``tests/acceptance/test_fuzz_api.py``).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import random
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS = (
    "cost_terms", "cache_costs", "quota_from_max_tokens", "max_tokens_from_quota",
    "split_budget", "quota_for_requests", "pages_per_request", "max_blocks_per_seq",
    "headroom", "engine_capacity",
)  # fmt: skip

try:  # numpy ints are valid integers (operator.index), numpy floats valid real numbers
    import numpy as np

    NP: Any = np
except ImportError:  # pragma: no cover - numpy is a test dependency
    NP = None


class _Object:
    """An argument of no known type, with an unhelpful repr."""

    def __repr__(self) -> str:
        return "<object>"


# Hostile values every kind of argument refuses.
COMMON: tuple[object, ...] = (
    None, [], {}, set(), (), b"1", bytearray(b"1"), "1", "abc", "", 1j, Decimal("1"),
    Decimal("NaN"), Decimal("-1"), Fraction(1, 3), float("nan"), float("inf"), -float("inf"),
    _Object(), [1], {"a": 1}, range(3), print,
)  # fmt: skip
_INTS: tuple[object, ...] = (
    0, -1, -5, True, False, 1.0, 2.5, 8.0, 10**30, 1 << 63, -(1 << 70), 10**400,
)  # fmt: skip
_NP_BAD: tuple[object, ...] = (
    (NP.float64(2.0), NP.float64("nan"), NP.int64(-1), NP.bool_(True)) if NP else ()
)
# By kind: the hostile values of an argument of that kind (``KINDS`` maps arguments to kinds).
_NUMBERS_BAD = (*COMMON[:10], 1j, float("nan"), float("inf"), -float("inf"), _Object(), [1])
HOSTILE: dict[str, tuple[object, ...]] = {
    "positive": (*COMMON, *_INTS, *_NP_BAD),
    "non-negative": tuple(v for v in (*COMMON, *_INTS, *_NP_BAD) if v != 0 or type(v) is bool),
    "optional positive": tuple(v for v in (*COMMON, *_INTS, *_NP_BAD) if v is not None),
    "flag": (*COMMON, 0, 1, 1.0, "True", "yes", Decimal(0), *_NP_BAD),
    "fraction": (
        *_NUMBERS_BAD,
        Decimal("NaN"),
        0,
        0.0,
        -0.5,
        1.5,
        2,
        True,
        False,
        "0.5",
        *((NP.float64("nan"), NP.float64(1.5)) if NP else ()),
    ),
    "ratio": (
        *_NUMBERS_BAD,
        Decimal("NaN"),
        Decimal("Infinity"),
        0,
        0.0,
        -1.0,
        True,
        False,
        "0.9",
        *((NP.float64("inf"),) if NP else ()),
    ),
    "name": (*COMMON, 0, 1, True, "nope", "NONE", " none", "none ", "exact\n", b"none", ["none"]),
    "optional name": (*(v for v in COMMON if v is not None), 0, False, "", "FP32", b"fp32"),
    "quota": (
        *COMMON,
        5,
        "target",
        {"nope": 1},
        {"target": -1},
        {"target": 1.5},
        {"target": True},
        {"target": Decimal(1)},
        {("t",): 1},
        {"target": float("nan")},
        {"target": None},
        {"target": []},
        {"target": 10**400},
        {1: 1},
    ),
    "family": (None, 1, "llama3", _Object(), {}, [], b"x"),
}
KINDS = {
    "family": "family", "model": "name", "speculative": "name", "engine": "name",
    "semantics": "name", "mamba_state_update": "name", "tier": "name",
    "mamba_cache_mode": "name", "gdn_prefill_backend": "name",
    "mamba_radix_cache_strategy": "name", "ssm_dtype": "optional name", "dtype": "optional name",
    "max_batch_size": "positive", "max_num_tokens": "positive", "max_seq_len": "positive",
    "tp_size": "positive", "pp_size": "positive", "dcp_size": "positive",
    "requests": "positive", "seq_len": "positive", "pp_rank": "non-negative",
    "max_tokens": "non-negative", "encoder_tokens": "optional positive",
    "block_size": "optional positive", "scratch_reuse": "flag", "block_reuse": "flag",
    "overlap_slack": "flag", "attention_dp": "flag", "engine_terms": "flag",
    "async_scheduling": "flag", "heterogeneous_vocab": "flag",
    "max_util_for_resume": "fraction", "swa_full_tokens_ratio": "fraction",
    "mamba_full_memory_ratio": "ratio", "quota_bytes": "quota",
}  # fmt: skip
# budget_bytes is positive for an engine (a pool of 0 bytes holds nothing) and non-negative for
# split_budget (a budget may be spent on the intercepts alone).
BUDGET_KIND = {"engine_capacity": "positive", "split_budget": "non-negative"}


def kind_of(function: str, argument: str) -> str:
    if argument == "budget_bytes":
        return BUDGET_KIND.get(function, "positive")
    return KINDS[argument]


@dataclass
class Finding:
    kind: str  # untyped | accepted | unnamed | plain | hang
    call: str
    detail: str


@dataclass
class Stats:
    calls: int = 0
    refused: int = 0
    answered: int = 0
    slowest_s: float = 0.0
    findings: list[Finding] = field(default_factory=list)

    def count(self, kind: str) -> int:
        return sum(f.kind == kind for f in self.findings)


def _shim_checks():
    """``bench/fuzz_shim.py`` (bench/ is not a package): its check of a plain answer."""
    module = sys.modules.get("kvgen_bench_fuzz_shim")
    if module is None:
        path = Path(__file__).with_name("fuzz_shim.py")
        spec = importlib.util.spec_from_file_location("kvgen_bench_fuzz_shim", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return module


# --- the surfaces ---------------------------------------------------------------------------


@dataclass
class Surface:
    """One family's public functions: its generated module, and its loaded spec for
    ``kvgen.engine_capacity`` (None: that surface is not fuzzed)."""

    name: str
    module: Any
    family: Any = None


def surfaces(families: list[str] | None = None, with_spec: bool = True) -> list[Surface]:
    from kvgen._generate.vendored import import_generated

    found = []
    for sizing in sorted((ROOT / "generated").glob("*/sizing.py")):
        name = sizing.parent.name
        if families is not None and name not in families:
            continue
        module = import_generated(sizing, "_fuzz_api_generated")
        family = None
        if with_spec:
            from kvgen._spec.loader import load_family

            family = load_family(ROOT / "schema" / "families" / f"{name}.yaml")
        found.append(Surface(name, module, family))
    return found


# --- calls that answer ----------------------------------------------------------------------


def _base(rng: random.Random, surface: Surface, function: str) -> dict[str, object]:
    """Keyword arguments of one plausible call of ``function`` (it may still be refused: the
    harness keeps only those that answer)."""
    m = surface.module
    model = rng.choice(m.MODELS)
    native = m.MAX_SEQ_LEN[model]
    profile = rng.choice(m.PROFILES[model])
    seq = rng.choice((1, min(native, 512), min(native, 4096), native))
    batch = rng.choice((1, 2, 8, 64))
    chunk = rng.choice((1, 256, 8192))
    if function == "headroom":
        return {"speculative": profile, "overlap_slack": rng.choice((False, True))}
    if function == "max_blocks_per_seq":
        return {"model": model, "speculative": profile, "max_seq_len": seq,
                "overlap_slack": rng.choice((False, True)), "dcp_size": 1}  # fmt: skip
    if function == "pages_per_request":
        return {"model": model, "speculative": profile, "max_seq_len": seq, "pp_size": 1,
                "pp_rank": 0, "block_reuse": rng.choice((False, True)),
                "overlap_slack": False}  # fmt: skip
    if function == "engine_capacity":
        engine = rng.choice(("trtllm-v2", "vllm", "sglang"))
        kw: dict[str, object] = {
            "model": model, "budget_bytes": rng.choice((40 << 30, 80 << 30, 1 << 40)),
            "engine": engine, "max_seq_len": min(seq, 8192) if seq > 1 else 1024,
            "max_num_tokens": rng.choice((2048, 8192)), "speculative": profile,
            "tp_size": rng.choice((1, 1, 2, 8)), "max_batch_size": batch,
            "block_size": None, "async_scheduling": rng.choice((True, False)),
            "mamba_cache_mode": "align", "gdn_prefill_backend": "flashinfer",
            "swa_full_tokens_ratio": 0.8, "mamba_full_memory_ratio": 0.9, "ssm_dtype": None,
            "pp_size": 1, "pp_rank": 0, "mamba_radix_cache_strategy": "extra_buffer",
            "heterogeneous_vocab": False, "dtype": None,
        }  # fmt: skip
        kw["max_seq_len"] = min(int(kw["max_seq_len"]), native)  # type: ignore[call-overload]
        return kw
    common: dict[str, object] = {
        "model": model, "speculative": profile, "max_batch_size": batch,
        "max_num_tokens": chunk, "max_seq_len": seq, "tp_size": rng.choice((1, 1, 2)),
        "pp_size": 1, "pp_rank": 0, "scratch_reuse": False, "block_reuse": False,
        "max_util_for_resume": 0.95, "overlap_slack": False,
        "semantics": rng.choice(("trtllm-v2", "exact")), "attention_dp": False,
        "mamba_state_update": "default", "dcp_size": 1,
    }  # fmt: skip
    if rng.random() < 0.3:
        common["encoder_tokens"] = None
    if function == "cost_terms":
        common["engine_terms"] = rng.choice((False, True))
    elif function == "quota_from_max_tokens":
        common["max_tokens"] = rng.choice((0, 1, seq, 4 * seq))
    elif function == "max_tokens_from_quota":
        common["quota_bytes"] = {"target": rng.choice((0, 1 << 30, 40 << 30))}
    elif function == "split_budget":
        common["budget_bytes"] = rng.choice((0, 1 << 30, 40 << 30))
        common["tier"] = rng.choice(("gpu", "host"))
    elif function == "quota_for_requests":
        del common["max_batch_size"], common["max_seq_len"], common["overlap_slack"]
        del common["attention_dp"], common["mamba_state_update"]
        common["requests"], common["seq_len"] = batch, seq
    return common


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # the signal handler signature
    raise _Timeout


def _invoke(fn: Callable, kw: dict[str, object], hang_s: float) -> tuple[str, object, float]:
    """``("answer", value)``, ``("refused", ValueError)``, ``("untyped", traceback)`` or
    ``("hang", None)``, with the seconds the call took."""
    use_alarm = hasattr(signal, "setitimer")
    if use_alarm:
        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, hang_s * 4)
    start = time.perf_counter()
    try:
        outcome: tuple[str, object] = ("answer", fn(**kw))
    except _Timeout:
        outcome = ("hang", None)
    except ValueError as exc:
        outcome = ("refused", exc)
    except Exception:
        outcome = ("untyped", traceback.format_exc(limit=6))
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    took = time.perf_counter() - start
    if outcome[0] != "hang" and took > hang_s:
        outcome = ("hang", None)
    return outcome[0], outcome[1], took


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _call_text(function: str, kw: dict[str, object]) -> str:
    return f"{function}({', '.join(f'{k}={_show(v)}' for k, v in kw.items())})"


# --- one case -------------------------------------------------------------------------------


def _targets(function: str, surface: Surface) -> Iterator[tuple[str, Callable, bool]]:
    """(label, function, takes a family first) for ``function`` on ``surface``."""
    yield f"{surface.name}.{function}", getattr(surface.module, function), False
    if function == "engine_capacity" and surface.family is not None:
        import kvgen

        yield f"kvgen.engine_capacity[{surface.name}]", kvgen.engine_capacity, True


def check_one(rng: random.Random, surface: Surface, stats: Stats, hang_s: float = 2.0) -> None:
    """One function of ``surface``: a plausible call, then that call with one to three
    arguments made hostile; what goes wrong is recorded in ``stats``."""
    plain = _shim_checks()._not_plain
    function = rng.choice(FUNCTIONS)
    kw = _base(rng, surface, function)
    for label, fn, with_family in _targets(function, surface):
        base = dict(kw, family=surface.family) if with_family else dict(kw)
        status, value, took = _invoke(fn, base, hang_s)
        stats.calls += 1
        stats.slowest_s = max(stats.slowest_s, took)
        if status in ("untyped", "hang"):
            stats.findings.append(Finding(status, _call_text(label, base), str(value)))
            continue
        answers = status == "answer"
        bad = plain(value) if answers else None
        if bad:
            stats.findings.append(Finding("plain", _call_text(label, base), f"answered {bad}"))
        count = rng.choice((1, 1, 1, 2, 3))
        names = rng.sample(sorted(base), min(count, len(base)))
        hostile = dict(base)
        for name in names:
            hostile[name] = rng.choice(HOSTILE[kind_of(function, name)])
        status, value, took = _invoke(fn, hostile, hang_s)
        stats.calls += 1
        stats.slowest_s = max(stats.slowest_s, took)
        text = _call_text(label, hostile)
        if status == "answer":
            stats.answered += 1
            changed = [n for n in names if not _same(hostile[n], base[n])]
            if changed:
                what = ", ".join(f"{n}={_show(hostile[n])}" for n in changed)
                stats.findings.append(Finding("accepted", text, f"answered with {what}"))
        elif status == "refused":
            stats.refused += 1
            message = str(value)
            # Only a single hostile argument on a call that answered must be the one named.
            if answers and len(names) == 1 and not _names(message, names[0]):
                stats.findings.append(Finding("unnamed", text, message[:300]))
        else:
            stats.findings.append(Finding(status, text, str(value)))


def _same(a: object, b: object) -> bool:
    """Whether a hostile value is the base value itself (a sample may pick the same one)."""
    return type(a) is type(b) and (
        a is b
        or (a == b if not isinstance(a, float) else (a == b or (math.isnan(a) and math.isnan(b))))
    )


def _names(message: str, argument: str) -> bool:
    """Whether a refusal names ``argument`` (a family by its type, ``kvgen.Family``)."""
    if argument == "quota_bytes":
        return "quota_bytes" in message
    if argument == "family":
        return "family" in message
    return argument in message


def fuzz(
    seconds: float,
    seed: int = 0,
    limit: int | None = None,
    hang_s: float = 2.0,
    families: list[str] | None = None,
    with_spec: bool = True,
) -> Stats:
    """Cases ``0, 1, ...`` for ``seconds`` (or up to ``limit`` cases)."""
    found = surfaces(families, with_spec)
    rng = random.Random(seed)
    stats = Stats()
    deadline = time.monotonic() + seconds
    index = 0
    while time.monotonic() < deadline and (limit is None or index < limit):
        check_one(rng, rng.choice(found), stats, hang_s)
        index += 1
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, help="stop after this many cases")
    parser.add_argument("--hang-s", type=float, default=2.0)
    parser.add_argument("--family", action="append", help="only these families (repeatable)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    stats = fuzz(args.minutes * 60, args.seed, args.limit, args.hang_s, args.family)
    took = time.monotonic() - started
    print(f"calls made:                      {stats.calls} in {took:.0f} s (seed {args.seed})")
    print(f"hostile calls refused:           {stats.refused}")
    print(f"untyped errors (not ValueError): {stats.count('untyped')}")
    print(f"hostile arguments accepted:      {stats.count('accepted')}")
    print(f"refusals not naming the argument: {stats.count('unnamed')}")
    print(f"answers not plain:               {stats.count('plain')}")
    print(f"hangs (> {args.hang_s:g} s):                  {stats.count('hang')}")
    print(f"slowest call:                    {stats.slowest_s:.3f} s")
    seen: set[tuple[str, str]] = set()
    for finding in stats.findings:
        last = finding.detail.strip().splitlines()[-1][:120] if finding.detail.strip() else ""
        key = (finding.kind, last)
        if key in seen:
            continue
        seen.add(key)
        print(f"\n[{finding.kind}] {finding.call}\n  {finding.detail.strip()[-600:]}")
    return 1 if stats.findings else 0


if __name__ == "__main__":
    sys.exit(main())
