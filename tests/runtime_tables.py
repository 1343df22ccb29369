"""Small hand-built family tables for the runtime's own unit tests (no spec, no generator).

``TINY``: tokens_per_block 16; model ``tiny`` has two layers, ``g`` (full attention) and ``l``
(sliding window 32), both 2 KV heads x head_dim 8 in fp16, so each layer holds
2 (K and V) * 2 heads * 8 * 2 bytes = 64 bytes per token and a page row is 16 * 64 = 1024 bytes.
Model ``hybrid`` adds a recurrent layer (4096 state bytes), an MLA layer and an NVFP4 layer.
"""

from __future__ import annotations

from kvgen.runtime import allocator as rt

TPB = 16
PAGE = 16 * 64  # bytes of one page of a 64-bytes-per-token life cycle

FULL = rt.LayerKind("full", kv_heads=2, head_dim=8, dtype="fp16")
SWA = rt.LayerKind("sliding", window=32, kv_heads=2, head_dim=8, dtype="fp16")
SINK_SWA = rt.LayerKind("sliding", window=32, sink_tokens=16, kv_heads=2, head_dim=8, dtype="fp16")
STATE = rt.LayerKind("recurrent", state_bytes=4096)
MLA = rt.LayerKind("full", kv_lora_rank=48, qk_rope_head_dim=16, dtype="bf16")
NVFP4 = rt.LayerKind("full", kv_heads=2, head_dim=32, dtype="nvfp4")

PROFILES = {
    "mtp4": rt.SpeculativeProfile("mtp", 4),
    "pard2": rt.SpeculativeProfile("pard", 2),
    "ngram3": rt.SpeculativeProfile("ngram", 3),
}

TINY = rt.FamilyTables(
    family="tiny",
    tokens_per_block=TPB,
    models={
        "tiny": rt.ModelTable(
            4096,
            rt.LayerStack(2, ("g", "l"), {"g": FULL, "l": SWA}),
            ("none", "mtp4", "pard2", "ngram3"),
        ),
        "sinks": rt.ModelTable(4096, rt.LayerStack(2, ("g", "s"), {"g": FULL, "s": SINK_SWA})),
        "hybrid": rt.ModelTable(
            4096,
            rt.LayerStack(4, ("g", "r", "m", "q"), {"g": FULL, "r": STATE, "m": MLA, "q": NVFP4}),
        ),
    },
    profiles=PROFILES,
)


def shim(model: str = "tiny", **params: object) -> rt.KVCacheShim:
    """A shim on cpu: batch 2, chunks of 64 tokens, max_seq_len 512, T = 256 tokens. One pool
    per life cycle (``g`` and ``l`` pages are equal: the engine's grouping would share one
    pool; tests/unit/test_pool_groups.py covers that)."""
    base: dict[str, object] = {
        "pool_groups": "life_cycle",
        "max_batch_size": 2,
        "max_num_tokens": 64,
        "max_seq_len": 512,
        "max_tokens": 256,
        "device": "cpu",
    }
    base.update(params)
    return rt.KVCacheShim(TINY, model, **base)  # type: ignore[arg-type]
