"""The issue 10 repros of page-exact "exact" (docs/cost-model.md §3, §4), derived by hand.

The old static answers (an affine cost with the rounding terms folded into the intercept) are
quoted beside each case: they were below the pools the shim builds, and their inverse promised
tokens the shim could not hold.
"""

from __future__ import annotations

import pytest
from kvgen._spec.loader import load_family

from tests.workloads import FIXTURE_SPECS, render_family

PAGES = FIXTURE_SPECS / "pages"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("pages")
    cache = {}

    def get(stem: str):
        if stem not in cache:
            spec = PAGES / f"{stem}.yaml"
            cache[stem] = render_family(load_family(spec), spec.read_bytes(), out, spec.name)
        return cache[stem]

    return get


def _both(r, model: str, tokens: int | None = None, quota: int | None = None, **params):
    """(static, runtime) quota bytes for ``tokens``, or tokens held by ``quota``."""
    kw = dict(semantics="exact", **params)
    if tokens is not None:
        shim = r.allocator.KVCacheShim(model, max_tokens=tokens, device="meta", **kw)
        return r.sizing.quota_from_max_tokens(model, tokens, **kw), shim.quota_bytes()
    shim = r.allocator.KVCacheShim(model, quota_bytes=quota, device="meta", **kw)
    return r.sizing.max_tokens_from_quota(model, {"target": quota}, **kw), shim.max_tokens()


MQA = dict(max_batch_size=2, max_num_tokens=100, max_seq_len=2048)


def test_mqa_quota_is_whole_pages(rendered):
    # b = 4 layers * 2 * 1 head * 128 * 2 B = 2,048 B/token; page = 64 * 2,048 = 131,072.
    # Full pool: ceil((T + B*(tpb-1))/tpb) = ceil((101 + 2*63)/64) = ceil(227/64) = 4 pages
    # = 524,288 B (the old affine answer was 227 * 2,048 = 464,896).
    assert _both(rendered("fx_mqa_pages"), "mqa", tokens=101, **MQA) == (
        {"target": 524_288},
        {"target": 524_288},
    )


def test_mqa_tokens_of_a_quota(rendered):
    # 464,896 B holds floor(464,896 / 131,072) = 3 pages; the largest T with
    # ceil((T + 126)/64) <= 3 is 3*64 - 126 = 66 (the old inverse said 101).
    assert _both(rendered("fx_mqa_pages"), "mqa", quota=464_896, **MQA) == (
        {"target": 66},
        {"target": 66},
    )
    # One byte short of 4 pages still holds 3 pages; 4 pages hold 4*64 - 126 = 130.
    assert _both(rendered("fx_mqa_pages"), "mqa", quota=524_287, **MQA)[0] == {"target": 66}
    assert _both(rendered("fx_mqa_pages"), "mqa", quota=524_288, **MQA)[0] == {"target": 130}


SWA = dict(max_batch_size=5, max_num_tokens=100, max_seq_len=512)


def test_swa_quota_is_whole_pages(rendered):
    # b = 2 * 25 * 2 B = 100 B/token, page 3,200 B. H = 1, E = 0: pages(126, 1) =
    # ceil(125/32) + 1 = 5 = pages(126, 0) = ceil(124/32) + 1, so no spare page: a chunk
    # rounds by min(B, N)*(tpb-1) = 155 tokens. Pool: B*5 + ceil((min(T, N) + 155)/32)
    # = 25 + ceil(255/32) = 25 + 8 = 33 pages = 105,600 B (old affine: 1,055 * 100 = 105,500).
    assert _both(rendered("fx_swa_pages"), "local", tokens=101, **SWA) == (
        {"target": 105_600},
        {"target": 105_600},
    )


def test_swa_tokens_of_a_quota(rendered):
    # 105,500 B = 32 pages + 3,100 B: 32 - 25 = 7 context pages, so min(T, N) + 155 <= 224:
    # T = 69 (the old inverse said None, unbounded). 33 pages hold every T: None.
    assert _both(rendered("fx_swa_pages"), "local", quota=105_500, **SWA) == (
        {"target": 69},
        {"target": 69},
    )
    assert _both(rendered("fx_swa_pages"), "local", quota=105_600, **SWA) == (
        {"target": None},
        {"target": None},
    )


MLA = dict(max_batch_size=3, max_num_tokens=100, max_seq_len=2048)


def test_mla_tokens_of_a_quota(rendered):
    # b = 2 layers * (512 + 64) * 1 B = 1,152 B/token, page 36,864 B, rounding 3*31 = 93.
    # The old affine quota of T = 1,543 was (1,543 + 93) * 1,152 = 1,884,672, and its inverse
    # 1,543; that quota is 51 whole pages (51.125), which hold 51*32 - 93 = 1,539 tokens.
    assert _both(rendered("fx_mla_pages"), "latent", quota=1_884_672, **MLA) == (
        {"target": 1_539},
        {"target": 1_539},
    )
    # And T = 1,543 needs ceil(1,636/32) = 52 pages = 1,916,928 B.
    assert _both(rendered("fx_mla_pages"), "latent", tokens=1_543, **MLA) == (
        {"target": 1_916_928},
        {"target": 1_916_928},
    )


def test_cost_terms_bound_the_page_rounding(rendered):
    # exact quota(T) - (slope*T + intercept restricted to T) is the rounding of each growing
    # pool to whole pages: at most tpb-1 tokens of that pool. MQA: 4 pages (524,288) vs the
    # affine 464,896: 59,392 B = 29 tokens * 2,048, and 29 <= 63.
    r = rendered("fx_mqa_pages")
    terms = r.sizing.cost_terms("mqa", semantics="exact", **MQA)["target"]
    assert terms["full_page_rounding"] == 2 * 63 * 2_048
    assert terms["pool_page_rounding"] == 63 * 2_048
