"""Time ``engine_capacity`` per call, in kvgen.engines and in the generated sizing modules.

Usage: python bench/bench_engines.py [--calls N]

Prints microseconds per call for each engine on a few shipped models (target: < 5 us warm):
``kvgen.engines.engine_capacity`` (cold: the first call, building the plan; warm: the plan
cached) and ``generated/<family>/sizing.py``'s ``engine_capacity`` (warm, and never-seen: its
plan caches emptied before every call, so each call plans the model), which answers from
the module's own tables; there TensorRT-LLM V2 runs at the spec's tokens_per_block. Warm
figures are the best of 5 repeats (the least disturbed by other load on the machine);
max_seq_len cycles through four lengths so no call repeats the previous one's arguments.
"""

from __future__ import annotations

import argparse
import itertools
import time
import timeit
from pathlib import Path
from types import ModuleType

from kvgen.engines import _CACHE, ENGINES, engine_capacity
from kvgen.loader import load_family
from kvgen.vendored import import_generated

ROOT = Path(__file__).resolve().parents[1]
CASES = (
    ("llama3", "llama3_1_8b"),
    ("gemma3", "gemma3_27b"),
    ("gpt_oss", "gpt_oss_20b"),
    ("qwen3_next", "qwen3_next_80b_a3b"),
)
BUDGET = 40 << 30


def generated_module(family_name: str) -> ModuleType:
    return import_generated(ROOT / "generated" / family_name / "sizing.py", "_bench_generated")


def warm_us(call: object, calls: int) -> float:
    """Best of 5 repeats, microseconds per call."""
    per_repeat = calls // 5
    return min(timeit.repeat(call, number=per_repeat, repeat=5)) * 1e6 / per_repeat  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args(argv)
    print(
        f"{'engine':10} {'model':22} {'cold us':>9} {'warm us/call':>13} {'generated us':>13} "
        f"{'never-seen us':>14}"
    )
    for family_name, model in CASES:
        family = load_family(ROOT / "schema" / "families" / f"{family_name}.yaml")
        module = generated_module(family_name)
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

            warm = warm_us(call, args.calls)
            size = None if engine == "trtllm-v2" else 16
            lengths_g = itertools.cycle((4096, 8192, 16384, 32768))

            def call_generated(
                module=module, model=model, kwargs=kwargs, size=size, lengths=lengths_g
            ) -> None:
                module.engine_capacity(
                    model, BUDGET, block_size=size, max_seq_len=next(lengths), **kwargs
                )

            gen = warm_us(call_generated, args.calls)

            def call_never_seen(call=call_generated, module=module) -> None:
                module._VLLM_PLANS.clear()
                module._SGLANG_PLANS.clear()
                call()

            never = warm_us(call_never_seen, args.calls)
            print(f"{engine:10} {model:22} {cold:9.1f} {warm:13.2f} {gen:13.2f} {never:14.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
