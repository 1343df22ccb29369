"""CPU time of the quick ``kvgen`` commands, interpreter start included, as a ratio to the bare
interpreter's start measured in the same run.

    python bench/bench_startup.py [--repeat 15] [--python PATH]

``--python`` runs the commands with another interpreter, e.g. that of a fresh virtual
environment holding only the built wheel (``python -m venv V && V/bin/pip install
dist/kvgen-*.whl``): the figure a user's install sees, without this checkout's editable-install
finder or whatever ``.pth`` files the development interpreter runs at every start.

Runs each command as its own process (as a shell would) and reads the child's user + system
CPU from ``os.wait4``, so the figure is what the process itself cost, not the wall time of a
loaded machine. Prints the median and the best run per command, and each median as a ratio
to the median of ``python -c pass`` (the floor every command pays, measured between the
commands): on a loaded machine both grow alike, so the ratio holds where milliseconds do not.

Targets (issue 28): ``--version``, ``--help`` and ``explain CODE`` within 3x ``python -c
pass``; no pydantic imported by a command that validates no spec (``--version``, ``--help``,
``explain``, ``plan`` of a shipped model, ``models``: checked with ``-X importtime``);
``lint`` of one spec within 9x (its 0.25 s against the 28 ms bare start of the
development machine, where pydantic's import is most of it); ``plan`` of a shipped model is
shown (it imports no spec model, rule, renderer or writer: tests/cli/test_startup.py). Exit
status 1 only when a ratio target is missed. Medians on the 2-core development machine
(Python 3.11, 15 runs) before issue 23 (54a882f) and after:

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

BARE = "python -c pass"
COMMANDS: dict[str, tuple[list[str], float]] = {
    # label: (argv after `python`, target: at most this many times the bare start; 0: none)
    BARE: (["-c", "pass"], 0.0),
    "kvgen --version": (["-m", "kvgen", "--version"], 3.0),
    "kvgen --help": (["-m", "kvgen", "--help"], 3.0),
    "kvgen explain KV205": (["-m", "kvgen", "explain", "KV205"], 3.0),
    "kvgen lint ONE_SPEC": (["-m", "kvgen", "-q", "lint", str(ONE_SPEC)], 9.0),
    "kvgen plan MODEL": (
        ["-m", "kvgen", "-q", "plan", "llama3", "llama3_1_8b", "--gpu-memory", "20GiB"],
        0.0,
    ),
    "kvgen models": (["-m", "kvgen", "-q", "models"], 0.0),
}
# The commands that validate no spec, so import no pydantic (its import alone is several times
# the bare start): each is run once more with ``-X importtime`` and a pydantic module in its
# import list is a miss. lint validates its spec; compare, generate and diff do too.
NO_SPEC = ("kvgen --version", "kvgen --help", "kvgen explain KV205", "kvgen plan MODEL",
           "kvgen models")  # fmt: skip


def imports_pydantic(argv: list[str], python: str = sys.executable) -> bool:
    """Whether ``python argv`` imports pydantic (``-X importtime``'s list on stderr)."""
    done = subprocess.run(
        [python, "-X", "importtime", *argv], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return any(line.rsplit("|", 1)[-1].strip().split(".")[0] == "pydantic"
               for line in done.stderr.splitlines())  # fmt: skip


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
    runs: dict[str, list[float]] = {label: [] for label in COMMANDS}
    for _ in range(args.repeat):  # interleaved: a burst of load slows one run of each
        for label, (argv, _target) in COMMANDS.items():
            runs[label].append(cpu_seconds(argv, args.python))
            runs[BARE].append(cpu_seconds(COMMANDS[BARE][0], args.python))
    bare = statistics.median(runs[BARE])
    print(f"{'command':<22} {'median':>9} {'best':>9} {'x bare':>8} {'target':>8}  pydantic")
    for label, (argv, target) in COMMANDS.items():
        median = statistics.median(runs[label])
        ratio = median / bare
        shown = f"{target:.0f}x" if target else "-"
        pydantic = "-" if label == BARE else imports_pydantic(argv, args.python)
        verdict = "imported" if pydantic is True else "no" if pydantic is False else "-"
        if pydantic is True and label in NO_SPEC:
            verdict += " (MISSED: validates no spec)"
            over.append(f"{label} (pydantic)")
        print(
            f"{label:<22} {median * 1000:>6.1f} ms {min(runs[label]) * 1000:>6.1f} ms "
            f"{ratio:>7.2f}x {shown:>8}  {verdict}"
        )
        if target and ratio > target:
            over.append(label)
    if over:
        print(f"over target: {', '.join(over)}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
