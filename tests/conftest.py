"""Shared fixtures. The allocator/diff helpers live in tests/workloads.py (append freely)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs on 2 busy cores: wall-clock deadlines would make property tests flaky, and a
# derandomized run reproduces exactly what CI saw.
settings.register_profile("kvgen", deadline=None, derandomize=True)
settings.load_profile("kvgen")

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `tests.workloads` importable under plain `pytest` too
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def rendered_families(tmp_path_factory):
    """Lazily render-and-import families by name: ``rendered_families(name)``.

    Names are fixture families with a tokens_per_block suffix (``fx_mixed_t32``) or shipped
    family names (``gemma3``); each is rendered once per session into a temporary directory.
    """
    from kvgen.loader import load_family

    from tests.workloads import FIXTURE_SPECS, render_family, with_tokens_per_block

    out = tmp_path_factory.mktemp("rendered")
    cache = {}

    def get(name: str):
        if name not in cache:
            stem, _, tpb = name.rpartition("_t")
            fixture = FIXTURE_SPECS / f"{stem}.yaml"
            if fixture.exists() and tpb.isdigit():
                family = with_tokens_per_block(load_family(fixture), int(tpb))
                cache[name] = render_family(family, fixture.read_bytes(), out, fixture.name)
            else:
                spec = ROOT / "schema" / "families" / f"{name}.yaml"
                source = f"schema/families/{spec.name}"
                cache[name] = render_family(load_family(spec), spec.read_bytes(), out, source)
        return cache[name]

    return get
