"""Time ``engine_capacity`` per call, in kvgen._engines and in the generated sizing modules.

Usage: python bench/bench_engines.py [--calls N] [--quick]

Prints microseconds per call for each engine on every model of every shipped family
(``--quick``: four of them), then the worst per engine against the targets (warm < 2 us through
both paths, never-seen < 5 us):
``kvgen._engines.engine_capacity`` (cold: the first call, building the plan; warm: the plan
cached) and ``generated/<family>/sizing.py``'s ``engine_capacity``, which answers from the
module's own tables; there TensorRT-LLM V2 runs at the spec's tokens_per_block. Its columns:
warm; never-seen, its plan caches emptied before every call, so each call plans the model
for a block size, tp and modes it has not seen (what the model and profile alone decide, the
layout, is built when the module binds its tables, at import; TensorRT-LLM's plan is its
pool groups, ``_TRTLLM_PLANS``, SGLang's pools of a budget are emptied with its plans,
``_SGLANG_POOLS``, while the engine's split of one quota over the same slot
bytes stays remembered, ``_engine_slots``, as it is for any configuration at that tp and
budget); first plan, the layouts
emptied too, so each call builds its layout again (which no process does since bind builds
them: the cost of a layout).
Each figure is the best of many short repeats (``--calls`` calls in all, 20 a repeat): on a
shared machine a longer repeat is rarely undisturbed by other load. max_seq_len cycles
through four lengths (for a model of under 4096 tokens: half its native context and all of
it) so no call repeats the previous one's arguments.
"""

from __future__ import annotations

import argparse
import itertools
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from kvgen._engines import _CACHE, ENGINES, engine_capacity
from kvgen._loader import load_family
from kvgen._vendored import import_generated

ROOT = Path(__file__).resolve().parents[1]
CASES = (
    ("llama3", "llama3_1_8b"),
    ("gemma3", "gemma3_27b"),
    ("gpt_oss", "gpt_oss_20b"),
    ("qwen3_next", "qwen3_next_80b_a3b"),
)
BUDGET = 40 << 30
REPEAT_CALLS = 20
WARM_TARGET_US = 2.0
NEVER_SEEN_TARGET_US = 5.0
# The generated module's caches: plans by block size, tp and modes; layouts by model and profile.
PLAN_CACHES = ("_VLLM_PLANS", "_SGLANG_PLANS", "_SGLANG_POOLS", "_TRTLLM_PLANS")
LAYOUT_CACHES = ("_VLLM_LAYOUTS", "_SGLANG_LAYOUTS")


def generated_module(family_name: str) -> ModuleType:
    return import_generated(ROOT / "generated" / family_name / "sizing.py", "_bench_generated")


def best_us(call: Callable[[], object], calls: int) -> float:
    """Best of ``calls // 20`` repeats of 20 calls, microseconds per call."""
    repeats = max(1, calls // REPEAT_CALLS)
    return min(timeit.repeat(call, number=REPEAT_CALLS, repeat=repeats)) * 1e6 / REPEAT_CALLS


def emptied(module: ModuleType, names: tuple[str, ...]) -> Callable[[], None]:
    """A call that empties the module's caches ``names`` (those it has)."""
    caches = [getattr(module, name) for name in names if hasattr(module, name)]

    def empty() -> None:
        for cache in caches:
            cache.clear()

    return empty


def cases(everything: bool) -> list[tuple[str, str]]:
    """Every model of every shipped family, or (``everything`` False) the four of CASES."""
    if not everything:
        return list(CASES)
    found = []
    for sizing in sorted((ROOT / "generated").glob("*/sizing.py")):
        module = generated_module(sizing.parent.name)
        found += [(sizing.parent.name, model) for model in module.MODELS]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--quick", action="store_true", help="four models, not every one")
    args = parser.parse_args(argv)
    # engine -> column -> (worst us, model)
    worst: dict[str, dict[str, tuple[float, str]]] = {}
    print(
        f"{'engine':10} {'model':26} {'cold us':>9} {'warm us/call':>13} {'generated us':>13} "
        f"{'never-seen us':>14} {'first plan us':>14}"
    )
    for family_name, model in cases(not args.quick):
        family = load_family(ROOT / "schema" / "families" / f"{family_name}.yaml")
        module = generated_module(family_name)
        native = module.MAX_SEQ_LEN[model]
        length = min(8192, native)
        cycled = [n for n in (4096, 8192, 16384, 32768) if n <= native] or [native // 2, native]
        for engine in ENGINES:
            kwargs = {"engine": engine, "max_seq_len": length, "max_num_tokens": 8192}
            _CACHE.clear()
            start = time.perf_counter()
            try:
                engine_capacity(family, model, BUDGET, block_size=16, **kwargs)
            except ValueError as exc:  # NotModelled, or no answer at this budget
                print(f"{engine:10} {model:26} {type(exc).__name__}")
                continue
            cold = (time.perf_counter() - start) * 1e6
            del kwargs["max_seq_len"]
            lengths = itertools.cycle(cycled)

            def call(family=family, model=model, kwargs=kwargs, lengths=lengths) -> None:
                engine_capacity(
                    family, model, BUDGET, block_size=16, max_seq_len=next(lengths), **kwargs
                )

            warm = best_us(call, args.calls)
            size = None if engine == "trtllm-v2" else 16
            lengths_g = itertools.cycle(cycled)

            def call_generated(
                module=module, model=model, kwargs=kwargs, size=size, lengths=lengths_g
            ) -> None:
                module.engine_capacity(
                    model, BUDGET, block_size=size, max_seq_len=next(lengths), **kwargs
                )

            gen = best_us(call_generated, args.calls)
            figures = []
            for names in (PLAN_CACHES, PLAN_CACHES + LAYOUT_CACHES):
                empty = emptied(module, names)

                def call_never_seen(call=call_generated, empty=empty) -> None:
                    empty()
                    call()

                figures.append(best_us(call_never_seen, args.calls))
            never, first = figures
            print(
                f"{engine:10} {model:26} {cold:9.1f} {warm:13.2f} {gen:13.2f} {never:14.2f} "
                f"{first:14.2f}"
            )
            columns = worst.setdefault(engine, {})
            for column, figure in (("warm", warm), ("generated", gen), ("never-seen", never)):
                if figure > columns.get(column, (-1.0, ""))[0]:
                    columns[column] = (figure, f"{family_name}/{model}")
    print()
    return summary(worst)


def summary(worst: dict[str, dict[str, tuple[float, str]]]) -> int:
    """The worst figure per engine and column against its target; 1 when one misses it."""
    targets = {"warm": WARM_TARGET_US, "generated": WARM_TARGET_US,
               "never-seen": NEVER_SEEN_TARGET_US}  # fmt: skip
    missed = 0
    print(f"{'engine':10} {'worst of':11} {'us':>7} {'target':>7}  model")
    for engine, columns in worst.items():
        for column, (figure, model) in columns.items():
            held = figure < targets[column]
            missed += not held
            verdict = "" if held else "  MISSED"
            print(f"{engine:10} {column:11} {figure:7.2f} {targets[column]:7.1f}  {model}{verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
