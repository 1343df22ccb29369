"""CPU time of the quick ``kvgen`` commands, interpreter start included.

    python bench/bench_startup.py [--repeat 15] [--python PATH]

``--python`` runs the commands with another interpreter, e.g. that of a fresh virtual
environment holding only the built wheel (``python -m venv V && V/bin/pip install
dist/kvgen-*.whl``): the figure a user's install sees, without this checkout's editable-install
finder or whatever ``.pth`` files the development interpreter runs at every start.

Runs each command as its own process (as a shell would) and reads the child's user + system
CPU from ``os.wait4``, so the figure is what the process itself cost, not the wall time of a
loaded machine. Prints the median and the best run per command, and the bare interpreter
(``python -c pass``) as the floor every command pays.

Targets: ``--version``, ``--help`` and ``explain CODE`` under 50 ms of CPU; ``lint`` of one
spec under 0.25 s. Medians on the 2-core development machine (Python 3.11, 15 runs):

    command               before (54a882f)   after
    python -c pass             27.8 ms       28.3 ms
    kvgen --version           184.0 ms       35.6 ms
    kvgen --help              181.7 ms       36.6 ms
    kvgen explain KV205       190.4 ms       40.2 ms
    kvgen lint ONE_SPEC       195.1 ms      188.2 ms   (pydantic's import is most of it)

Before, every command built the full parser, whose modules imported the spec models (and so
pydantic), and ``--version`` read the package metadata (importlib.metadata: ~10 ms).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ONE_SPEC = ROOT / "schema" / "families" / "llama3.yaml"

COMMANDS: dict[str, tuple[list[str], float]] = {
    # label: (argv after `python`, target CPU seconds)
    "python -c pass": (["-c", "pass"], 0.0),
    "kvgen --version": (["-m", "kvgen", "--version"], 0.050),
    "kvgen --help": (["-m", "kvgen", "--help"], 0.050),
    "kvgen explain KV205": (["-m", "kvgen", "explain", "KV205"], 0.050),
    "kvgen lint ONE_SPEC": (["-m", "kvgen", "-q", "lint", str(ONE_SPEC)], 0.250),
}


def cpu_seconds(argv: list[str], python: str = sys.executable) -> float:
    """User + system CPU of one ``python argv`` process, from its rusage at exit."""
    proc = subprocess.Popen(
        [python, *argv], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{stderr}")
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--python", default=sys.executable, help="interpreter to run them with")
    args = parser.parse_args()
    over = []
    print(f"{'command':<22} {'median':>9} {'best':>9} {'target':>9}")
    for label, (argv, target) in COMMANDS.items():
        runs = [cpu_seconds(argv, args.python) for _ in range(args.repeat)]
        median = statistics.median(runs)
        shown = f"{target * 1000:.0f} ms" if target else "-"
        print(f"{label:<22} {median * 1000:>6.1f} ms {min(runs) * 1000:>6.1f} ms {shown:>9}")
        if target and median > target:
            over.append(label)
    if over:
        print(f"over target: {', '.join(over)}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
