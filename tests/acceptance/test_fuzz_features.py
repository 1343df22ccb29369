"""A bounded, deterministic slice of ``bench/fuzz_features.py``: structural mutants of the
newer spec features through lint, render, the generated sizing functions and a shim driven by
hostile calls.

The full harness (``python bench/fuzz_features.py --minutes 10``) runs the same mutants for
longer.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parents[2] / "bench" / "fuzz_features.py"
LIMIT = 120  # mutants: a few seconds on an idle machine


def _harness():
    module = sys.modules.get("kvgen_bench_fuzz_features")
    if module is None:
        spec = importlib.util.spec_from_file_location("kvgen_bench_fuzz_features", FUZZ)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def stats():
    harness = _harness()
    start = time.monotonic()
    result = harness.fuzz(55, seed=1, limit=LIMIT)
    result.wall_s = time.monotonic() - start
    return result


def test_the_slice_is_deterministic_and_bounded(stats):
    harness = _harness()
    first = [harness.input_at(1, i) for i in (0, 7, LIMIT - 1)]
    assert first == [harness.input_at(1, i) for i in (0, 7, LIMIT - 1)]
    assert stats.tried == LIMIT
    assert stats.wall_s < 60


def test_the_slice_reaches_generated_code_and_the_shim(stats):
    # Mutants that stay lint-clean are generated and driven; a slice that generated nothing
    # would check nothing.
    assert stats.generated >= LIMIT // 10
    assert stats.generated == stats.clean
    assert stats.shim_calls >= 40 * stats.generated


def test_the_slice_finds_nothing(stats):
    assert [(f.kind, f.name, f.detail[-300:]) for f in stats.findings] == []


def test_the_mutants_put_byte_shapes_on_cross_kinds():
    # Issue 29: the feature fuzzer covers cross kinds with byte shapes (raw bytes per token, or
    # extra bytes beside the heads), on a new cross kind and on the one a spec already has.
    import copy
    import random

    harness = _harness()
    vision = dict(harness.seeds())["schema/families/llama3_2_vision.yaml"]
    rng = random.Random(0)
    shapes = set()
    for _ in range(20):
        spec = copy.deepcopy(vision)
        harness._cross_bytes(rng, spec)
        kind = spec["models"][0]["layer_kinds"]["cross_attn"]
        assert kind["attention"] == "cross"
        shapes |= {key for key in ("bytes_per_token", "extra_bytes_per_token") if key in kind}
    assert shapes == {"bytes_per_token", "extra_bytes_per_token"}
    made = [harness._byte_shape(random.Random(i)) for i in range(50)]
    assert any("bytes_per_token" in s for s in made) and any(
        "extra_bytes_per_token" in s for s in made
    )
