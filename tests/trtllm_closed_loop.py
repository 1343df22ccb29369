"""The closed loop with TensorRT-LLM's KV cache manager V2: ``kvgen plan --emit trtllm`` settings
given to the engine, and the pools it builds from them (issue 20).

Used by ``bench/engines/trtllm_runner.py`` (which hands every config's emitted
``kv_cache_config.max_gpu_total_bytes`` to the engine's ``KVCacheManager`` and records the pool
groups it builds) and by ``tests/deploy/test_trtllm_closed_loop.py`` (which replays them
without the engine). A config is a shipped family's model (the one of ``tests/trtllm_cases.py``,
and gemma3_27b, whose heads divide by 8), a tokens_per_block (32 and 64: the spec re-rendered
with the other page where it has one of its own), two lengths, tp 1 and 8, no speculation and
one speculative profile held in the target manager. The settings are those of
``plan --emit trtllm --format json``: ``kvgen._deploy.emit.launch`` and ``render`` in process.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from kvgen._deploy.emit import launch, render
from kvgen._spec.loader import load_family
from kvgen.sizing.engines_registry import release

from tests.trtllm_cases import DTYPE_BYTES
from tests.workloads import ROOT, render_family, with_tokens_per_block

# (family, model, the speculative profile of the target manager; None: the family has none)
MODELS = (
    ("llama3", "llama3_1_8b", "eagle3"),
    ("gemma3", "gemma3_1b", "ngram4"),
    ("gemma3", "gemma3_27b", "ngram4"),
    ("gpt_oss", "gpt_oss_20b", "eagle3"),
    ("cohere2", "command_r7b", "ngram4"),
    ("deepseek_v3", "deepseek_v3", "mtp1"),
    ("gemma2", "gemma2_2b", "ngram4"),
    ("kimi_k2", "kimi_k2_instruct", "ngram4"),
    ("mistral", "mistral_7b_v0_1", "ngram4"),
    ("phi3", "phi3_mini_4k", "ngram4"),
    ("qwen2_5", "qwen2_5_0_5b", None),  # its profiles keep a separate draft pool
    ("qwen3", "qwen3_0_6b", "eagle3"),
    ("qwen3_moe", "qwen3_30b_a3b", "ngram4"),
)
TOKENS_PER_BLOCK = (32, 64)
TP_SIZES = (1, 8)
# 16 GiB + 12,345 B of KV per rank: the emitted quota is its whole 32 MiB grains, 16 GiB.
BUDGET = (16 << 30) + 12345
MAX_BATCH_SIZE = 8
MAX_NUM_TOKENS = 8192
_RENDERED: dict[tuple[str, int], Any] = {}
_OUT = Path(tempfile.mkdtemp(prefix="kvgen_closed_loop_"))


def lengths(native: int) -> tuple[int, int]:
    """Two max_seq_len: 8,192 and 32,768 tokens, capped at the model's native length (half
    of it for the first where both would be the same)."""
    short, long = min(native, 8192), min(native, 32768)
    return (native // 2, long) if short == long else (short, long)


def rendered(family: str, tpb: int) -> Any:
    """The family rendered with ``tpb`` tokens per block (its sizing and allocator modules)."""
    key = (family, tpb)
    if key not in _RENDERED:
        spec = ROOT / "schema" / "families" / f"{family}.yaml"
        loaded = load_family(spec)
        if loaded.tokens_per_block != tpb:
            loaded = with_tokens_per_block(loaded, tpb)
        out = _OUT / f"{family}_t{tpb}"
        _RENDERED[key] = render_family(loaded, spec.read_bytes(), out, spec.name)
    return _RENDERED[key]


def configs() -> list[dict[str, Any]]:
    out = []
    for family, model, profile in MODELS:
        for tpb in TOKENS_PER_BLOCK:
            native = rendered(family, tpb).sizing.MAX_SEQ_LEN[model]
            for seq in lengths(native):
                for tp in TP_SIZES:
                    for speculative in ("none", profile) if profile else ("none",):
                        out.append({"family": family, "model": model, "tokens_per_block": tpb,
                                    "max_seq_len": seq, "tp_size": tp,
                                    "speculative": speculative})  # fmt: skip
    return out


def config_id(config: dict[str, Any]) -> str:
    c = config
    return (
        f"{c['model']}/t{c['tokens_per_block']}/s{c['max_seq_len']}/tp{c['tp_size']}/"
        f"{c['speculative']}"
    )


def emitted(config: dict[str, Any]) -> dict[str, Any]:
    """What ``plan --emit trtllm --format json`` prints for the config, parsed; a refusal
    (the engine would refuse the model at that tp) as ``{"refused": message}``."""
    module = rendered(config["family"], config["tokens_per_block"]).sizing
    try:
        settings = launch(
            module, config["model"], engine=release("trtllm==early-2026"), budget_bytes=BUDGET,
            max_seq_len=config["max_seq_len"], max_num_tokens=MAX_NUM_TOKENS,
            max_batch_size=MAX_BATCH_SIZE, speculative=config["speculative"],
            tp_size=config["tp_size"],
        )  # fmt: skip
    except ValueError as exc:
        return {"refused": str(exc)}
    data: dict[str, Any] = json.loads(render(settings, "json"))
    return data


def engine_layers(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The target manager's layers as spec dimensions on one tensor-parallel rank (KV heads
    ceil(kv_heads / tp): replicated below tp; an MLA latent is never split), windows resolved
    as ``tests/trtllm_cases.py`` does (full attention once they reach max_seq_len)."""
    tables = rendered(config["family"], config["tokens_per_block"]).allocator.TABLES
    stacks = [tables.models[config["model"]].stack]
    extra = tables.extra_layers.get((config["model"], config["speculative"]))
    if extra is not None:
        stacks.append(extra)
    layers: list[dict[str, Any]] = []
    for stack in stacks:
        for index in range(stack.count):
            kind = stack.kinds[stack.pattern[index % len(stack.pattern)]]
            if kind.attention not in ("full", "sliding"):
                raise ValueError(f"{config_id(config)}: attention layers only")
            window = kind.window if kind.attention == "sliding" else None
            if window is not None and window >= config["max_seq_len"]:
                window = None
            layers.append({
                "id": len(layers),
                "kv_heads": -(-kind.kv_heads // config["tp_size"]) if kind.kv_heads else 0,
                "head_dim": kind.head_dim,
                "latent": kind.kv_lora_rank + kind.qk_rope_head_dim,
                "dtype_bytes": DTYPE_BYTES[kind.dtype],
                "window": window,
                "sinks": kind.sink_tokens if window is not None else 0,
            })  # fmt: skip
    return layers


def kvgen_groups(emit: dict[str, Any], engine: dict[str, Any]) -> list[tuple[dict, int]]:
    """Each of kvgen's pool groups (of ``capacity.engine_pools``) beside the slots of the
    engine's group with the same slot bytes."""
    slots = {sum(sizes): n for sizes, n in zip(engine["slot_bytes"], engine["slots"], strict=True)}
    return [
        (pool, slots[pool["slot_bytes"]]) for pool in emit["capacity"]["engine_pools"]["target"]
    ]
