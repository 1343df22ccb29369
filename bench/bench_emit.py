"""Whole-process time of ``kvgen plan --emit`` on shipped families (target: under 0.3 s).

    python bench/bench_emit.py [--repeat 15]

Each command runs as its own process, as a shell would run it; the figure per command is the
median wall time and the median user + system CPU (``os.wait4``), so a loaded machine shows in
the wall time but not in the CPU. ``kvgen plan --emit`` reaches the generated module without
kvgen's spec stack (pydantic), which the plain ``kvgen plan`` still loads.

Medians of 15 runs on the shared 2-core development machine (Python 3.11, load average 12):

    command                                   cpu        wall (inflated by the load)
    plan --emit vllm (llama3_1_70b, tp 4)     126.2 ms   379.5 ms
    plan --emit sglang (gemma3_27b)           123.5 ms   331.9 ms
    plan --emit trtllm --format yaml          106.2 ms   319.8 ms
    plan (no --emit)                          246.4 ms   754.1 ms
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 0.3
COMMANDS = {
    "plan --emit vllm (llama3_1_70b, H100, tp 4)": [
        "plan", "llama3", "llama3_1_70b", "--gpu", "H100-80GB", "--weights", "35GiB",
        "--tp-size", "4", "--max-batch-size", "64", "--emit", "vllm",
    ],
    "plan --emit sglang (gemma3_27b, 60GiB)": [
        "plan", "gemma3", "gemma3_27b", "--gpu-memory", "60GiB", "--emit", "sglang",
    ],
    "plan --emit trtllm --format yaml (qwen3_30b_a3b)": [
        "plan", "qwen3_moe", "qwen3_30b_a3b", "--gpu", "H100-80GB", "--weights", "30GiB",
        "--tp-size", "2", "--emit", "trtllm", "--format", "yaml",
    ],
    "plan (no --emit, for comparison)": ["plan", "gemma3", "gemma3_27b", "--gpu-memory", "60GiB"],
}  # fmt: skip


def run_once(args: list[str]) -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kvgen", "-q", *args], cwd=ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"kvgen {' '.join(args)} failed: {proc.stderr.read().decode()}")
    proc.stderr.close()
    return wall, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    repeat = parser.parse_args().repeat
    slow = False
    for label, args in COMMANDS.items():
        runs = [run_once(args) for _ in range(repeat)]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        emit = "--emit" in args
        slow |= emit and cpu > TARGET
        mark = ("ok" if cpu <= TARGET else "SLOW") if emit else ""
        print(f"{label:52s} wall {wall * 1e3:6.1f} ms  cpu {cpu * 1e3:6.1f} ms  {mark}")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
