"""The shim's host tier (``host_cache_bytes``, TensorRT-LLM V2's ``HostCacheTierConfig``).

Hand derivation (docs/cost-model.md terms: tpb tokens per page, a page row holds every
layer's K and V for tpb tokens). The tables below: tpb 16, 16 full-attention layers of
8 KV heads x head_dim 128 in fp16, so one token is 16 layers x 2 (K, V) x 8 x 128 x 2 B =
65,536 B and one page 16 x 65,536 = 1,048,576 B (1 MiB). The engine coalesces the 32 equal
K/V buffers of 16 x 8 x 128 x 2 = 32,768 B into one slot of 1 MiB: one pool group, slot
sizes (1 MiB,). The GPU pool is given 4 pages; max_util_for_resume is 0.5 (2 of 4 pages).

Host rows: the engine rounds the host quota up to 2 MiB grains and gives the one group all
of them, each grain 2 MiB // 1 MiB = 2 rows: 4 MiB -> 2 grains -> 4 rows; 5 MiB -> 3 grains
(rounded up) -> 6 rows.

Request 1 takes a 48-token chunk: ceil(48/16) = 3 pages, and is suspended. On one tier its
3 pages stay taken: utilisation 3/4 = 0.75 > 0.5 refuses the next admission. With a host
tier they are parked (evictable): utilisation (4 - 1 free - 3 evictable)/4 = 0, admitted.
Request 2's 48-token chunk needs 3 pages with 1 free: the 2 oldest parked pages (request 1's
blocks 0 and 1) move to host rows, so the pool holds request 2's 3 pages and request 1's
block 2 (4 used, 1 evictable), the host 2 rows. Freeing request 2 leaves 3 free pages;
resuming request 1 brings its 2 hosted blocks back into 2 of them: 3 pages in use.
"""

from __future__ import annotations

import pytest
import torch
from kvgen.runtime import allocator as rt
from kvgen.runtime._host import host_rows

MIB = 1 << 20
KIND = rt.LayerKind("full", kv_heads=8, head_dim=128, dtype="fp16")
TABLES = rt.FamilyTables(
    family="hosttier",
    tokens_per_block=16,
    models={"m": rt.ModelTable(4096, rt.LayerStack(16, ("g",), {"g": KIND}))},
)


def shim(**params: object) -> rt.KVCacheShim:
    base: dict[str, object] = {
        "max_batch_size": 2,
        "max_num_tokens": 64,
        "max_seq_len": 512,
        "max_tokens": 64,
        "pool_pages": {("target", "full"): 4},
        "max_util_for_resume": 0.5,
        "device": "cpu",
    }
    base.update(params)
    return rt.KVCacheShim(TABLES, "m", **base)  # type: ignore[arg-type]


def test_host_quota_becomes_rows_in_two_mib_grains():
    s = shim(host_cache_bytes=4 * MIB)
    pool = s.pool("full")
    assert (pool.page_bytes, pool.pages, pool.host_pages) == (MIB, 4, 4)
    assert shim(host_cache_bytes=5 * MIB).pool("full").host_pages == 6
    # Two groups (gemma3_1b's full and window slots): 64 MiB = 32 grains; the smaller ratio
    # 262,144 / 1,703,936 first: round(32 x 0.1538) = 5 grains = 40 rows of 262,144 B; the
    # other 27 grains = 27 x 2 MiB // 1,441,792 = 39 rows (the engine's host_slots).
    assert host_rows(64 * MIB, [((262_144,), 1), ((1_441_792,), 1)]) == [40, 39]


def test_off_by_default_suspended_pages_stay_taken():
    s = shim()
    s.add_request(1)
    s.context_chunk(1, 48)
    s.suspend(1)
    assert s.pool("full").utilisation == 0.75
    assert s.pool("full").host_pages == 0
    with pytest.raises(rt.ResumeRefusedError):
        s.add_request(2)


def test_suspended_pages_are_evictable_to_host_and_come_back():
    s = shim(host_cache_bytes=4 * MIB)
    pool = s.pool("full")
    s.add_request(1)
    s.context_chunk(1, 48)
    pages = s.block_table(1, "full")[:3].tolist()
    for i, page in enumerate(pages):  # a pattern per page, to see it come back
        pool.tensor[page].fill_(i + 1)
    s.suspend(1)
    assert (pool.utilisation, pool.evictable, pool.used) == (0.0, 3, 3)
    s.add_request(2)  # the watermark counts the parked pages as available
    s.context_chunk(2, 48)  # 3 pages, 1 free: request 1's blocks 0 and 1 go to host
    assert (pool.used, pool.evictable, pool.host_free) == (4, 1, 2)
    assert s.bytes_in_use() == {"target": 3 * MIB}
    assert s.evictable_bytes() == {"target": MIB}
    assert s.block_table(1, "full")[:3].tolist() == [rt.NO_PAGE, rt.NO_PAGE, pages[2]]
    s.free(2)
    s.resume(1)
    assert (pool.used, pool.evictable, pool.host_free) == (3, 0, 4)
    back = s.block_table(1, "full")[:3].tolist()
    assert back[2] == pages[2] and rt.NO_PAGE not in back
    for i, page in enumerate(back):
        assert torch.equal(pool.tensor[page], torch.full((MIB,), i + 1, dtype=torch.uint8))


def test_a_resume_without_room_is_refused_and_reparks_its_pages():
    s = shim(host_cache_bytes=4 * MIB, max_util_for_resume=1.0)
    pool = s.pool("full")
    s.add_request(1)
    s.context_chunk(1, 48)
    s.suspend(1)
    s.add_request(2)
    s.context_chunk(2, 64)  # 4 pages: all 3 of request 1's pages go to host
    assert (pool.used, pool.evictable, pool.host_free) == (4, 0, 1)
    with pytest.raises(rt.OutOfPagesError):
        s.resume(1)  # 3 hosted pages, 0 free and nothing evictable
    s.free(2)
    s.resume(1)
    assert (pool.used, pool.host_free) == (3, 4)


def test_host_tier_is_refused_with_block_reuse_and_checked():
    with pytest.raises(ValueError, match="block_reuse"):
        shim(host_cache_bytes=4 * MIB, block_reuse=True)
    with pytest.raises(ValueError, match="host_cache_bytes must be positive"):
        shim(host_cache_bytes=0)
    with pytest.raises(ValueError, match="host_cache_bytes must give every manager"):
        shim(host_cache_bytes={"draft": MIB})
