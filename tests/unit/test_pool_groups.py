"""Life cycles of equal slot size share one pool, as TensorRT-LLM V2 shares one pool group
(``pool_groups="engine"``, the default); block tables and per-life-cycle figures stay apart.

tests/runtime_tables.py: model ``tiny`` has a full layer ``g`` and a window-32 layer ``l``,
both 64 B a token, so both life cycles have 16 x 64 = 1,024 B pages (PAGE): one engine group.
With T = 32 tokens, batch 2, chunks of 64: full ceil(32/16) = 2 pages; w32 2 x pages(32, 1) +
ceil(min(32, 64)/16) = 2 x 3 + 2 = 8 pages (pages(32, 1) = ceil(31/16) + 1 = 3): 10 pages.
"""

from __future__ import annotations

import pytest
from kvgen.runtime import allocator as rt

from tests.runtime_tables import PAGE, shim


def engine_shim(**params: object) -> rt.KVCacheShim:
    return shim(max_tokens=32, pool_groups="engine", **params)


def test_equal_slot_sizes_share_one_pool_of_the_summed_pages():
    s = engine_shim()
    assert s.pool("full") is s.pool("w32")
    assert (s.pool("full").name, s.pool("full").pages) == ("full+w32", 10)
    # The same bytes as one pool per life cycle: 2 + 8 pages.
    alone = shim(max_tokens=32)
    assert [alone.pool("full").pages, alone.pool("w32").pages] == [2, 8]
    assert s.quota_bytes() == alone.quota_bytes() == {"target": 10 * PAGE}


def test_a_life_cycle_uses_pages_the_other_leaves_free():
    # A 40-token chunk holds ceil(40/16) = 3 pages in each life cycle (no page of w32 is out of
    # the window yet: (40 + 1 - 32) // 16 = 0). Alone, full has 2 pages and refuses it.
    alone = shim(max_tokens=32)
    alone.add_request(1)
    with pytest.raises(rt.OutOfPagesError):
        alone.context_chunk(1, 40)
    s = engine_shim()
    s.add_request(1)
    s.context_chunk(1, 40)
    assert s.pool("full").used == 6
    assert s.pool_bytes_in_use() == {"full": 3 * PAGE, "w32": 3 * PAGE}
    full = s.block_table(1, "full").tolist()[:3]
    window = s.block_table(1, "w32").tolist()[:3]
    assert len(set(full + window)) == 6  # one free list: no page in both tables


def test_the_shared_pool_is_checked_for_the_sum_of_its_life_cycles():
    # A second 40-token chunk needs 3 + 3 pages; 4 are free: refused before anything moves.
    s = engine_shim()
    s.add_request(1)
    s.context_chunk(1, 40)
    s.add_request(2)
    with pytest.raises(rt.OutOfPagesError):
        s.context_chunk(2, 40)
    assert s.pool("full").used == 6
    assert s.request_state(2) == (0, 0)
    s.context_chunk(2, 16)  # 16 tokens: 1 page in each life cycle, 8 pages taken

    assert s.pool("full").used == 8


def test_the_grouping_is_a_keyword():
    with pytest.raises(ValueError, match="pool_groups"):
        shim(pool_groups="per_pool")
