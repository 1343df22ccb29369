"""Benchmark the generated sizing modules against the generic cost model.

Prints, per shipped family: import time of ``generated/<family>/sizing.py`` (fresh
interpreter, bytecode cached, median of runs; interpreter start excluded), and microseconds per
call of ``cache_costs`` and ``max_tokens_from_quota`` -- warm (repeated arguments), varying the
batch size (shape cached, arithmetic per call) and cold (every cache cleared) -- next to the
generic ``kvgen.costmodel`` computing the same numbers, and the ratio.

Targets (issue 12): import < 2 ms, a call with a never-seen configuration (cold) < 3 us,
a warm call < 0.8 us, on every family; the generic model is there for scale.

    python bench/bench_sizing.py [--family NAME ...] [--calls N]
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import subprocess
import sys
import timeit
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kvgen import costmodel  # noqa: E402
from kvgen.loader import load_family  # noqa: E402

IMPORT_PROBE = (
    "import time, importlib; t = time.perf_counter(); "
    "importlib.import_module('generated.{family}.sizing'); "
    "print((time.perf_counter() - t) * 1e3)"
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


def per_call_us(fn, calls: int) -> float:
    return min(timeit.repeat(fn, number=calls, repeat=5)) / calls * 1e6


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

    def cold():
        # A never-seen configuration: every cache of the module cleared (clearing included).
        sizing._terms.cache_clear()
        sizing._costs.cache_clear()
        sizing.cache_costs(model, **kw)

    return {
        "import_ms": import_ms(family),
        "warm_us": per_call_us(lambda: sizing.cache_costs(model, **kw), calls),
        "varying_us": per_call_us(varying, calls),
        "cold_us": per_call_us(cold, max(calls // 10, 100)),
        "inverse_us": per_call_us(
            lambda: sizing.max_tokens_from_quota(model, {"target": 40 << 30}, **kw), calls
        ),
        "generic_us": per_call_us(
            lambda: costmodel.cache_costs(spec, model, profile, params), max(calls // 20, 50)
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", action="append", help="limit to these families")
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    families = args.family or sorted(
        p.parent.name for p in (REPO / "generated").glob("*/sizing.py")
    )
    header = (
        f"{'family':<14}{'import ms':>10}{'warm us':>9}{'vary-B us':>10}{'cold us':>9}"
        f"{'inverse us':>11}{'generic us':>11}{'x vary-B':>9}{'x cold':>8}"
    )
    print(header)
    print("-" * len(header))
    worst = {"import_ms": 0.0, "warm_us": 0.0, "varying_us": 0.0, "cold_us": 0.0, "inverse_us": 0.0}
    ratios = []
    for family in families:
        r = bench_family(family, args.calls)
        for key in worst:
            worst[key] = max(worst[key], r[key])
        ratios.append((r["generic_us"] / r["varying_us"], r["generic_us"] / r["cold_us"]))
        print(
            f"{family:<14}{r['import_ms']:>10.2f}{r['warm_us']:>9.2f}{r['varying_us']:>10.2f}"
            f"{r['cold_us']:>9.2f}{r['inverse_us']:>11.2f}{r['generic_us']:>11.1f}"
            f"{r['generic_us'] / r['varying_us']:>9.0f}{r['generic_us'] / r['cold_us']:>8.1f}"
        )
    print()
    print(f"worst import: {worst['import_ms']:.2f} ms (target < 2 ms)")
    print(
        f"worst cache_costs: {worst['warm_us']:.2f} us warm (target < 0.8 us), "
        f"{worst['cold_us']:.2f} us never-seen (target < 3 us), {worst['varying_us']:.2f} us "
        f"with a new batch size; max_tokens_from_quota {worst['inverse_us']:.2f} us warm"
    )
    print(
        f"least speed-up over the generic model: {min(r[0] for r in ratios):.0f}x per call "
        f"with a new batch size (target >= 10x); {min(r[1] for r in ratios):.1f}x with every "
        "cache cleared before each call"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
