"""The allocator shim on a CUDA device: ``bench/cuda_smoke.py`` run as written (marked ``gpu``:
skipped without CUDA). Its checks: the pools' bytes the shim reports are what
``torch.cuda.memory_allocated()`` grew by, a K view written on the device reads back, and a
context chunk plus generation steps free every byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.gpu, pytest.mark.torch]


def test_cuda_smoke_on_gemma3_with_a_draft() -> None:
    # bench/cuda_smoke.py's defaults: gemma3_1b with the draft_1b speculative profile.
    script = ROOT / "bench" / "cuda_smoke.py"
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipped" not in proc.stdout  # the plugin skips this test where CUDA is missing
    assert proc.stdout.rstrip().endswith("ok"), proc.stdout
