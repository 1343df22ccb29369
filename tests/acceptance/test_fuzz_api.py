"""A bounded, deterministic slice of ``bench/fuzz_api.py``: every public sizing and engine
function of four shipped families, called with hostile arguments (issue 29, C6).

The full harness (``python bench/fuzz_api.py --minutes 10``) runs every family for longer.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parents[2] / "bench" / "fuzz_api.py"
FAMILIES = ["llama3", "qwen3_next", "gemma3", "llama3_2_vision"]
LIMIT = 3000  # cases: a few seconds


def _harness():
    module = sys.modules.get("kvgen_bench_fuzz_api")
    if module is None:
        spec = importlib.util.spec_from_file_location("kvgen_bench_fuzz_api", FUZZ)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def stats():
    return _harness().fuzz(120, seed=1, limit=LIMIT, families=FAMILIES)


def test_the_slice_calls_every_function_and_refuses_hostile_arguments(stats):
    # Each case is a plausible call and that call with hostile arguments: most of the second
    # kind are refused (a few hostile picks equal the plausible value and answer).
    assert stats.calls >= 2 * LIMIT
    assert stats.refused > LIMIT // 2


def test_the_slice_finds_nothing(stats):
    assert [(f.kind, f.call, f.detail[-300:]) for f in stats.findings] == []
