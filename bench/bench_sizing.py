"""Benchmark the generated sizing modules, each figure against anchors measured in the same run.

On a shared 2-core machine a microsecond moves with the load; a ratio to something measured in
the same process at the same time does not, so every figure is printed as a ratio to an anchor:

- ``cached``: a cached Python call (a ``functools.lru_cache`` hit of five arguments), the least
  a call that answers from a cache costs. The targets of issue 28 are in its units, as they
  stood on the development machine where a cached call takes 0.10 us: a warm ``cache_costs``
  under 10 of them (1 us), a new question (arguments never seen: a new batch size) under 30
  (3 us) at tp 1 and at tp 2.
- ``54a882f``: the same call on the family's sizing module as commit 54a882f generated it (each
  module carried its own copy of the interpreter then; built here from ``git show`` into a
  temporary folder, for the families and models it had): a warm call at most 1.0x its, the two
  timed in interleaved repeats of 200 calls (``WARM_PAIRED_CALLS``), a new question in 20.
- ``import``: importing a module in a fresh process, against importing 54a882f's module of the
  family the same way.

Per shipped family, on its last model and profile: import time of ``generated/<family>/
sizing.py`` (fresh interpreter, bytecode cached, median of runs); ``cache_costs`` warm
(repeated arguments), a new question at tp 1 and tp 2 (a batch size never asked, so every
cache of the call misses while what a split holds stays known), the first call at a split
never seen (tp 8 / pp 2, every cache of the module cleared, the clearing included);
``max_tokens_from_quota`` warm; under "exact" ``quota_from_max_tokens``,
``max_tokens_from_quota`` and ``quota_for_requests`` warm; and the layer-by-layer reference
(``tests/reference/costmodel.py``) computing the same numbers. Times are CPU time of the
process (``time.process_time``), each the best of ``--rounds`` passes over all families.
Exit status 1 only when a ratio target is missed (absolute microseconds are shown, not judged).

``--kinds N`` instead times ``kvgen generate`` of a lint-clean spec with N distinct sliding
kinds in one pattern (issue 9, item 6: 2,048 kinds took 74 s and wrote 98 MB).

    python bench/bench_sizing.py [--family NAME ...] [--calls N] [--rounds R] [--anchor DIR]
    python bench/bench_sizing.py --kinds N
"""

from __future__ import annotations

import argparse
import functools
import importlib
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kvgen._spec.loader import load_family  # noqa: E402

from tests.reference import costmodel  # noqa: E402

ANCHOR_COMMIT = "54a882f"
CACHED_CALL_US = 0.10  # a cached call on the development machine: the targets' unit below
WARM_TARGET = 10.0  # cached calls (1 us there)
NEW_TARGET = 30.0  # cached calls (3 us there)
WARM_VS_ANCHOR = 1.0  # x 54a882f's warm call

IMPORT_PROBE = (
    "import sys, time, importlib; sys.path.insert(0, {root!r}); t = time.process_time(); "
    "{body}; print((time.process_time() - t) * 1e3)"
)


