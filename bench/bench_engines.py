"""Time ``kvgen.engines.engine_capacity`` per call (warm: the static plan is cached).

Usage: python bench/bench_engines.py [--calls N]

Prints microseconds per call for each engine on a few shipped models (target: < 5 us warm),
and the cold cost of the first call (building the plan). Warm figures are the best of 5
repeats (the least disturbed by other load on the machine); max_seq_len cycles through
four lengths so no call repeats the previous one's arguments.
"""

from __future__ import annotations

import argparse
import itertools
import time
import timeit
from pathlib import Path

from kvgen.engines import _CACHE, ENGINES, engine_capacity
from kvgen.loader import load_family

ROOT = Path(__file__).resolve().parents[1]
CASES = (("gemma3", "gemma3_27b"), ("gpt_oss", "gpt_oss_20b"), ("qwen3_next", "qwen3_next_80b_a3b"))
BUDGET = 40 << 30


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args(argv)
    print(f"{'engine':10} {'model':22} {'cold us':>9} {'warm us/call':>13}")
    for family_name, model in CASES:
        family = load_family(ROOT / "schema" / "families" / f"{family_name}.yaml")
        for engine in ENGINES:
            kwargs = {"engine": engine, "max_seq_len": 8192, "max_num_tokens": 8192}
            _CACHE.clear()
            start = time.perf_counter()
            engine_capacity(family, model, BUDGET, block_size=16, **kwargs)
            cold = (time.perf_counter() - start) * 1e6
            del kwargs["max_seq_len"]
            lengths = itertools.cycle((4096, 8192, 16384, 32768))

            def call(family=family, model=model, kwargs=kwargs, lengths=lengths) -> None:
                engine_capacity(
                    family, model, BUDGET, block_size=16, max_seq_len=next(lengths), **kwargs
                )

            per_repeat = args.calls // 5
            best = min(timeit.repeat(call, number=per_repeat, repeat=5))
            warm = best * 1e6 / per_repeat
            print(f"{engine:10} {model:22} {cold:9.1f} {warm:13.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
