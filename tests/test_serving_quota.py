"""``quota_for_requests`` (docs/cost-model.md §3, §4) proven by the shim: given that quota, R
requests of S tokens never run out of pages under the adversarial workloads; with one page
less in a pool, some workload does. Every shipped family and fixture, every profile, with a
small S and R = 2 so that it stays fast.
"""

from __future__ import annotations

import pytest
from kvgen.loader import load_family

from tests.diff_report import _longest_window
from tests.workloads import (
    FIXTURE_SPECS,
    ROOT,
    Harness,
    generate,
    prefill,
    render_family,
    run_adversarial,
    shim_errors,
)

REQUESTS = 3


def _combos():
    specs = sorted(FIXTURE_SPECS.glob("*.yaml"))
    for sizing in sorted((ROOT / "generated").glob("*/sizing.py")):
        spec = ROOT / "schema" / "families" / f"{sizing.parent.name}.yaml"
        if spec.exists():
            specs.append(spec)
    return [
        (spec, model.name, profile)
        for spec in specs
        for family in [load_family(spec)]
        for model in family.models
        for profile in family.profiles_for(model.name)
    ]


COMBOS = _combos()
_RENDERED: dict = {}


def _setup(spec, model, profile, tmp_path_factory):
    if spec not in _RENDERED:
        out = tmp_path_factory.mktemp("serving")
        _RENDERED[spec] = render_family(load_family(spec), spec.read_bytes(), out, spec.name)
    rendered = _RENDERED[spec]
    tpb = rendered.family.tokens_per_block
    native = rendered.family.model(model).max_seq_len
    # Long enough that every SWA window's stale boundary passes every page alignment (the
    # pools hold pages(w, H) per request, reached only past the window), no longer.
    head = rendered.sizing.headroom(profile)
    longest = _longest_window(rendered, model)
    seq_len = 2 * tpb + 5 if not longest else longest + head + 2 * tpb + 5
    return rendered, {
        "max_batch_size": REQUESTS,
        "max_num_tokens": tpb + 3,
        "max_seq_len": min(native, seq_len),
        "semantics": "exact",
    }


def _quota(rendered, model, profile, params):
    return rendered.sizing.quota_for_requests(
        model,
        requests=params["max_batch_size"],
        seq_len=params["max_seq_len"],
        speculative=profile,
        max_num_tokens=params["max_num_tokens"],
    )


def serve(h: Harness, accept: int) -> None:
    """All R requests together: prompts of S-1 tokens chunked by N, then generation steps
    to S with ``accept`` drafts accepted; every request peaks at capacity S-1+H at once."""
    shim = h.shim
    rids = list(range(shim.max_batch_size))
    for rid in rids:
        h.add(rid)
    prefill(h, dict.fromkeys(rids, shim.max_seq_len - 1))
    generate(h, rids, shim.max_seq_len, lambda rid, step: accept)
    for rid in rids:
        h.free(rid)


def _run(rendered, model, profile, params, quota, adversarial=True):
    shim = rendered.allocator.KVCacheShim(
        model, speculative=profile, quota_bytes=quota, device="meta", **params
    )
    harness = Harness(shim, rendered.sizing, params)
    serve(harness, 0)
    serve(harness, shim.draft_slots)
    if adversarial:
        run_adversarial(harness, thorough=False)
    return shim


@pytest.mark.parametrize(
    ("spec", "model", "profile"), COMBOS, ids=[f"{c[0].stem}-{c[1]}-{c[2]}" for c in COMBOS]
)
def test_quota_for_requests_is_enough_and_least(tmp_path_factory, spec, model, profile):
    rendered, params = _setup(spec, model, profile, tmp_path_factory)
    quota = _quota(rendered, model, profile, params)
    shim = _run(rendered, model, profile, params, quota)  # never runs out of pages
    assert shim.quota_bytes() == quota
    errors = shim_errors(shim)
    tpb, seq_len = rendered.family.tokens_per_block, params["max_seq_len"]
    head = rendered.sizing.headroom(profile)
    for manager, bytes_ in quota.items():
        if "full" not in shim.managers[manager].pools:
            continue  # nothing grows with T: see README "serving quota"
        # The full pool holds exactly R * ceil((S - 1 + H)/tpb) pages: one byte less of
        # quota plans one page less, and R requests at their last step run out.
        pages = REQUESTS * -(-(seq_len - 1 + head) // tpb)
        assert shim.managers[manager].pools["full"].pages == pages
        less = {**quota, manager: bytes_ - 1}
        with pytest.raises(errors.OutOfPagesError):
            _run(rendered, model, profile, params, less, adversarial=False)
