"""What one vLLM release resolves and refuses, established by running its own code on CPU.

Runs INSIDE the release's virtual environment (``refresh_goldens.py --engine vllm==X`` runs it
before the goldens), never in kvgen's: it imports no kvgen module. Input (stdin): JSON naming
the config.json files to launch (``models``: kvgen model -> path; ``pard`` and
``heterogeneous_vocab``: a target and a draft). Output: one JSON object, ``facts``: fact id ->
``{"value": ..., "source": "vllm/<file>:<line>", "message": <the engine's words>}`` (message
only where the engine refuses), each value computed here by the engine's own classes on the
H100 platform stand-in of ``closed_loop_vllm.py`` (EngineArgs -> create_engine_config, the
platform's block-size update, SpeculativeConfig's validation), and each source the line of the
installed release that decides it (found by its text; a fact whose line is gone says so).

The facts are those that differ between releases without moving the capacity math (which the
goldens compare): defaults a launch resolves (block size, memory fraction, the extensible KV
cache and what turns it off), settings a release refuses (parallel drafting, a heterogeneous
vocabulary), and two policies that move only some models (the Mamba state alignment, the
sliding-window MLA fallback). refresh_goldens.py keeps them per release in
``tests/fixtures/engines/release_facts_vllm.json`` and prints those that moved.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import closed_loop_vllm as loop  # installs the H100 platform stand-in (prints to stderr)
import vllm
from vllm.config.cache import CacheConfig

RESULTS = loop.RESULTS
ROOT = Path(vllm.__file__).resolve().parents[1]


def source(relative: str, needle: str) -> str:
    """``relative:line`` of the first line of the installed vLLM file holding ``needle``, or
    what is missing (a release without the code says so rather than failing)."""
    path = ROOT / relative
    if not path.exists():
        return f"{relative}: no such file in vllm {vllm.__version__}"
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if needle in line:
            return f"{relative}:{number}"
    return f"{relative}: no line with {needle!r} in vllm {vllm.__version__}"


def launch(config_json: str, draft_json: str | None = None, **fields: Any) -> Any:
    """The VllmConfig a launch of ``config_json`` with ``fields`` builds (as ``vllm serve``),
    the platform's block-size update applied (closed_loop_vllm.kv_cache_specs); raises what
    the engine raises."""
    case = {"fields": fields, "hf_config": config_json}
    if draft_json is not None:
        case["draft_hf_config"] = draft_json
    config = loop.engine_config(case)
    loop.kv_cache_specs(config, case)
    return config


def refusal(exc: BaseException) -> str:
    return loop._reason(exc)


def cache_field_default(name: str) -> Any:
    info = CacheConfig.__pydantic_fields__.get(name)
    return None if info is None else info.get_default(call_default_factory=True)


def block_size_facts(models: dict[str, str]) -> dict[str, Any]:
    default = {
        "value": CacheConfig.DEFAULT_BLOCK_SIZE,
        "source": source("vllm/config/cache.py", "DEFAULT_BLOCK_SIZE: ClassVar[int]"),
    }
    by_model = {}
    for model, path in sorted(models.items()):
        try:
            by_model[model] = launch(path).cache_config.block_size
        except Exception as exc:  # the engine refuses the model's default launch
            by_model[model] = f"refused: {refusal(exc)}"
    resolved = {
        "value": by_model,
        "source": source("vllm/platforms/interface.py", "def update_block_size_for_backend"),
        "note": "the attention backend is the runners' FLASH_ATTN stand-in (kernel blocks "
        "MultipleOf(16)); hybrids' block is then aligned to the Mamba page",
    }
    return {"default_block_size": default, "default_launch_block_size": resolved}


def memory_facts(config_json: str, budget_bytes: int) -> dict[str, Any]:
    default = launch(config_json).cache_config
    resolved = getattr(default, "resolved_gpu_memory_utilization", default.gpu_memory_utilization)
    has_extensible = "enable_extensible_kv_cache" in CacheConfig.__pydantic_fields__
    facts: dict[str, Any] = {
        "gpu_memory_utilization_default": {
            "value": cache_field_default("gpu_memory_utilization"),
            "source": source("vllm/config/cache.py", "gpu_memory_utilization: float"),
        },
        "default_launch_gpu_memory_utilization": {
            "value": resolved,
            "source": source("vllm/config/cache.py", "def resolved_gpu_memory_utilization")
            if has_extensible
            else source("vllm/config/cache.py", "gpu_memory_utilization: float"),
        },
        "default_launch_extensible_kv_cache": {
            "value": getattr(default, "enable_extensible_kv_cache", None),
            "source": source("vllm/config/vllm.py", "def _resolve_extensible_kv_cache")
            if has_extensible
            else f"vllm {vllm.__version__} has no CacheConfig.enable_extensible_kv_cache",
        },
    }
    if not has_extensible:
        return facts
    for name, fields in (
        ("kv_cache_memory_bytes", {"kv_cache_memory_bytes": budget_bytes}),
        ("num_gpu_blocks_override", {"num_gpu_blocks_override": 1024}),
    ):
        cache = launch(config_json, **fields).cache_config
        entry: dict[str, Any] = {
            "value": cache.enable_extensible_kv_cache,
            "gpu_memory_utilization": cache.resolved_gpu_memory_utilization,
            "source": source("vllm/config/vllm.py", f"{name} overrides"),
        }
        try:  # asked for explicitly with the setting: the engine's own reason
            launch(config_json, enable_extensible_kv_cache=True, **fields)
        except Exception as exc:
            entry["message"] = refusal(exc)
        facts[f"{name}_extensible_kv_cache"] = entry
    return facts


def speculative_fact(
    entry: dict[str, Any], extra: dict[str, Any], needles: tuple[str, str]
) -> dict[str, Any]:
    """A draft-model launch with ``extra`` in its speculative_config: accepted or refused."""
    spec = {"method": "draft_model", "num_speculative_tokens": entry["num_speculative_tokens"]}
    try:
        launch(
            entry["target"],
            entry["draft"],
            speculative_config={**spec, **extra},
            max_model_len=8192,
        )
    except Exception as exc:
        return {
            "value": "refused",
            "message": refusal(exc),
            "source": source("vllm/config/speculative.py", needles[1])
            if needles[1]
            else source("vllm/config/utils.py", 'extra="forbid"'),
        }
    return {"value": "accepted", "source": source("vllm/config/speculative.py", needles[0])}


def mamba_alignment_fact() -> dict[str, Any]:
    try:
        from vllm.model_executor.layers.mamba.mamba_utils import mamba_state_alignment
    except ImportError:
        return {"value": 1, "source": f"vllm {vllm.__version__}: Mamba states unaligned"}
    from types import SimpleNamespace

    return {
        "value": mamba_state_alignment(SimpleNamespace(use_flashinfer_replayssm=False)),
        "with_flashinfer_replayssm": mamba_state_alignment(
            SimpleNamespace(use_flashinfer_replayssm=True)
        ),
        "source": source(
            "vllm/model_executor/layers/mamba/mamba_utils.py", "def mamba_state_alignment"
        ),
    }


def sliding_mla_fact() -> dict[str, Any]:
    """Whether the planner groups full MLA with sliding-window MLA layers as full attention
    (``_try_get_full_allocation_fallback_groups``), on two layers of DeepSeek's MLA shape."""
    import torch
    from vllm.v1.core import kv_cache_planning as planning
    from vllm.v1.kv_cache_interface import MLAAttentionSpec, SlidingWindowMLASpec

    shape = {"block_size": 64, "num_kv_heads": 1, "head_size": 576, "dtype": torch.bfloat16}
    specs = {
        "model.layers.0.attn": MLAAttentionSpec(**shape),
        "model.layers.1.attn": SlidingWindowMLASpec(sliding_window=4096, **shape),
    }
    groups = planning._try_get_full_allocation_fallback_groups(specs)
    return {
        "value": "full allocation" if groups else "no fallback",
        "source": source(
            "vllm/v1/core/kv_cache_planning.py", "def _try_get_full_allocation_fallback_groups"
        ),
    }


def main() -> int:
    given = json.load(sys.stdin)
    facts = block_size_facts(given["models"])
    facts.update(memory_facts(given["memory_model"], given["budget_bytes"]))
    facts["parallel_drafting"] = speculative_fact(
        given["pard"],
        {"parallel_drafting": True},
        ("parallel_drafting: bool", "parallel_drafting is only supported by"),
    )
    facts["use_heterogeneous_vocab"] = speculative_fact(
        given["heterogeneous_vocab"],
        {"use_heterogeneous_vocab": True},
        ("use_heterogeneous_vocab: bool", ""),
    )
    facts["mamba_state_alignment"] = mamba_alignment_fact()
    facts["sliding_window_mla_fallback"] = sliding_mla_fact()
    json.dump({"engine": "vllm", "version": vllm.__version__, "facts": facts}, RESULTS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
