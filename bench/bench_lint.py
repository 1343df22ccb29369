"""Time ``kvgen lint DIR`` on 200 realistic spec files, interpreter start included.

    python bench/bench_lint.py [--files 200] [--repeat 3]

Writes variants of the valid lint-corpus baselines (and of shipped specs, when present) into a
temporary directory, then runs ONE ``kvgen lint`` subprocess over it per repeat and prints the
wall time and the time per file. Target: under 1.5 s wall on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    *sorted((ROOT / "schema" / "families").glob("*.yaml")),
    *sorted((ROOT / "tests" / "lint_corpus").glob("valid_*.yaml")),
]


def variant(text: str, i: int) -> str:
    """A distinct but equally valid spec: renamed family, another block size."""
    lines = []
    for line in text.splitlines():
        if line.startswith("family:"):
            line = f"{line}_v{i}"
        elif line.startswith("tokens_per_block:"):
            line = f"tokens_per_block: {(16, 32, 64, 128)[i % 4]}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def write_specs(directory: Path, count: int) -> None:
    texts = [path.read_text(encoding="utf-8") for path in SOURCES]
    for i in range(count):
        (directory / f"spec_{i:03d}.yaml").write_text(variant(texts[i % len(texts)], i))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        write_specs(directory, args.files)
        command = [sys.executable, "-m", "kvgen", "-q", "lint", str(directory)]
        walls = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            proc = subprocess.run(command, capture_output=True, text=True, cwd=tmp, env=env)
            walls.append(time.perf_counter() - start)
            if proc.returncode != 0:
                print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
                return 1
    best = min(walls)
    print(f"kvgen lint: {args.files} files from {len(SOURCES)} sources, {args.repeat} runs")
    print(f"wall: best {best:.3f} s, median {sorted(walls)[len(walls) // 2]:.3f} s")
    print(f"per file: {best / args.files * 1000:.2f} ms (interpreter start included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
