"""The diff suite: every generated family, model, speculative profile, both semantics and a
grid of runtime parameters; the runtime bytes of the allocator shim under adversarial
workloads never exceed the static cost of the sizing module (docs/cost-model.md §3-4).

Run with ``-s`` to print the diff table (also ``python -m tests.diff_report``).
"""

from __future__ import annotations

import pytest
from kvgen._spec.loader import load_family

from tests.diff_report import Row, format_table, param_sets, quota_pair, run_case
from tests.workloads import FIXTURE_SPECS, ROOT

FIXTURE_TPBS = (16, 32, 64)
ROWS: list[Row] = []


def _combos():
    """(family name, model, profile) known without rendering: fixtures x tpb, then shipped."""
    out = []
    for path in sorted(FIXTURE_SPECS.glob("*.yaml")):
        family = load_family(path)
        for tpb in FIXTURE_TPBS:
            for model in family.models:
                for profile in family.profiles_for(model.name):
                    out.append((f"{family.family}_t{tpb}", model.name, profile))
    for sizing in sorted((ROOT / "generated").glob("*/sizing.py")):
        spec = ROOT / "schema" / "families" / f"{sizing.parent.name}.yaml"
        if spec.exists():
            family = load_family(spec)
            for model in family.models:
                for profile in family.profiles_for(model.name):
                    out.append((family.family, model.name, profile))
    return out


COMBOS = _combos()


@pytest.fixture(scope="module", autouse=True)
def _print_table():
    yield
    if ROWS:
        print("\n" + format_table(ROWS))


@pytest.mark.parametrize(("family", "model", "profile"), COMBOS, ids=["-".join(c) for c in COMBOS])
def test_runtime_never_exceeds_static_cost(rendered_families, family, model, profile):
    rendered = rendered_families(family)
    thorough = family.endswith("_t32")  # every acceptance pattern at one block size
    for name, params in param_sets(rendered, model, profile).items():
        ROWS.extend(run_case(rendered, model, profile, name, params, thorough))


@pytest.mark.parametrize(("family", "model", "profile"), COMBOS, ids=["-".join(c) for c in COMBOS])
def test_static_quota_equals_runtime_quota(rendered_families, family, model, profile):
    rendered = rendered_families(family)
    sizing, tpb = rendered.sizing, rendered.family.tokens_per_block
    for params in param_sets(rendered, model, profile).values():
        aligned = params["max_num_tokens"] % tpb == 0
        for tokens in (0, 3 * tpb, 16 * tpb, 16 * tpb + 5, 1000 * tpb):
            static, runtime = quota_pair(rendered, model, profile, params, tokens)
            shim = rendered.allocator.KVCacheShim(
                model, speculative=profile, max_tokens=tokens, device="meta", **params
            )
            one_page = {
                m: sum(p.page_bytes for p in manager.pools.values())
                for m, manager in shim.managers.items()
            }
            for manager in static:
                slack = runtime[manager] - static[manager]
                assert 0 <= slack <= max(0, one_page[manager] - 1), (params, tokens, manager)
                if aligned and tokens % tpb == 0:
                    assert slack == 0, (params, tokens, manager)
                    static_tokens = sizing.max_tokens_from_quota(
                        model, {manager: runtime[manager]}, speculative=profile, **params
                    )[manager]
                    # With slope 0 a quota of quota(N) fits every T >= N: both say None.
                    runtime_tokens = shim.max_tokens()[manager]
                    assert static_tokens == runtime_tokens, (params, tokens, manager)


# "exact" quota == the shim's whole-page pools, both directions: tests/test_diff_exact.py.
