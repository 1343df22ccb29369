"""CPU time of ``kvgen plan``'s largest-request-count search at TensorRT-LLM 38198e34 with a
sliding draft, as ratios to the paths it replaced and to ``python -c pass``, measured in the
same run.

    python bench/bench_request_search.py [--repeat 5] [--base DIR]

Where a separate draft slides at max_seq_len, the counts B that fit need not be an interval
(docs/cost-model.md §11), so ``request_ranges`` bisects the target's conditions to their last
count T and evaluates the draft at every B up to T. Three ways of finding the answer are
timed on the same plans, each search in a fresh process (cold caches, as a ``kvgen plan``
command meets them) from the child's own CPU clock around the search alone:

- ``draft``: the shipped search, the draft's tokens alone at each B (``_Sizing.draft_tokens``);
- ``probe``: 4e5873c's, the whole probe at each B (both managers' splits, ``trtllm_emit``);
- ``bisect``: the bisection before the search was exact (wrong where the set has gaps: 5
  for gemma3_1b at 24 GiB where 150 is right).

Then the whole command (``kvgen -q plan ...``, interpreter start included, the child's user +
system CPU from ``os.wait4``) against ``python -c pass`` run between the commands: on a
loaded machine both grow alike, so the ratios hold where milliseconds do not. Medians of
``--repeat`` runs, interleaved. ``--base DIR`` (DIR: another commit's tree, e.g. ``git archive
4e5873c | tar -x -C DIR``, outside the repository) times that commit's command too, interleaved
(its ``generator/`` imported as ``kvgen`` from a temporary folder, run in DIR so that its own
``generated/`` answers), and prints this tree's command as a ratio to it. The plan the search
was slowest on (gemma3_1b with draft_1b at 141 GiB, max_seq_len 600: T = 3,289) is the last
row. No target: the exit status is 0 unless a search's answer differs from the shipped one's
(``bisect`` excepted).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (model, GiB, max_seq_len): gemma3 family, draft_1b, requests of max_seq_len tokens.
PLANS = [("gemma3_1b", 24, 1000), ("gemma3_1b", 80, 1000), ("gemma3_1b", 141, 600)]
WAYS = ("draft", "probe", "bisect")

# The child: one search, timed on its own CPU clock; prints {"seconds", "ranges"}.
CHILD = """
import json, sys, time
from kvgen._engines.planner import SEARCH_LIMIT, _Sizing, load_sizing
from kvgen._engines.plans import largest, request_ranges
way, model, gib, seq = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
bound = _Sizing(load_sizing("gemma3", quiet=True), model, "draft_1b", 8192, 1, "trtllm-v2")
budget = gib << 30
start = time.process_time()
if way == "draft":
    ranges = bound.request_ranges(budget, seq, seq, SEARCH_LIMIT)
elif way == "probe":
    ranges = request_ranges(lambda b: bound.probe(budget, b, seq, seq), seq, SEARCH_LIMIT)
else:
    top = largest(lambda b: bound.fits(budget, b, seq, seq), SEARCH_LIMIT)
    ranges = [(1, top)] if top else []
print(json.dumps({"seconds": time.process_time() - start, "ranges": ranges}))
"""


def child(way: str, model: str, gib: int, seq: int) -> tuple[float, list[list[int]]]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, way, model, str(gib), str(seq)],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    found = json.loads(done.stdout)
    return float(found["seconds"]), found["ranges"]


def cpu_seconds(argv: list[str], base: tuple[Path, Path] | None = None) -> float:
    """User + system CPU of one ``python argv`` process, from its rusage at exit; ``base``:
    (the other tree, the folder whose ``kvgen`` links to its ``generator/``)."""
    env, cwd = None, ROOT
    if base is not None:
        cwd, env = base[0], {**os.environ, "PYTHONPATH": str(base[1])}
    proc = subprocess.Popen([sys.executable, *argv], cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed")
    return usage.ru_utime + usage.ru_stime


def command(model: str, gib: int, seq: int) -> list[str]:
    return ["-m", "kvgen", "-q", "plan", "gemma3", model, "--gpu-memory", f"{gib}GiB",
            "--speculative", "draft_1b", "--max-seq-len", str(seq)]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--base", type=Path, help="another commit's tree: its command too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as links:
        base = None
        if args.base is not None:
            (Path(links) / "kvgen").symlink_to(args.base.resolve() / "generator")
            base = (args.base.resolve(), Path(links))
        return run(args.repeat, base)


def run(repeat: int, base: tuple[Path, Path] | None) -> int:
    searches: dict[tuple[str, int, int, str], list[float]] = {}
    commands: dict[tuple[str, int, int], list[float]] = {}
    based: dict[tuple[str, int, int], list[float]] = {}
    bare: list[float] = []
    answers: dict[tuple[str, int, int, str], list[list[int]]] = {}
    for _ in range(repeat):  # interleaved: a burst of load slows one run of each
        for plan in PLANS:
            for way in WAYS:
                seconds, ranges = child(way, *plan)
                searches.setdefault((*plan, way), []).append(seconds)
                answers[(*plan, way)] = ranges
            commands.setdefault(plan, []).append(cpu_seconds(command(*plan)))
            if base is not None:
                based.setdefault(plan, []).append(cpu_seconds(command(*plan), base))
            bare.append(cpu_seconds(["-c", "pass"]))
    floor = statistics.median(bare)
    print(f"python -c pass: {floor * 1000:.1f} ms (median of {len(bare)})")
    print(f"{'plan (gemma3, draft_1b)':<26} {'draft':>9} {'probe':>9} {'bisect':>9} "
          f"{'probe/draft':>11} {'draft/bisect':>12} {'command':>9} {'x pass':>7}"
          + (f" {'base':>9} {'x base':>7}" if base else ""))  # fmt: skip
    wrong = []
    for plan in PLANS:
        model, gib, seq = plan
        median = {way: statistics.median(searches[(*plan, way)]) for way in WAYS}
        whole = statistics.median(commands[plan])
        if answers[(*plan, "probe")] != answers[(*plan, "draft")]:
            wrong.append(plan)
        draft, probe, bisect = median["draft"], median["probe"], median["bisect"]
        print(
            f"{model} {gib} GiB S {seq:<6} {draft * 1000:>6.1f} ms {probe * 1000:>6.1f} ms "
            f"{bisect * 1000:>6.1f} ms {probe / draft:>10.2f}x {draft / bisect:>11.2f}x "
            f"{whole * 1000:>6.1f} ms {whole / floor:>6.2f}x"
            + (f" {statistics.median(based[plan]) * 1000:>6.1f} ms "
               f"{whole / statistics.median(based[plan]):>6.2f}x" if base else "")
        )  # fmt: skip
    if wrong:
        print(f"the draft-only search answered differently from the probe's: {wrong}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
