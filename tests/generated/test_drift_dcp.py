"""Drift regressions of decode context parallelism (docs/cost-model.md §9): each plausible way
a static estimate gets DCP wrong makes the diff fail when the static side carries the bug, and
pass when it does not. DeepSeek-V3 (MLA, 61 layers of 1152 B) at tokens_per_block 8 so that
every alignment of a DCP page (8 * 8 = 64 tokens at dcp_size 8) is swept quickly."""

from __future__ import annotations

import pytest
from kvgen._spec.loader import load_family

from tests.workloads import (
    ROOT,
    DiffError,
    Harness,
    aligned_batch_sweep,
    alignment_sweep,
    render_family,
    with_tokens_per_block,
)

TPB, DCP = 8, 8
SPAN = TPB * DCP  # tokens one page of the block table covers
SLOPE = 61 * 1152  # bytes per token on every TP rank without DCP (MLA is never split by tp)
PARAMS = {"max_batch_size": 3, "max_num_tokens": 11, "max_seq_len": 2 * SPAN + 5}
PARAMS |= {"tp_size": 8, "dcp_size": DCP}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    spec = ROOT / "schema" / "families" / "deepseek_v3.yaml"
    family = with_tokens_per_block(load_family(spec), TPB)
    return render_family(family, spec.read_bytes(), tmp_path_factory.mktemp("dcp"), spec.name)


def harness(rendered, rank: int) -> Harness:
    shim = rendered.allocator.KVCacheShim(
        "deepseek_v3",
        max_tokens=PARAMS["max_batch_size"] * (PARAMS["max_seq_len"] + 2),
        semantics="exact",
        device="meta",
        reserve_pages=8,
        dcp_rank=rank,
        **PARAMS,
    )
    return Harness(shim, rendered.sizing, PARAMS)


def sweep(h: Harness) -> None:
    aligned_batch_sweep(h)
    alignment_sweep(h, lambda rid, step: 0, rid_base=100_000)


@pytest.mark.parametrize("rank", [0, DCP - 1])
def test_pages_rounded_per_rank_in_tpb_local_tokens(rendered, rank):
    # The bug: each rank rounds its own share to pages of tpb tokens, so the exact intercept
    # is B*(tpb-1) rank tokens = B*(tpb-1)*SLOPE bytes. But the block table is shared: a page
    # spans tpb*d tokens of the request and every rank holds ceil(c/(tpb*d)) pages, i.e.
    # B*(tpb*d-1) request tokens = B*(tpb*d-1)*SLOPE/d bytes. Per request the bug is short by
    # (d-1)/d * SLOPE: a request one token past a page (c = k*64 + 1) holds (k+1)*8*SLOPE B
    # on every rank (even the last, which holds none of that token) while the bug allows
    # SLOPE/8*(k*64 + 1) + 7*SLOPE = (k+1)*8*SLOPE - SLOPE*7/8.
    slope = SLOPE // DCP
    assert rendered.sizing.cache_costs("deepseek_v3", **PARAMS)["target"].slope == slope == 8784
    batch = PARAMS["max_batch_size"]
    good = harness(rendered, rank)
    sweep(good)
    assert good.stats["target"].min_slack["exact"] >= 0
    buggy = harness(rendered, rank)
    buggy.cost_override["exact"] = lambda m, t: slope * t + batch * (TPB - 1) * SLOPE
    with pytest.raises(DiffError, match="target uses"):
        sweep(buggy)


def test_replicated_cost_ignores_dcp(rendered):
    # The bug: sizing without dcp_size charges every rank the whole history (d copies), so
    # the quota of T is d times the runtime's and a budget holds d times fewer tokens.
    kw = {**PARAMS, "semantics": "exact"}
    tokens = 40 * SPAN  # page-aligned: the whole-page pools hold exactly T
    shim = rendered.allocator.KVCacheShim("deepseek_v3", max_tokens=tokens, device="meta", **kw)
    right = rendered.sizing.quota_from_max_tokens("deepseek_v3", tokens, **kw)
    wrong = rendered.sizing.quota_from_max_tokens("deepseek_v3", tokens, **{**kw, "dcp_size": 1})
    assert shim.quota_bytes() == right
    # (40*64 + 3*7)/8 -> 323 pages of 8 * 70272 at dcp 1; (40*64 + 3*63)/64 -> 43 at dcp 8.
    assert wrong["target"] == 323 * TPB * SLOPE and right["target"] == 43 * TPB * SLOPE
    assert wrong != shim.quota_bytes()
    held = rendered.allocator.KVCacheShim(
        "deepseek_v3", quota_bytes=right, device="meta", **kw
    ).max_tokens()
    assert rendered.sizing.max_tokens_from_quota("deepseek_v3", right, **kw) == held
    short = rendered.sizing.max_tokens_from_quota("deepseek_v3", right, **{**kw, "dcp_size": 1})
    assert short["target"] * DCP < held["target"] + DCP * SPAN  # about d times fewer


def test_block_table_width_counted_in_tpb_pages(rendered):
    # The bug: max_blocks_per_seq = ceil((S + H)/tpb) rounded to 4 under DCP, d times the
    # width of the table the engines build: ceil((133 + 1)/64) = 3 -> 4 entries, not
    # ceil(134/8) = 17 -> 20.
    shim = rendered.allocator.KVCacheShim("deepseek_v3", max_tokens=0, device="meta", **PARAMS)
    seq = PARAMS["max_seq_len"]
    assert shim.max_blocks_per_seq == 4
    assert rendered.sizing.max_blocks_per_seq("deepseek_v3", max_seq_len=seq, dcp_size=DCP) == 4
    assert rendered.sizing.max_blocks_per_seq("deepseek_v3", max_seq_len=seq) == 20
