"""A/B of a warm ``engine_capacity`` call: the generated modules of another commit against
this tree's, interleaved in one process so that the machine's load hits both alike.

    git archive c2a37ec generated | tar -x -C /tmp/base
    python bench/bench_engines_ab.py --base /tmp/base/generated [--repeats 400]

For the four models of ``bench/bench_engines.py --quick`` and each engine, the best of
``--repeats`` repeats of 20 calls (max_seq_len cycling as there), old and new alternately
twice; prints microseconds per call and the difference.
"""

from __future__ import annotations

import argparse
import itertools
import timeit
from pathlib import Path

from kvgen._generate.vendored import import_generated

ROOT = Path(__file__).resolve().parents[1]
CASES = (
    ("llama3", "llama3_1_8b"),
    ("gemma3", "gemma3_27b"),
    ("gpt_oss", "gpt_oss_20b"),
    ("qwen3_next", "qwen3_next_80b_a3b"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the other commit's generated/")
    parser.add_argument("--repeats", type=int, default=400)
    args = parser.parse_args(argv)
    for family, model in CASES:
        old = import_generated(args.base / family / "sizing.py", "_ab_old")
        new = import_generated(ROOT / "generated" / family / "sizing.py", "_ab_new")
        native = new.MAX_SEQ_LEN[model]
        lengths = [n for n in (4096, 8192, 16384, 32768) if n <= native]
        for engine in ("trtllm-v2", "vllm", "sglang"):
            size = None if engine == "trtllm-v2" else 16
            best: dict[str, float] = {}
            for label, module in (("old", old), ("new", new)) * 2:
                cycle = itertools.cycle(lengths)

                def call(module=module, cycle=cycle, model=model, engine=engine, size=size) -> None:
                    module.engine_capacity(
                        model, 40 << 30, engine=engine, block_size=size,
                        max_seq_len=next(cycle), max_num_tokens=8192,
                    )  # fmt: skip

                times = timeit.repeat(call, number=20, repeat=args.repeats)
                best[label] = min(best.get(label, 1e9), min(times) * 1e6 / 20)
            print(
                f"{engine:10} {model:22} old {best['old']:.2f} us  new {best['new']:.2f} us  "
                f"{best['new'] - best['old']:+.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
