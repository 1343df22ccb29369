"""Time ``engine_capacity`` per call, in kvgen._engines.capacity and in the generated sizing
modules, each figure against an anchor measured in the same run.

Usage: python bench/bench_engines.py [--calls N] [--quick] [--anchor CHECKOUT]

The anchor is a cached Python call (a ``functools.lru_cache`` hit of five arguments), measured
before and after the models: on a shared 2-core machine a microsecond moves with the load, a
ratio to it does not. Every figure is printed in microseconds and in cached calls ('x'); the
targets are in cached calls, as they stood on the development machine where a cached call
takes 0.10 us: warm under 20 (2 us) through both paths, never-seen and a new question under
50 (5 us). ``--anchor`` (a checkout of 54a882f: ``git worktree add /tmp/base54 54a882f``)
adds that commit's generated ``engine_capacity`` on the four ``--quick`` models, timed
interleaved with this tree's (warm and new question; shown, not judged).

Each TensorRT-LLM release of ``kvgen.sizing.engines_registry`` is timed on its own as well
(``engine="trtllm==VERSION"``, the four ``--quick`` models), each figure in microseconds and
in cached calls: warm, never-seen and a new question through the generated module, the worst
per release judged in the summary against the engines' targets (so ``trtllm==38198e34``, what
``trtllm`` and ``trtllm-v2`` select, and ``trtllm==early-2026`` each get their own lines);
where the runtime does not answer a release (``NotModelled``: it names where the release is
answered), the code path that answers it, ``kvgen.sizing._trtllm_pools.trtllm_emit`` (the
pools that release's own split builds from the budget, what ``plan --emit`` writes), warm and
with a batch size never asked (shown, not judged).

For each engine on every model of every shipped family (``--quick``: four of them):
``kvgen._engines.capacity.engine_capacity`` (cold: the first call, building the plan; warm: the
answer of the same arguments remembered) and ``generated/<family>/sizing.py``'s
``engine_capacity``, which answers from the module's own tables; there TensorRT-LLM V2 runs at
the spec's tokens_per_block. Its columns: warm (a plain call's answer looked up by its
arguments, ``_ENGINE_ANSWERS``); never-seen, the answers and plan caches emptied before every call,
so each call plans the model for a block size, tp and modes it has not seen (what the model
and profile alone decide, the layout, is built when the module binds its tables, at import;
TensorRT-LLM's plans are its pool groups, ``_TRTLLM_PLANS``, SGLang's pools of a budget are
emptied with its plans, ``_SGLANG_POOLS``, while the engine's split of one quota
over the same slot bytes stays remembered, ``_engine_slots``, as do a life-cycle shape's pool
groups, ``_trtllm_plan_of``, 38198e34's split's budget-free part, ``_TRTLLM_FRAMES``, and
TensorRT-LLM V2's terms of the same options at another batch size, ``_TRTLLM_BASE``);
new question, the same with a batch size never asked as well, so that for TensorRT-LLM V2
every cache keyed by the batch misses (its terms rebuilt from another batch's where only
B * per-request bytes move, else validated and computed; vLLM and SGLang size no batch);
first plan, the layouts emptied too, so each call builds its layout again (which no process
does since bind builds them: the cost of a layout).
Each figure is the best of many short repeats (``--calls`` calls in all, 20 a repeat): on a
shared machine a longer repeat is rarely undisturbed by other load. max_seq_len cycles
through four lengths (for a model of under 4096 tokens: half its native context and all of
it) so no call repeats the previous one's arguments. The never-seen, new-question and
first-plan figures are each less the bench's own work around the call, timed alone in the
same run (``harness_us``: emptying the caches, drawing a new batch size, the next length;
0.25-0.31 us where a cached call took 0.148): what remains is the call itself, its argument
passing included. Exit status 1 only when a target in cached calls is missed.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from kvgen._engines.capacity import _CACHE, ENGINES, engine_capacity
from kvgen._generate.vendored import import_generated
from kvgen._spec.loader import load_family

ROOT = Path(__file__).resolve().parents[1]
CASES = (
    ("llama3", "llama3_1_8b"),
    ("gemma3", "gemma3_27b"),
    ("gpt_oss", "gpt_oss_20b"),
    ("qwen3_next", "qwen3_next_80b_a3b"),
)
BUDGET = 40 << 30
REPEAT_CALLS = 20
WARM_TARGET = 20.0  # cached calls (2 us where a cached call takes 0.10 us)
NEVER_SEEN_TARGET = 50.0  # cached calls (5 us there)
# The generated module's caches: plain calls' answers; plans by block size, tp and modes;
# layouts by model and profile.
PLAN_CACHES = ("_ENGINE_ANSWERS", "_VLLM_PLANS", "_SGLANG_PLANS", "_SGLANG_POOLS", "_TRTLLM_PLANS")
LAYOUT_CACHES = ("_VLLM_LAYOUTS", "_SGLANG_LAYOUTS")


@functools.cache
def _cached(model: str, speculative: str, batch: int, chunk: int, seq: int) -> str:
    return model


def cached_call_us(calls: int) -> float:
    """The anchor: one cached Python call of five arguments, in microseconds."""
    _cached("llama3_1_8b", "none", 8, 8192, 8192)
    return best_us(lambda: _cached("llama3_1_8b", "none", 8, 8192, 8192), calls)


def generated_module(family_name: str) -> ModuleType:
    return import_generated(ROOT / "generated" / family_name / "sizing.py", "_bench_generated")


def best_us(call: Callable[[], object], calls: int) -> float:
    """Best of ``calls // 20`` repeats of 20 calls, microseconds per call."""
    repeats = max(1, calls // REPEAT_CALLS)
    best = min(timeit.repeat(call, number=REPEAT_CALLS, repeat=repeats, timer=time.process_time))
    return best * 1e6 / REPEAT_CALLS


def emptied(module: ModuleType, names: tuple[str, ...]) -> Callable[[], None]:
    """A call that empties the module's caches ``names`` (those it has)."""
    # a dict's clear, or an lru_cache's cache_clear
    caches = [getattr(module, name) for name in names if hasattr(module, name)]
    clears = [getattr(cache, "cache_clear", None) or cache.clear for cache in caches]

    def empty() -> None:
        for clear in clears:
            clear()

    return empty


def harness_us(empty: Callable[[], None], new: bool, calls: int) -> float:
    """The bench's own work around a never-seen call (emptying the caches, drawing a new
    batch size, the next length), without the call: subtracted from those figures, so that
    each is what the call itself costs."""
    counter = itertools.count(1)
    lengths = itertools.cycle((4096, 8192))

    def work() -> None:
        empty()
        if new:
            _new_batch(counter)
        next(lengths)

    return best_us(work, calls)


def cases(everything: bool) -> list[tuple[str, str]]:
    """Every model of every shipped family, or (``everything`` False) the four of CASES."""
    if not everything:
        return list(CASES)
    found = []
    for sizing in sorted((ROOT / "generated").glob("*/sizing.py")):
        module = generated_module(sizing.parent.name)
        found += [(sizing.parent.name, model) for model in module.MODELS]
    return found


_COUNTER = itertools.count(1)


def _new_batch(counter: itertools.count[int] = _COUNTER) -> int:
    """A batch size not asked in the last 8,000 questions of ``counter`` (every cache of a
    call holds at most 4,096 answers), never above the 8,192 tokens a step of the benchmark
    schedules (vLLM refuses max_num_seqs above max_num_batched_tokens). Calls timed against
    each other take a counter each: sharing one, each would see a size again after only
    4,000 of its own calls, a hit."""
    return next(counter) % 8000 + 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--quick", action="store_true", help="four models, not every one")
    parser.add_argument(
        "--anchor",
        type=Path,
        metavar="CHECKOUT",
        help="a checkout of 54a882f (git worktree add /tmp/base54 54a882f): its generated "
        "engine_capacity timed beside this tree's",
    )
    args = parser.parse_args(argv)
    cached = cached_call_us(args.calls)
    # engine -> column -> (worst us, model)
    worst: dict[str, dict[str, tuple[float, str]]] = {}
    print(
        f"{'engine':10} {'model':26} {'cold us':>9} {'warm us':>13} {'generated us':>13} "
        f"{'never-seen us':>14} {'new q. us':>14} {'first plan us':>14}"
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
                module=module, model=model, engine=engine, size=size, lengths=lengths_g, batch=8
            ) -> None:
                # keywords as a caller writes them (a ``**kwargs`` merge would be the bench's)
                module.engine_capacity(
                    model, BUDGET, engine=engine, max_num_tokens=8192, block_size=size,
                    max_seq_len=next(lengths), max_batch_size=batch,
                )  # fmt: skip

            gen = best_us(call_generated, args.calls)
            figures = []
            for names, new in ((PLAN_CACHES, False), (PLAN_CACHES, True),
                               (PLAN_CACHES + LAYOUT_CACHES, False)):  # fmt: skip
                empty = emptied(module, names)

                def call_never_seen(call=call_generated, empty=empty, new=new) -> None:
                    empty()
                    if new:
                        call(batch=_new_batch())
                    else:
                        call()

                figures.append(
                    best_us(call_never_seen, args.calls) - harness_us(empty, new, args.calls)
                )
            never, new_question, first = figures
            print(
                f"{engine:10} {model:26} {cold:9.1f} {warm:13.2f} {gen:13.2f} {never:14.2f} "
                f"{new_question:14.2f} {first:14.2f}"
            )
            columns = worst.setdefault(engine, {})
            for column, figure in (("warm", warm), ("generated", gen), ("never-seen", never),
                                   ("new question", new_question)):  # fmt: skip
                if figure > columns.get(column, (-1.0, ""))[0]:
                    columns[column] = (figure, f"{family_name}/{model}")
    print()
    releases = trtllm_releases(args.calls, min(cached, cached_call_us(args.calls)))
    if args.anchor is not None:
        print()
        anchored(args.anchor, args.calls)
    cached = min(cached, cached_call_us(args.calls))
    print()
    return summary({**worst, **releases}, cached)


def paired_us(
    ours: Callable[[], object], theirs: Callable[[], object], calls: int
) -> tuple[float, float]:
    """Best microseconds per call of two calls, their 20-call repeats interleaved (a burst of
    load then slows a repeat of each, not every repeat of one)."""
    best = [float("inf"), float("inf")]
    for _ in range(max(1, calls // REPEAT_CALLS)):
        for i, call in enumerate((ours, theirs)):
            best[i] = min(
                best[i], timeit.timeit(call, number=REPEAT_CALLS, timer=time.process_time)
            )
    return best[0] * 1e6 / REPEAT_CALLS, best[1] * 1e6 / REPEAT_CALLS


def trtllm_releases(calls: int, cached: float) -> dict[str, dict[str, tuple[float, str]]]:
    """Each TensorRT-LLM release on the four --quick models: through the generated
    ``engine_capacity`` where the runtime answers it, else through ``trtllm_emit``, the code
    path that answers it (see the module docstring). Each figure in microseconds and in
    cached calls (``cached``: the anchor's microseconds); returns the worst per release
    ``NAME==VERSION`` and column, for the summary."""
    from kvgen.sizing._trtllm_pools import trtllm_emit
    from kvgen.sizing.engines_registry import RELEASES, TRTLLM

    worst: dict[str, dict[str, tuple[float, str]]] = {}
    print(f"TensorRT-LLM releases, each figure in us and in cached calls ({cached:.3f} us)")
    print(f"{'release':20} {'model':22} {'path':16} {'warm':>15} {'never-seen':>15} "
          f"{'new question':>15}")  # fmt: skip

    def shown(figure: float | None) -> str:
        return f"{'-':>15}" if figure is None else f"{figure:6.2f} {figure / cached:6.1f}x "

    for found in RELEASES:
        if found.engine is not TRTLLM:
            continue
        for family_name, model in CASES:
            module = generated_module(family_name)
            length = min(8192, module.MAX_SEQ_LEN[model])
            kwargs = {"engine": found.spelling, "max_seq_len": length, "max_num_tokens": 8192}
            empty = emptied(module, PLAN_CACHES)
            try:
                module.engine_capacity(model, BUDGET, **kwargs)
            except ValueError as exc:
                if type(exc).__name__ != "NotModelled":
                    print(f"{found.spelling:20} {model:22} {type(exc).__name__}")
                    continue
                common = {"max_num_tokens": 8192, "max_seq_len": length, "speculative": "none",
                          "tp_size": 1}  # fmt: skip

                def emit(
                    batch: int = 8, module=module, model=model, common=common, found=found
                ) -> None:
                    trtllm_emit(module, model, BUDGET, max_batch_size=batch,
                                revision=found.version, **common)  # fmt: skip

                try:
                    emit()
                except ValueError as refused:
                    print(f"{found.spelling:20} {model:22} trtllm_emit: {refused}"[:100])
                    continue
                few = max(100, calls // 50)
                figures = (
                    best_us(emit, few),
                    None,
                    best_us(lambda emit=emit: emit(_new_batch()), few),
                )
                path = "trtllm_emit"
            else:

                def call(
                    batch: int = 8, module=module, model=model, engine=found.spelling, n=length
                ) -> None:
                    module.engine_capacity(model, BUDGET, engine=engine, max_seq_len=n,
                                           max_num_tokens=8192, max_batch_size=batch)  # fmt: skip

                def never(call=call, empty=empty) -> None:
                    empty()
                    call()

                def new_q(call=call, empty=empty) -> None:
                    empty()
                    call(_new_batch())

                figures = (
                    best_us(call, calls),
                    best_us(never, calls) - harness_us(empty, False, calls),
                    best_us(new_q, calls) - harness_us(empty, True, calls),
                )
                path = "engine_capacity"
            print(f"{found.spelling:20} {model:22} {path:16} "
                  + "".join(shown(f) for f in figures))  # fmt: skip
            if path != "engine_capacity":
                continue  # shown, not judged
            columns = worst.setdefault(found.spelling, {})
            for column, figure in zip(("warm", "never-seen", "new question"), figures, strict=True):
                if figure is not None and figure > columns.get(column, (-1.0, ""))[0]:
                    columns[column] = (figure, f"{family_name}/{model}")
    return worst


def anchored(checkout: Path, calls: int) -> None:
    """54a882f's generated ``engine_capacity`` on the four --quick models beside this tree's,
    interleaved: warm, and a batch size never asked (no cache emptied on either side)."""
    print(f"against 54a882f ({checkout}): microseconds per call, this tree / 54a882f")
    print(f"{'engine':10} {'model':22} {'warm':>17} {'x':>6} {'new batch':>17} {'x':>6}")
    for family_name, model in CASES:
        path = checkout / "generated" / family_name / "sizing.py"
        if not path.is_file():
            continue
        theirs = import_generated(path, "_bench_anchor")
        ours = generated_module(family_name)
        length = min(8192, ours.MAX_SEQ_LEN[model])
        for engine in ENGINES:
            size = None if engine == "trtllm-v2" else 16
            kwargs = {"engine": engine, "max_seq_len": length, "max_num_tokens": 8192,
                      "block_size": size}  # fmt: skip
            try:
                theirs.engine_capacity(model, BUDGET, **kwargs)
                ours.engine_capacity(model, BUDGET, **kwargs)
            except ValueError as exc:
                print(f"{engine:10} {model:22} {type(exc).__name__}")
                continue
            row = []
            for new in (False, True):
                counters = (itertools.count(), itertools.count())  # one per side
                pair = [
                    lambda module=module, new=new, kwargs=kwargs, model=model, n=counter: (
                        module.engine_capacity(
                            model, BUDGET, max_batch_size=_new_batch(n) if new else 8, **kwargs
                        )
                    )
                    for module, counter in zip((ours, theirs), counters, strict=True)
                ]
                row.append(paired_us(pair[0], pair[1], calls))
            (warm, warm_then), (new_b, new_then) = row
            print(f"{engine:10} {model:22} {warm:7.2f} / {warm_then:6.2f} {warm / warm_then:5.2f}x "
                  f"{new_b:7.2f} / {new_then:6.2f} {new_b / new_then:5.2f}x")  # fmt: skip


def summary(worst: dict[str, dict[str, tuple[float, str]]], cached: float) -> int:
    """The worst figure per engine and column, in cached calls against its target; 1 when
    one misses it."""
    targets = {"warm": WARM_TARGET, "generated": WARM_TARGET, "never-seen": NEVER_SEEN_TARGET,
               "new question": NEVER_SEEN_TARGET}  # fmt: skip
    missed = 0
    print(f"anchor, this run: a cached call {cached:.3f} us")
    print(f"{'engine':18} {'worst of':13} {'us':>7} {'cached':>8} {'target':>8}  model")
    for engine, columns in worst.items():
        for column, (figure, model) in columns.items():
            ratio = figure / cached
            target = targets.get(column)
            held = target is None or ratio < target
            missed += not held
            verdict = "" if held else "  MISSED"
            shown = f"{target:7.0f}x" if target is not None else f"{'-':>8}"
            print(f"{engine:18} {column:13} {figure:7.2f} {ratio:7.1f}x {shown}  {model}{verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
