"""A bounded, deterministic slice of ``bench/fuzz.py``: load + lint + render mutated specs.

The full harness (``python bench/fuzz.py --minutes 10``) runs the same mutations for longer.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parents[2] / "bench" / "fuzz.py"
LIMIT = 60  # inputs: a few seconds in one worker; each crash costs a worker start-up


def _harness():
    spec = importlib.util.spec_from_file_location("kvgen_bench_fuzz", FUZZ)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def stats():
    harness = _harness()
    start = time.monotonic()
    result = harness.fuzz_isolated(120, seed=1, limit=LIMIT)
    result.wall_s = time.monotonic() - start
    return result


def test_the_slice_is_deterministic_and_bounded(stats):
    harness = _harness()
    first = [harness.input_at(1, i) for i in (0, 7, LIMIT - 1)]
    assert first == [harness.input_at(1, i) for i in (0, 7, LIMIT - 1)]
    assert stats.tried == LIMIT
    assert stats.wall_s < 60


def test_no_hang_and_every_diagnostic_is_positioned(stats):
    assert [f for f in stats.findings if f.kind in ("hang", "unpositioned")] == []


def test_render_and_generate_never_fail_on_a_spec_that_lints_clean(stats):
    # A traceback outside the loader (lint rules, render, compile) is this harness's bug class.
    outside = [
        f
        for f in stats.findings
        if f.kind == "traceback" and "loader.py" not in f.detail and "yaml" not in f.detail
    ]
    assert outside == []


def test_the_slice_finds_nothing(stats):
    assert [(f.kind, f.name, f.detail[-200:]) for f in stats.findings] == []
