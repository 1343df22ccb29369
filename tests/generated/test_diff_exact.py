"""Page-exact "exact" semantics (docs/cost-model.md §3, §4): the static quota of a T is the
bytes of the pools the shim builds for T, and the T a quota holds is the T the shim plans for
that quota, to the byte and to the token, for every shipped family, every fixture (the issue
10 repros under tests/fixtures/specs/pages/ included), every profile and a parameter grid
(page-aligned and unaligned max_num_tokens, T on both sides of N, tp/pp, scratch and block
reuse, the overlap slack). The generic ``kvgen.costmodel`` answers the same.
"""

from __future__ import annotations

import pytest
from kvgen._spec.loader import load_family

from tests.diff_report import param_sets
from tests.reference import costmodel
from tests.workloads import FIXTURE_SPECS, ROOT, render_family

PAGE_FIXTURES = FIXTURE_SPECS / "pages"


def _combos():
    """(spec path, model, profile) of every fixture (at its own tpb) and shipped family."""
    specs = sorted(FIXTURE_SPECS.glob("*.yaml")) + sorted(PAGE_FIXTURES.glob("*.yaml"))
    for sizing in sorted((ROOT / "generated").glob("*/sizing.py")):
        spec = ROOT / "schema" / "families" / f"{sizing.parent.name}.yaml"
        if spec.exists():
            specs.append(spec)
    out = []
    for spec in specs:
        family = load_family(spec)
        for model in family.models:
            for profile in family.profiles_for(model.name):
                out.append((spec, model.name, profile))
    return out


COMBOS = _combos()
_RENDERED: dict = {}


def _rendered(spec, tmp_path_factory):
    if spec not in _RENDERED:
        out = tmp_path_factory.mktemp("exact")
        _RENDERED[spec] = render_family(load_family(spec), spec.read_bytes(), out, spec.name)
    return _RENDERED[spec]


def _token_grid(tpb: int, chunk: int) -> list[int]:
    """T = 0, around one page, on both sides of N, and far beyond N, aligned and not."""
    return sorted({0, 1, tpb - 1, tpb, chunk - 1, chunk, chunk + 1, 5 * tpb + 3, 64 * tpb})


@pytest.mark.parametrize(
    ("spec", "model", "profile"), COMBOS, ids=[f"{c[0].stem}-{c[1]}-{c[2]}" for c in COMBOS]
)
def test_exact_static_equals_runtime_both_directions(tmp_path_factory, spec, model, profile):
    rendered = _rendered(spec, tmp_path_factory)
    sizing, family = rendered.sizing, rendered.family
    tpb = family.tokens_per_block
    for params in param_sets(rendered, model, profile).values():
        kw = dict(speculative=profile, semantics="exact", **params)
        generic = costmodel.cache_costs(
            family, model, profile, costmodel.RuntimeParams(semantics="exact", **params)
        )
        previous: dict[str, int] = {}
        for tokens in _token_grid(tpb, params["max_num_tokens"]):
            static = sizing.quota_from_max_tokens(model, tokens, **kw)
            shim = rendered.allocator.KVCacheShim(model, max_tokens=tokens, device="meta", **kw)
            assert static == shim.quota_bytes(), (params, tokens)
            assert static == {m: c.quota(tokens) for m, c in generic.items()}, (params, tokens)
            for manager, quota in static.items():
                assert quota >= previous.get(manager, 0), (params, tokens)  # monotone
                previous[manager] = quota
            # The inverse at the quota of T, one byte below and one byte above.
            for delta in (-1, 0, 1):
                quota = {m: q + delta for m, q in static.items()}
                if any(
                    q < sizing.quota_from_max_tokens(model, 0, **kw)[m] for m, q in quota.items()
                ):
                    continue  # below the pools of zero tokens: the shim refuses to build
                held = rendered.allocator.KVCacheShim(
                    model, quota_bytes=quota, device="meta", **kw
                ).max_tokens()
                assert sizing.max_tokens_from_quota(model, quota, **kw) == held, (params, quota)
                generic_held = {m: generic[m].max_tokens(q) for m, q in quota.items()}
                assert generic_held == held, (params, quota)
                for t in held.values():
                    if t is not None and delta >= 0:
                        assert t >= tokens, (params, quota)  # quota(T) holds T
