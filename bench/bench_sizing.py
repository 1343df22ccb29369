"""Benchmark the generated sizing modules against the generic cost model.

Prints, per shipped family: import time of ``generated/<family>/sizing.py`` (fresh
interpreter, bytecode cached, median of runs; interpreter start excluded), and microseconds per
``cache_costs`` call -- warm (repeated arguments), never-seen (every cache of the module cleared
before each call, the clearing included) at tp 1 / pp 1 and at tp 8 / pp 2 (the layers of a
split seen before stay precomputed; "1st tp8pp2" sums them again), and with a new
batch size -- plus ``max_tokens_from_quota`` warm, and warm under "exact"
``quota_from_max_tokens``, ``max_tokens_from_quota`` and ``quota_for_requests`` (target < 5 us),
next to the layer-by-layer reference (``tests/reference/costmodel.py``) computing the same
numbers. It also times importing every family's module in one process, with bytecode cached
and compiling each one (an empty cache, as under PYTHONDONTWRITEBYTECODE=1). Times are CPU
time of the process (``time.process_time``): on a shared machine wall-clock time also counts
other processes' time slices. Each figure is the best of ``--rounds`` passes over all families.

Targets (issue 19, "one house"): importing every family's module in one process < 15 ms with
bytecode cached, a warm call < 1 us and a never-seen call < 3 us at every tp / pp in the grid,
on every family. (Issue 12's < 2 ms per module and < 0.8 us warm were set when each module
carried its own copy of the interpreter; one module's import now includes the shared runtime's.)

``--kinds N`` instead times ``kvgen generate`` of a lint-clean spec with N distinct sliding
kinds in one pattern (issue 9, item 6: 2,048 kinds took 74 s and wrote 98 MB).

    python bench/bench_sizing.py [--family NAME ...] [--calls N] [--kinds N]
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kvgen._loader import load_family  # noqa: E402

from tests.reference import costmodel  # noqa: E402

IMPORT_PROBE = (
    "import time, importlib; t = time.process_time(); "
    "importlib.import_module('generated.{family}.sizing'); "
    "print((time.process_time() - t) * 1e3)"
)


def import_ms(family: str, runs: int = 7) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cmd = [sys.executable, "-c", IMPORT_PROBE.format(family=family)]
    subprocess.run(cmd, cwd=REPO, env=env, check=True, capture_output=True)  # write .pyc
    times = [
        float(
            subprocess.run(
                cmd, cwd=REPO, env=env, check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(runs)
    ]
    return statistics.median(times)


ALL_PROBE = (
    "import time, importlib; t = time.process_time()\n"
    "for family in {families!r}: importlib.import_module(f'generated.{{family}}.sizing')\n"
    "print((time.process_time() - t) * 1e3)"
)


def import_all_ms(families: list[str], bytecode: bool, runs: int = 5) -> float:
    """Every family's module imported in one fresh process (the runtime once), in ms: with
    bytecode cached, or compiled on every import (PYTHONDONTWRITEBYTECODE=1, no cache)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cmd = [sys.executable, "-c", ALL_PROBE.format(families=families)]
    if bytecode:
        subprocess.run(cmd, cwd=REPO, env=env, check=True, capture_output=True)  # write .pyc
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        cmd.insert(1, "-X")
        cmd.insert(2, f"pycache_prefix={tempfile.mkdtemp()}")  # an empty cache: compile all
    times = [
        float(
            subprocess.run(
                cmd, cwd=REPO, env=env, check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(runs)
    ]
    return statistics.median(times)


def per_call_us(fn, calls: int) -> float:
    return min(timeit.repeat(fn, number=calls, repeat=7, timer=time.process_time)) / calls * 1e6


def bench_family(family: str, calls: int) -> dict[str, float]:
    sizing = importlib.import_module(f"generated.{family}.sizing")
    spec = load_family(REPO / "schema" / "families" / f"{family}.yaml")
    model = sizing.MODELS[-1]
    profile = sizing.PROFILES[model][-1]
    native = spec.model(model).max_seq_len
    kw = {
        "speculative": profile,
        "max_batch_size": 8,
        "max_num_tokens": 8192,
        "max_seq_len": min(native, 32768),
    }
    params = costmodel.RuntimeParams(**{k: v for k, v in kw.items() if k != "speculative"})
    batches = iter(range(1, 1 << 30))

    def varying():
        kw2 = {**kw, "max_batch_size": next(batches) % 512 + 1}
        sizing.cache_costs(model, **kw2)

    # Every cache of the module: the answers cache (a dict) and every lru cache (no separate
    # one for calls at defaults).
    clears = [value.cache_clear for value in vars(sizing).values() if hasattr(value, "cache_clear")]
    clears.append(vars(sizing)["_ANSWERS"].clear)

    def cold(kwargs):
        # A never-seen configuration: every cache of the module cleared (clearing included);
        # the layers of a (model, profile, pp, rank, tp) seen before stay precomputed.
        for clear in clears:
            clear()
        sizing.cache_costs(model, **kwargs)

    def first_split(kwargs):
        # The first call at that tp / pp: the rank's layers summed again too (which kinds each
        # manager holds, read from the tables on a (model, profile)'s first call, stay).
        vars(sizing)["_RANKS"].clear()
        cold(kwargs)

    def requests(model: str, profile: str, seq_len: int) -> None:
        sizing.quota_for_requests(
            model, requests=8, seq_len=seq_len, speculative=profile, max_num_tokens=8192
        )

    layers = spec.model(model).layers.count
    split = {"tp_size": 8, "pp_size": 2, "pp_rank": 1} if layers >= 2 else {"tp_size": 8}
    # Keyword dicts built once, as a caller's keywords are: the call is timed, not the merge.
    at_split = {**kw, **split}
    return {
        "import_ms": import_ms(family),
        "warm_us": per_call_us(lambda: sizing.cache_costs(model, **kw), calls),
        "cold_us": per_call_us(lambda: cold(kw), max(calls // 10, 100)),
        "cold_split_us": per_call_us(lambda: cold(at_split), max(calls // 10, 100)),
        "first_split_us": per_call_us(lambda: first_split(at_split), max(calls // 10, 100)),
        "varying_us": per_call_us(varying, calls),
        "inverse_us": per_call_us(
            lambda: sizing.max_tokens_from_quota(model, {"target": 40 << 30}, **kw), calls
        ),
        # "exact" (page-exact, issue 10): the quota of T, its inverse, the serving quota.
        "exact_quota_us": per_call_us(
            lambda: sizing.quota_from_max_tokens(model, 100_000, semantics="exact", **kw), calls
        ),
        "exact_inverse_us": per_call_us(
            lambda: sizing.max_tokens_from_quota(
                model, {"target": 40 << 30}, semantics="exact", **kw
            ),
            calls,
        ),
        "requests_us": per_call_us(
            lambda: sizing.quota_for_requests(
                model,
                requests=8,
                seq_len=kw["max_seq_len"],
                speculative=profile,
                max_num_tokens=8192,
            ),
            calls,
        ),
        "generic_us": per_call_us(
            lambda: costmodel.cache_costs(spec, model, profile, params), max(calls // 20, 50)
        ),
    }


def bench_kinds(kinds: int) -> int:
    """Time ``kvgen generate`` of a spec with ``kinds`` distinct sliding kinds."""
    from tests.sizing_support import many_kinds_spec

    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "many.yaml"
        spec.write_text(many_kinds_spec(kinds))
        cmd = [sys.executable, "-m", "kvgen", "-q", "generate", str(spec), "--out", "out"]
        start = time.perf_counter()
        subprocess.run(cmd, cwd=tmp, check=True)
        seconds = time.perf_counter() - start
        sizes = {p.name: p.stat().st_size for p in (Path(tmp) / "out" / "many").glob("*.py")}
    written = ", ".join(f"{name} {size / 1e6:.2f} MB" for name, size in sorted(sizes.items()))
    print(f"kvgen generate, {kinds} sliding kinds in one pattern: {seconds:.1f} s wall; {written}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", action="append", help="limit to these families")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument(
        "--rounds", type=int, default=3, help="passes over all families; each figure is its best"
    )
    parser.add_argument("--kinds", type=int, help="time generate with this many kinds instead")
    args = parser.parse_args()
    if args.kinds:
        return bench_kinds(args.kinds)
    families = args.family or sorted(
        p.parent.name for p in (REPO / "generated").glob("*/sizing.py")
    )
    columns = [
        ("import ms", "import_ms", 10, 2),
        ("warm us", "warm_us", 9, 2),
        ("new us", "cold_us", 8, 2),
        ("new tp8pp2", "cold_split_us", 11, 2),
        ("1st tp8pp2", "first_split_us", 11, 2),
        ("vary-B us", "varying_us", 10, 2),
        ("inverse us", "inverse_us", 11, 2),
        ("exact q us", "exact_quota_us", 11, 2),
        ("exact inv", "exact_inverse_us", 10, 2),
        ("requests", "requests_us", 9, 2),
        ("generic us", "generic_us", 11, 1),
    ]
    header = f"{'family':<14}" + "".join(f"{title:>{width}}" for title, _, width, _ in columns)
    print(header)
    print("-" * len(header))
    # Rounds interleave the families in time: on a shared machine a burst of contention then
    # slows one pass of a family rather than every measurement of it.
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.rounds):
        for family in families:
            r = bench_family(family, args.calls)
            best[family] = {k: min(v, best.get(family, r)[k]) for k, v in r.items()}
    worst = {key: 0.0 for _, key, _, _ in columns}
    for family in families:
        r = best[family]
        for key in worst:
            worst[key] = max(worst[key], r[key])
        cells = "".join(f"{r[key]:>{width}.{digits}f}" for _, key, width, digits in columns)
        print(f"{family:<14}{cells}")
    print()
    print(
        f"worst import: {worst['import_ms']:.2f} ms "
        "(one module in a fresh process, the runtime's import included)"
    )
    print(
        f"all {len(families)} in one process: {import_all_ms(families, True):.1f} ms with "
        f"bytecode cached (target < 15 ms), {import_all_ms(families, False):.1f} ms compiling "
        "every module (PYTHONDONTWRITEBYTECODE=1, no cache)"
    )
    print(
        f"worst cache_costs: {worst['warm_us']:.2f} us warm (target < 1 us), "
        f"{worst['cold_us']:.2f} us never-seen (target < 3 us; {worst['cold_split_us']:.2f} us "
        f"at tp 8 / pp 2, {worst['first_split_us']:.2f} us for the first call at that split), "
        f"{worst['varying_us']:.2f} us with a new batch size; "
        f"max_tokens_from_quota {worst['inverse_us']:.2f} us warm"
    )
    print(
        f"worst exact (warm, target < 5 us): quota_from_max_tokens {worst['exact_quota_us']:.2f} "
        f"us, max_tokens_from_quota {worst['exact_inverse_us']:.2f} us, quota_for_requests "
        f"{worst['requests_us']:.2f} us"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