def _probe_ms(root: Path, body: str, runs: int) -> float:
    """Median CPU ms of ``body`` in a fresh interpreter (bytecode written by a first run)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cmd = [sys.executable, "-c", IMPORT_PROBE.format(root=str(root), body=body)]
    subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)  # write .pyc
    times = [
        float(
            subprocess.run(
                cmd, cwd=root, env=env, check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(runs)
    ]
    return statistics.median(times)


def import_ms(root: Path, package: str, family: str, runs: int = 7) -> float:
    return _probe_ms(root, f"importlib.import_module('{package}.{family}.sizing')", runs)


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
        cmd[1:1] = ["-X", f"pycache_prefix={tempfile.mkdtemp()}"]  # an empty cache: compile all
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
    """Best of many short repeats (20 calls each), CPU microseconds per call."""
    repeats = max(1, calls // 20)
    return min(timeit.repeat(fn, number=20, repeat=repeats, timer=time.process_time)) / 20 * 1e6


def _anchor_source(family: str, checkout: Path | None) -> bytes | None:
    """54a882f's ``generated/<family>/sizing.py``: from ``checkout`` (a worktree of that
    commit, ``git worktree add /tmp/base54 54a882f``) when given, else ``git show``; None
    where the commit had no such family (or git or the commit is not at hand)."""
    if checkout is not None:
        path = checkout / "generated" / family / "sizing.py"
        return path.read_bytes() if path.is_file() else None
    shown = subprocess.run(
        ["git", "show", f"{ANCHOR_COMMIT}:generated/{family}/sizing.py"],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    return shown.stdout if shown.returncode == 0 else None


def anchor_modules(
    families: list[str], checkout: Path | None = None
) -> tuple[Path | None, dict[str, ModuleType]]:
    """54a882f's sizing modules of ``families`` (those it had), copied as a package into a
    temporary folder (each was self-contained then); none where neither ``checkout`` nor git
    and the commit are at hand (a wheel, a shallow clone)."""
    root = Path(tempfile.mkdtemp(prefix="kvgen_anchor_"))
    package = root / "kvgen_anchor"
    package.mkdir()
    (package / "__init__.py").write_text("")
    modules: dict[str, ModuleType] = {}
    for family in families:
        source = _anchor_source(family, checkout)
        if source is None:
            continue
        (package / family).mkdir()
        (package / family / "__init__.py").write_text("")
        (package / family / "sizing.py").write_bytes(source)
    if not any(package.iterdir()):
        return None, {}
    sys.path.insert(0, str(root))
    for family in families:
        if (package / family / "sizing.py").exists():
            modules[family] = importlib.import_module(f"kvgen_anchor.{family}.sizing")
    return root, modules


@functools.cache
def _cached(model: str, speculative: str, batch: int, chunk: int, seq: int) -> str:
    return model


def cached_call_us(calls: int) -> float:
    """The anchor: one cached Python call of five arguments."""
    _cached("llama3_1_8b", "none", 8, 8192, 8192)
    return per_call_us(lambda: _cached("llama3_1_8b", "none", 8, 8192, 8192), calls)


_BATCHES = itertools.count(1)  # a batch size never asked before, for every new question


def paired_us(ours, theirs, calls: int, number: int = 20) -> tuple[float, float]:
    """Best CPU microseconds per call of two calls, their repeats of ``number`` calls
    interleaved (a burst of load then slows a repeat of each, not every repeat of one)."""
    best = [float("inf"), float("inf")]
    for _ in range(max(1, calls // number)):
        for i, fn in enumerate((ours, theirs)):
            best[i] = min(best[i], timeit.timeit(fn, number=number, timer=time.process_time))
    return best[0] / number * 1e6, best[1] / number * 1e6


# Calls per repeat of a warm call timed against 54a882f's: the best of 20-call repeats (about
# 10 us of CPU time each) reads some repeats of one side low, by up to a third on a family
# picked by chance (deepseek_r1 at 0.468 against 0.587 us in 1,000-call repeats, the same
# run); repeats of 200 calls do not, and a burst of load still spares most of them.
WARM_PAIRED_CALLS = 200


def sizing_calls(
    sizing: ModuleType, model: str, kw: dict, calls: int, anchor: ModuleType | None
) -> dict[str, float]:
    """Warm and new-question cache_costs of the family's module, and of 54a882f's (the
    anchor's figures under ``anchor_``), measured side by side."""

    def new(module: ModuleType, tp: int) -> None:
        module.cache_costs(model, **{**kw, "max_batch_size": next(_BATCHES), "tp_size": tp})

    def warm(module: ModuleType) -> None:
        module.cache_costs(model, **kw)

    out: dict[str, float] = {}
    figures = (("warm_us", warm, calls), ("new_us", lambda m: new(m, 1), max(calls // 10, 100)),
               ("new_tp2_us", lambda m: new(m, 2), max(calls // 10, 100)))  # fmt: skip
    for key, call, count in figures:
        if anchor is None:
            out[key] = per_call_us(lambda call=call: call(sizing), count)
            continue
        if key == "warm_us":  # against the cached call in 20-call repeats, as it is timed
            out[key] = per_call_us(lambda call=call: call(sizing), count)
            key = "warm54_us"
        number = WARM_PAIRED_CALLS if key == "warm54_us" else 20
        out[key], out[f"anchor_{key}"] = paired_us(
            lambda call=call: call(sizing), lambda call=call: call(anchor), count, number
        )
    return out


def bench_family(family: str, calls: int, anchor: ModuleType | None) -> dict[str, float]:
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
    # Every cache of the module: its dicts of answers and every lru cache.
    clears = [value.cache_clear for value in vars(sizing).values() if hasattr(value, "cache_clear")]
    clears += [vars(sizing)[name].clear for name in ("_ANSWERS", "_PLAIN", "_RANKS")]

    def first_split(kwargs: dict) -> None:
        # A split never seen: every cache cleared (clearing included), its layers summed again.
        for clear in clears:
            clear()
        sizing.cache_costs(model, **kwargs)

    layers = spec.model(model).layers.count
    split = {"tp_size": 8, "pp_size": 2, "pp_rank": 1} if layers >= 2 else {"tp_size": 8}
    at_split = {**kw, **split}  # built once, as a caller's keywords are
    known = anchor is not None and model in anchor.MODELS and profile in anchor.SPECULATIVE
    out = sizing_calls(sizing, model, kw, calls, anchor if known else None)
    out.update(
        {
            "import_ms": import_ms(REPO, "generated", family),
            "first_split_us": per_call_us(lambda: first_split(at_split), max(calls // 10, 100)),
            "inverse_us": per_call_us(
                lambda: sizing.max_tokens_from_quota(model, {"target": 40 << 30}, **kw), calls
            ),
            # "exact" (page-exact, issue 10): the quota of T, its inverse, the serving quota.
            "exact_quota_us": per_call_us(
                lambda: sizing.quota_from_max_tokens(model, 100_000, semantics="exact", **kw),
                calls,
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
    )
    return out


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


# (title, key, the anchor it is divided by: "cached" or "anchor" (54a882f's same figure))
COLUMNS = [
    ("warm", "warm_us", "cached"),
    ("warm/54", "warm54_us", "anchor"),
    ("new tp1", "new_us", "cached"),
    ("new tp2", "new_tp2_us", "cached"),
    ("new/54", "new_us", "anchor"),
    ("1st split", "first_split_us", "cached"),
    ("inverse", "inverse_us", "cached"),
    ("exact q", "exact_quota_us", "cached"),
    ("exact inv", "exact_inverse_us", "cached"),
    ("requests", "requests_us", "cached"),
    ("generic", "generic_us", "cached"),
]


def _ratio(result: dict[str, float], key: str, anchor: str, cached: float) -> float | None:
    if anchor == "cached":
        return result[key] / cached
    then = result.get(f"anchor_{key}")
    return None if then is None else result[key] / then


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", action="append", help="limit to these families")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument(
        "--rounds", type=int, default=3, help="passes over all families; each figure is its best"
    )
    parser.add_argument("--kinds", type=int, help="time generate with this many kinds instead")
    parser.add_argument(
        "--anchor",
        type=Path,
        metavar="CHECKOUT",
        help=f"a checkout of {ANCHOR_COMMIT} (git worktree add /tmp/base54 {ANCHOR_COMMIT}) to "
        "read its modules from; default: git show from this repository",
    )
    args = parser.parse_args()
    if args.kinds:
        return bench_kinds(args.kinds)
    families = args.family or sorted(
        p.parent.name for p in (REPO / "generated").glob("*/sizing.py")
    )
    anchor_root, anchors = anchor_modules(families, args.anchor)
    # Rounds interleave the families and the anchors in time: on a shared machine a burst of
    # contention then slows one pass of a figure rather than every measurement of it.
    best: dict[str, dict[str, float]] = {}
    cached = float("inf")
    for _ in range(args.rounds):
        cached = min(cached, cached_call_us(args.calls))
        for family in families:
            r = bench_family(family, args.calls, anchors.get(family))
            best[family] = {k: min(v, best.get(family, r).get(k, v)) for k, v in r.items()}
        cached = min(cached, cached_call_us(args.calls))
    print(
        f"anchors, this run: a cached call {cached:.3f} us (the unit of the 'x' columns); "
        f"{ANCHOR_COMMIT}'s module of the family ('/54' columns: the same call on it)"
    )
    header = f"{'family':<16}{'import ms':>10}" + "".join(f"{t:>10}" for t, _, _ in COLUMNS)
    print(header)
    print("-" * len(header))
    worst: dict[str, float] = {}
    for family in families:
        r = best[family]
        cells = []
        for title, key, anchor in COLUMNS:
            ratio = _ratio(r, key, anchor, cached)
            cells.append(f"{'-':>10}" if ratio is None else f"{ratio:>9.2f}x")
            if ratio is not None:
                worst[title] = max(worst.get(title, 0.0), ratio)
        print(f"{family:<16}{r['import_ms']:>10.2f}" + "".join(cells))
    print()
    print(
        "microseconds, this run (worst family; issue 28's figures, < 1 us warm and < 3 us a "
        "new question, were set where a cached call took 0.10 us: shown, judged in cached calls)"
    )
    for title, key, _anchor in COLUMNS:
        if "/" not in title:
            print(f"  {title:<10} {max(best[f][key] for f in families):7.2f} us")
    print()
    missed = []

    def verdict(label: str, value: float, target: float, unit: str) -> None:
        held = value <= target
        if not held:
            missed.append(label)
        state = "held" if held else "MISSED"
        print(f"{label}: {value:.2f}{unit} (target <= {target:g}{unit}) {state}")

    verdict("worst warm cache_costs", worst["warm"], WARM_TARGET, "x cached")
    if "warm/54" in worst:
        verdict(
            f"worst warm cache_costs against {ANCHOR_COMMIT}", worst["warm/54"], WARM_VS_ANCHOR, "x"
        )
    verdict("worst new question at tp 1", worst["new tp1"], NEW_TARGET, "x cached")
    verdict("worst new question at tp 2", worst["new tp2"], NEW_TARGET, "x cached")
    if "new/54" in worst:
        print(f"worst new question at tp 1 against {ANCHOR_COMMIT}: {worst['new/54']:.2f}x")
    worst_import = max(best[f]["import_ms"] for f in families)
    then = {f: import_ms(anchor_root, "kvgen_anchor", f) for f in anchors} if anchor_root else {}
    ratios = [best[f]["import_ms"] / then[f] for f in then]
    print(
        f"worst import: {worst_import:.2f} ms (one module in a fresh process, the shared "
        "runtime's import included"
        + (
            f"; at most {max(ratios):.2f}x {ANCHOR_COMMIT}'s module of the family)"
            if ratios
            else ")"
        )
    )
    all_cached = import_all_ms(families, True)
    print(
        f"all {len(families)} in one process: {all_cached:.1f} ms with bytecode cached, "
        f"{import_all_ms(families, False):.1f} ms compiling every module "
        "(PYTHONDONTWRITEBYTECODE=1, no cache)"
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
