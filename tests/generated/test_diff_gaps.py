"""Former static/runtime disagreements, kept as regressions.

Scratch reuse across life cycles that share a window but not a sink count: the static
``ctx_swa`` used to deduplicate (window, b) across them while the runtime keeps one scratch
pool per life cycle. The key is now per life cycle on both sides.
"""

from __future__ import annotations

import yaml
from kvgen._spec.loader import load_bytes

from tests.workloads import Harness, max_chunk_beside_generation, render_family

# Two sliding life cycles with the same window and bytes per token but different sink counts.
SPEC = {
    "schema_version": 1,
    "family": "gap_scratch",
    "tokens_per_block": 16,
    "kv_cache_dtype": "bf16",
    "models": [
        {
            "name": "m",
            "max_seq_len": 2048,
            "layer_kinds": {
                "a": {
                    "attention": "sliding",
                    "window": 80,
                    "sink_tokens": 4,
                    "kv_heads": 2,
                    "head_dim": 16,
                },
                "b": {"attention": "sliding", "window": 80, "kv_heads": 2, "head_dim": 16},
                "g": {"attention": "full", "kv_heads": 2, "head_dim": 16},
            },
            "layers": {"count": 3, "pattern": ["a", "b", "g"]},
        }
    ],
}


def test_scratch_keys_are_per_life_cycle_on_both_sides(tmp_path):
    raw = yaml.safe_dump(SPEC).encode()
    rendered = render_family(load_bytes("gap.yaml", raw).family, raw, tmp_path, "gap.yaml")
    params = {
        "max_batch_size": 2,
        "max_num_tokens": 512,
        "max_seq_len": 1500,
        "scratch_reuse": True,
    }
    static = rendered.sizing.quota_from_max_tokens("m", 1024, **params)["target"]
    runtime = rendered.allocator.KVCacheShim(
        "m", max_tokens=1024, device="meta", **params
    ).quota_bytes()["target"]
    shim = rendered.allocator.KVCacheShim(
        "m", max_tokens=4000, device="meta", semantics="exact", reserve_pages=8, **params
    )
    max_chunk_beside_generation(Harness(shim, rendered.sizing, params))
    # a (w=80, 4 sinks) and b (w=80, no sinks) are two life cycles, each keeping its own
    # scratch key: b = 2*2*16*2 = 128 each, ctx_swa = 128 + 128 = 256 with or without reuse.
    assert rendered.sizing.cost_terms("m", **params)["target"]["ctx_swa"] == 256
    assert runtime == static
