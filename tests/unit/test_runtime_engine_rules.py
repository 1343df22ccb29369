"""The shim's TensorRT-LLM V2 rules (docs/cost-model.md "Verified against the engine"): a
suspended request keeps its pages, block reuse keeps committed blocks as an evictable cache,
and the resume watermark is checked before a resume and at admission.

One full-attention layer of 1 KV head x head_dim 16 in bf16: 2 * 16 * 2 = 64 B per token, a
page of tpb = 16 tokens is 1,024 B; the full pool is pinned to 20 pages.
"""

from __future__ import annotations

import pytest
from kvgen.runtime import allocator as rt

PAGE = 16 * 64


def shim(**kw) -> rt.KVCacheShim:
    kind = rt.LayerKind("full", kv_heads=1, head_dim=16, dtype="bf16")
    model = rt.ModelTable(max_seq_len=4096, stack=rt.LayerStack(1, ("g",), {"g": kind}))
    tables = rt.FamilyTables(family="tiny", tokens_per_block=16, models={"m": model})
    params = dict(max_batch_size=4, max_num_tokens=512, max_seq_len=1024, max_tokens=4096)
    params.update(kw)
    return rt.KVCacheShim(tables, "m", device="meta", pool_pages={("target", "full"): 20}, **params)


def test_admission_passes_the_watermark():
    s = shim(max_util_for_resume=0.5)
    s.add_request("a")
    s.context_chunk("a", 176)  # 176 / 16 = 11 pages: utilisation 11/20 = 0.55 > 0.5
    with pytest.raises(rt.ResumeRefusedError) as info:
        s.add_request("b")  # the engine creates it suspended; its resume is refused
    assert info.value.pool == "full" and info.value.utilisation == 11 / 20
    assert s.requests == ("a",)


def test_a_suspended_request_keeps_its_pages_as_evictable():
    s = shim()
    s.add_request("a")
    s.context_chunk("a", 176)
    s.suspend("a")
    pool = s.pool("full")
    assert pool.used == 11 and pool.live == 0
    assert s.bytes_in_use() == {"target": 0}
    assert s.evictable_bytes() == {"target": 11 * PAGE}
    s.resume("a")  # onto its own pages: nothing taken
    assert pool.used == 11 and s.bytes_in_use() == {"target": 11 * PAGE}
    assert s.evictable_bytes() == {"target": 0}


def test_the_watermark_counts_suspended_pages_before_the_resume():
    s = shim(max_util_for_resume=0.5)
    s.add_request("a")
    s.context_chunk("a", 176)  # 11 pages
    s.suspend("a")
    with pytest.raises(rt.ResumeRefusedError):
        s.resume("a")  # 11/20 taken before the resume: 0.55 > 0.5


def test_block_reuse_keeps_committed_blocks_cached_and_evicts_them_on_demand():
    s = shim(block_reuse=True)
    s.add_request("a")
    s.context_chunk("a", 170)  # 11 pages, 10 full blocks and a partial one
    s.free("a")  # closing commits the partial block too: all 11 pages stay cached
    pool = s.pool("full")
    assert pool.used == 11 and len(pool.cached) == 11
    assert s.bytes_in_use() == {"target": 0} and s.evictable_bytes() == {"target": 11 * PAGE}
    s.add_request("b")  # the cache counts as available to the watermark
    s.context_chunk("b", 320)  # 20 pages: 9 free, 11 evicted from the cache
    assert pool.used == 20 and pool.cached == []


def test_without_block_reuse_freed_pages_are_free():
    s = shim()
    s.add_request("a")
    s.context_chunk("a", 170)
    s.free("a")
    assert s.pool("full").used == 0 and s.evictable_bytes() == {"target": 0}
