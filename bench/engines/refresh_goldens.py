"""Refresh the engine golden numbers in tests/fixtures/engines/ from the engines' own code.

Usage (from the repository root, kvgen's virtualenv active):
    python bench/engines/refresh_goldens.py --engine vllm==0.34.0 [--venv-root DIR] [--fresh]
    python bench/engines/refresh_goldens.py --engine vllm==0.34.0 --grid [--family NAME]
    python bench/engines/refresh_goldens.py --engine vllm==0.34.0 --closed-loop

``--engine NAME==RELEASE`` (``NAME`` alone: the newest release in ``RELEASES``) is the release
routine: it makes the release's environment, writes the release facts (vLLM:
``vllm_release_facts.py``), the goldens and the closed loop from that release's own code, and
prints what moved against the previous release (``release_diff.py``). ``--grid`` or
``--closed-loop`` runs only that part; ``--fresh`` remakes the environment from the index.
A release not in ``RELEASES`` is followed all the same (the next one): its requirements file,
when missing, is the previous release's with the engine pin changed (written and reported).
Fixtures: the first release in ``RELEASES`` keeps ``<engine>.json`` / ``closed_loop_<engine>.json``,
each later one ``<engine>-<release>.json`` / ``closed_loop_<engine>-<release>.json``.

`--family NAME` refreshes only that family's cases and keeps every other case as the fixture
has it (a full vLLM refresh runs every case: minutes), with ``--closed-loop`` too.
``--missing`` runs only the cases of the grid the fixture does not hold yet (one just added)
and appends them, every other case left as it is.
``--closed-loop`` writes ``tests/fixtures/engines/closed_loop_<engine>.json`` instead: kvgen's
emitted launch settings fed to the engine's own configuration and sizing (closed_loop.py).

For each engine release this script
1. makes a virtual environment of its own under ``--venv-root`` (default
   ``/tmp/kvgen_engines/venv-<engine>-<release>``; reused when present; outside the repository),
   with ``--system-site-packages`` so that the machine's CPU torch is reused, and installs the
   pinned engine wheel and only the packages its sizing modules import, each with
   ``pip install --no-deps`` (``bench/engines/requirements-<engine>-<release>.txt``), then
   checks that the installed engine is that release;
2. builds two case grids:
   - *from config.json* (``CONFIG_MODELS``, ``CONFIG_REFUSALS``, ``QUOTED``): the runner builds
     every layer's cache spec from the model's ``tests/fixtures/hf/`` config through the
     engine's own classes (``vllm_from_config.py``; SGLang: ``ModelConfig`` and the config
     class's ``mamba2_cache_params``), never from kvgen's rows. vLLM: every hybrid and two
     attention models at page 16 and 64, two lengths (one not a multiple of the page), tp 1/2/8,
     prefix caching at vLLM's default and off, sync scheduling, each speculative profile vLLM
     runs in the target's pool, the tp sizes and architectures vLLM refuses, and the cases
     issue 22 quoted; SGLang: the Mamba hybrids at page 16 and 64, two lengths, tp 1/2/8;
   - *from kvgen's rows* (attention-only shipped families without a fixture config, and test
     fixture specs): every model, two page sizes, two context lengths, a 40 GiB budget and
     max_num_tokens 8192; for vLLM also each speculative profile whose drafter shares its pool.
     These feed kvgen's layer shapes to the engine's planner, so they test the pool policy,
     not the layer shapes (an independent harness found every attention-only family exact);
3. runs ``bench/engines/<engine>_runner.py`` inside that environment, which calls the engine's
   own KV-cache planner on CPU, and writes what it returns, one case per line, with provenance
   (engine version, modules and functions; for config cases the engine defaults each model
   gets and the hook that sets them) to the release's golden.

kvgen's tests compare ``kvgen._engines.capacity.engine_capacity`` with these files; CI needs no
engine. For a new engine release: CONTRIBUTING, "Following a new engine release".
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import release_diff
from kvgen._engines._layers import cached_layers, ssm_state_bytes
from kvgen._model.engine_rows import engine_arch, engine_model
from kvgen._model.geometry import kind_head_dim
from kvgen._spec.loader import load_path
from kvgen._spec.models import Family, LayerStack, Model

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
FIXTURES = ROOT / "tests" / "fixtures" / "engines"

# The releases followed, oldest first. The first keeps the bare fixture names (the fixtures
# the tests read since before releases were values); release_diff.fixture_path names them.
RELEASES = {"vllm": ("0.33.0", "0.34.0"), "sglang": ("0.5.23",)}
VENV_ROOT = Path("/tmp/kvgen_engines")
# The probe of what a release resolves and refuses (run in its environment), per engine.
FACT_PROBES = {"vllm": "vllm_release_facts.py"}
PAGE_SIZES = (16, 64)
BUDGET_BYTES = 40 << 30
MAX_NUM_TOKENS = 8192
PROVENANCE = {
    "vllm": {
        "modules": [
            "vllm/v1/core/kv_cache_planning.py",
            "vllm/v1/core/kv_cache_utils.py",
            "vllm/v1/kv_cache_interface.py",
            "vllm/platforms/interface.py",
            "vllm/model_executor/models/config.py",
        ],
        "functions": [
            "MambaModelConfig.verify_and_update_config",
            "Platform._align_hybrid_block_size",
            "get_global_kv_cache_groups",
            "get_kv_cache_configs",
            "generate_scheduler_kv_cache_config",
            "get_kv_cache_capacity",
            "_max_memory_usage_bytes_from_groups",
            "_estimate_max_model_len_from_groups",
            "_pool_bytes_per_block_from_builder",
            "SpeculativeConfig.verify_equal_vocab_size_if_draft_model",
            "SpeculativeConfig._verify_args (use_heterogeneous_vocab skips the vocab check)",
            "SpeculativeConfig.max_num_new_slots_for_drafting",
            "VllmConfig.num_lookahead_tokens",
        ],
        "produced_by": "engine code (run on CPU; stubs listed in bench/engines/vllm_runner.py)",
        "defaults": {
            "async_scheduling": True,
            "max_num_batched_tokens": "= max_num_tokens",
            "kv_cache_layout": "LBNHC",
            "attention_backend": "FLASH_ATTN (kernel blocks MultipleOf(16))",
            "mamba_cache_mode": "none",
        },
    },
    "sglang": {
        "modules": [
            "sglang/srt/model_executor/pool_configurator.py",
            "sglang/srt/mem_cache/kv_cache_configurator.py",
            "sglang/srt/configs/mamba_utils.py",
            "sglang/srt/configs/model_config.py",
            "sglang/srt/server_args.py",
            "sglang/srt/arg_groups/overrides.py",
        ],
        "functions": [
            "ServerArgs.resolve_once (recurrent hybrids: _mamba_radix_cache_resolution)",
            "DefaultPoolConfigurator._compute_cell_size",
            "DefaultPoolConfigurator.calculate_pool_sizes",
            "HybridSWAPoolConfigurator.calculate_pool_sizes",
            "HybridSWAPoolConfigurator._solve_pool_sizes",
            "KVCacheConfigurator._handle_max_mamba_cache",
            "KVCacheConfigurator.resolve_max_num_reqs",
            "KVCacheConfigurator._calculate_mamba_ratio",
            "BaseLinearStateParams.mamba_cache_per_req",
        ],
        "produced_by": "engine code (run on CPU; stubs listed in bench/engines/sglang_runner.py)",
        "defaults": {
            "swa_full_tokens_ratio": 0.8,
            "mamba_full_memory_ratio": 0.9,
            "mamba_ssm_dtype": "float32",
            "mamba_conv_dtype": "bfloat16",
            "radix_cache": "enabled",
            # As an H100/H200 launch resolves it; resolve_once runs on the CPU with
            # mamba_hook._platform_supports_mamba_cache_extra_buffer stubbed True and
            # speculative_hook._disable_overlap_schedule_for_cpu a no-op (CUDA's answers).
            "mamba_radix_cache_strategy": "extra_buffer (CUDA: overlap schedule on)",
        },
    },
}


def context_lengths(model: Model) -> tuple[int, int]:
    """The grid's two lengths: a short one (8192, or half the native length) and the native."""
    native = model.max_seq_len
    return (MAX_NUM_TOKENS if native > MAX_NUM_TOKENS else native // 2, native)


def engine_layers(
    family: Family, model: Model, stack: LayerStack | None = None
) -> list[dict[str, Any]]:
    """The cached layers of ``stack`` (default: the model) in engine terms."""
    stack = model if stack is None else stack
    out = []
    pattern = stack.layers.pattern
    for index in range(stack.layers.count):
        kind = stack.layer_kinds[pattern[index % len(pattern)]]
        if kind.attention == "none" or kind.reads is not None:
            continue  # no cache of its own (a KV-sharing layer reads another layer's)
        layer: dict[str, Any] = {"index": index}
        if kind.attention == "recurrent":
            # One request's state at tp=1 and the conv/SSM split SGLang needs (its SSM part is
            # fp32); the split is None where the spec gives only the raw state_bytes.
            state = next(
                lay.state_bytes for lay in cached_layers(family, model) if lay.position == index
            )
            ssm = ssm_state_bytes(family, model) or None
            layer.update(
                type="mamba",
                state_bytes=state,
                ssm_elements=None if ssm is None else ssm // 2,
                conv_elements=None if ssm is None else (state - ssm) // 2,
            )
        elif kind.kv_lora_rank is not None:
            layer.update(type="mla", head_dim=kind.kv_lora_rank + (kind.qk_rope_head_dim or 0))
        elif kind.attention == "chunked":
            layer.update(type="chunked", kv_heads=kind.kv_heads,
                         head_dim=kind_head_dim(kind, model), window=kind.chunk)  # fmt: skip
        else:
            layer.update(
                type="sliding" if kind.attention == "sliding" else "full",
                kv_heads=kind.kv_heads,
                head_dim=kind_head_dim(kind, model),
                window=kind.window,
            )
        if kind.v_head_dim is not None:
            layer["v_head_dim"] = kind.v_head_dim  # vLLM head_size_v, SGLang v_head_dim
        out.append(layer)
    return out


def representable(family: Family, model: Model) -> bool:
    """Whether an engine has a spec for every layer: no NVFP4 or other layout with scales,
    attention sinks, synthetic byte shapes, index-K caches or sliding MLA (the fixtures use
    these to test kvgen's own model; kvgen's engine models raise NotModelled for them)."""
    for kind in model.layer_kinds.values():
        dtype = kind.dtype or model.kv_cache_dtype or family.kv_cache_dtype
        if dtype not in ("fp32", "bf16", "fp16", "fp8") or kind.index_head_dim is not None:
            return False
        if kind.sink_tokens or kind.bytes_per_token is not None:
            return False
        if kind.extra_bytes_per_token or (kind.attention == "sliding" and kind.kv_lora_rank):
            return False
    return True


# kvgen speculative modes whose drafter shares vLLM's pool, and vLLM's name for the method
# (PARD is vLLM's draft_model with parallel_drafting: PARALLEL_DRAFTING).
VLLM_METHODS = {"ngram": "ngram", "eagle3": "eagle3", "mtp": "mtp", "mtp_eagle": "mtp",
                "draft_target": "draft_model", "pard": "draft_model"}  # fmt: skip
PARALLEL_DRAFTING = frozenset({"pard"})
# kvgen modes whose drafter is a separate draft model (its layers under the profile's draft).
DRAFT_MODELS = frozenset({"draft_target", "pard"})


def speculative_config(profile: Any, modules: int = 1) -> dict[str, Any]:
    """What the runners' speculative config carries for a profile."""
    return {
        "method": VLLM_METHODS[profile.mode],
        "num_speculative_tokens": profile.max_draft_len,
        "draft_modules": modules,
        "parallel_drafting": profile.mode in PARALLEL_DRAFTING,
    }


def speculative_cases(family: Family, model: Model, base: dict[str, Any]) -> list[dict[str, Any]]:
    """vLLM only: each applicable profile whose drafter shares the pool, page 16, short length."""
    out = []
    for profile in family.speculative:
        if profile.mode not in VLLM_METHODS or not profile.applies_to(model.name):
            continue
        # A separate draft model (draft_target, PARD) puts its own layers in the pool.
        extra = profile.draft if profile.mode in DRAFT_MODELS else profile.extra_layers
        case = dict(base)
        case.update(
            id=f"{base['id']}/{profile.name}",
            speculative_profile=profile.name,
            speculative=speculative_config(profile, extra.layers.count if extra is not None else 1),
            draft_layers=[] if extra is None else engine_layers(family, model, extra),
        )
        vocabs = [model.vocab_size, getattr(extra, "vocab_size", None)]
        if profile.mode in DRAFT_MODELS and None not in vocabs:
            case["vocab_sizes"] = vocabs  # vLLM checks them (SpeculativeConfig)
        out.append(case)
    return out


# SGLang at its own page size, 1, as the issue that asked for these runners quoted it
# (llama4_scout's chunked layers sized as a sliding window); the grid's pages are 16 and 64.
SGLANG_PAGE_ONE = {("llama4_scout", "llama4_scout_17b_16e")}


def cases(engine: str) -> list[dict[str, Any]]:
    """Every shipped family, then every test fixture family an engine can represent."""
    grid = []
    shipped = sorted((ROOT / "schema" / "families").glob("*.yaml"))
    fixtures = sorted((ROOT / "tests" / "fixtures" / "specs").glob("fx_*.yaml"))
    for path in shipped + fixtures:
        loaded = load_path(path)
        if loaded.family is None:
            raise SystemExit(f"{path}: spec does not load; run `kvgen lint` first")
        family = loaded.family
        hybrid = any(
            kind.attention == "recurrent" or kind.parallel_state
            for m in family.models
            for kind in m.layer_kinds.values()
        )
        for model in family.models:
            rows = engine_model(family, model)
            refused = rows.vllm_unmodelled if engine == "vllm" else rows.sglang_unmodelled
            if not representable(family, model) or rows.unmodelled or refused:
                continue  # kvgen refuses it (NotModelled, tested with its reason)
            pairs = CONFIG_PAIRS if engine == "vllm" else SGLANG_CONFIG_PAIRS
            if (family.family, model.name) in pairs or (hybrid and path in shipped):
                # Built from config.json instead (config_cases); a shipped hybrid's other
                # models have no fixture config, so no golden until one is added.
                continue
            layers = engine_layers(family, model)
            pages = PAGE_SIZES
            if engine == "sglang" and (family.family, model.name) in SGLANG_PAGE_ONE:
                pages = (1, *PAGE_SIZES)
            for block_size in pages:
                for max_seq_len in context_lengths(model):
                    if block_size == 1 and max_seq_len != min(context_lengths(model)):
                        continue  # page 1 at the short length only
                    case = {
                        "id": f"{family.family}/{model.name}/b{block_size}/s{max_seq_len}",
                        "family": family.family,
                        "spec": path.relative_to(ROOT).as_posix(),
                        "model": model.name,
                        "block_size": block_size,
                        "max_model_len": max_seq_len,
                        "max_num_batched_tokens": MAX_NUM_TOKENS,
                        "async_scheduling": True,
                        "budget_bytes": BUDGET_BYTES,
                        "dtype": model.kv_cache_dtype or family.kv_cache_dtype,
                        "layers": layers,
                    }
                    grid.append(case)
                    short = block_size == 16 and max_seq_len == min(context_lengths(model))
                    if engine == "vllm" and short:
                        grid += speculative_cases(family, model, case)
                    elif short and engine_arch(family).hybrid_swa:
                        grid += sglang_swa_drafts(family, model, case)
    return grid


def sglang_swa_drafts(family: Family, model: Model, base: dict[str, Any]) -> list[dict[str, Any]]:
    """SGLang: a hybrid-SWA model's EAGLE3/MTP profiles, the drafter's layers counted as the
    profile's extra layers say (its config.json num_hidden_layers)."""
    out = []
    for profile in family.speculative:
        extra = profile.extra_layers
        if profile.mode not in ("eagle3", "mtp") or not profile.applies_to(model.name):
            continue
        layers = extra.layers.count if extra is not None else 1
        out.append({**base, "id": f"{base['id']}/{profile.name}",
                    "speculative_profile": profile.name, "draft_num_layers": layers})  # fmt: skip
    return out


# Falcon-H1: every layer both attention and Mamba-2 (a parallel hybrid); both engines.
FALCON_H1 = ("falcon_h1", "falcon_h1_0_5b_instruct", "falcon-h1-0.5b-instruct.json", ("ngram4",))
# Kimi Linear: KDA recurrent layers (fp32 state) between MLA layers; both engines.
KIMI_LINEAR = (
    "kimi_linear", "kimi_linear_48b_a3b", "kimi-linear-48b-a3b-instruct.json", ("ngram4",)
)  # fmt: skip
# Ling 2.5 linear (BailingMoeV2_5ForCausalLM): lightning attention + MLA, the config from
# transformers 5.24.0's BailingHybridConfig defaults (tests/fixtures/hf/ling-2.5-linear.json).
LING_LINEAR = ("ling_linear", "ling_2_5_linear", "ling-2.5-linear.json", ("ngram4",))
# Models whose every layer spec the vLLM runner builds from config.json (vllm_from_config.py):
# (kvgen family, kvgen model, fixture under tests/fixtures/hf/, speculative profiles).
CONFIG_MODELS = (
    ("nemotron_h", "nemotron_h_8b", "nemotron-h-8b.json", ("ngram4",)),
    ("granite4", "granite_4_0_h_tiny", "granite-4.0-h-tiny.json", ("ngram4",)),
    ("qwen3_next", "qwen3_next_80b_a3b", "qwen3-next-80b-a3b.json", ("ngram4", "mtp2")),
    ("jamba", "jamba_1_5_mini", "jamba-1.5-mini.json", ("ngram4",)),
    ("llama3", "llama3_1_8b", "llama-3.1-8b.json", ()),
    ("qwen2_5", "qwen2_5_7b", "qwen2.5-7b.json", ()),
    ("gemma3", "gemma3_27b", "gemma-3-27b-text.json", ()),
    # Llama 4 as its text model (Llama4ForCausalLM): the multimodal config does not load with
    # transformers 5 (attn_temperature_tuning 4 where it types a bool; the fixture says true).
    ("llama4_scout", "llama4_scout_17b_16e", "llama-4-scout-17b-16e-text.json", ("ngram",)),
    ("llama4_maverick", "llama4_maverick_17b_128e", "llama-4-maverick-17b-128e-text.json", ()),
    # Gemma 3n as its text model (Gemma3nForCausalLM): KV-shared layers hold no cache.
    ("gemma3n", "gemma3n_e2b", "gemma-3n-E2B-text.json", ()),
    ("gemma3n", "gemma3n_e4b", "gemma-3n-E4B-text.json", ()),
    ("deepseek_v3_2", "deepseek_v3_2_exp", "deepseek-v3.2-exp.json", ()),
    FALCON_H1,
    KIMI_LINEAR,
    LING_LINEAR,
)
# Separate draft models (vLLM's "draft_model" method) whose layers join the target's pool:
# (kvgen family, target, target fixture, profile, draft fixture).
# Gemma 3 27B as its text model (language_model_only: the multimodal class does not load here).
# vLLM refuses the 7B and 27B pairs (vocab_size differs); a draft drafting its own model (equal
# vocabularies) is answered. PARD (vLLM's draft_model with parallel_drafting) on Llama-3.1-8B:
# amd/PARD-Llama-3.2-1B is Llama-3.2-1B fine-tuned, and its config.json is Llama-3.2-1B's
# plus pard_token and spd_type (AMD-AGI/PARD pard/pard_train.py; no vocabulary resize), which
# move no cache: the fixture is meta-llama/Llama-3.2-1B-Instruct's config.json.
CONFIG_DRAFTS = (
    ("llama3", "llama3_1_8b", "llama-3.1-8b.json", "pard4", "llama-3.2-1b.json"),
    ("qwen2_5", "qwen2_5_0_5b", "qwen2.5-0.5b.json", "draft_0_5b", "qwen2.5-0.5b.json"),
    ("gemma3", "gemma3_1b", "gemma-3-1b.json", "draft_1b", "gemma-3-1b.json"),
    ("qwen2_5", "qwen2_5_7b", "qwen2.5-7b.json", "draft_0_5b", "qwen2.5-0.5b.json"),
    ("gemma3", "gemma3_27b", "gemma-3-27b-text.json", "draft_1b", "gemma-3-1b.json"),
    # PARD-Qwen2.5-0.5B keeps Qwen2.5-0.5B's vocabulary (the spec's pard4 note): refused for
    # the 7B by vocabulary, answered with use_heterogeneous_vocab (below).
    ("qwen2_5", "qwen2_5_7b", "qwen2.5-7b.json", "pard4", "qwen2.5-0.5b.json"),
)
# The pairs vLLM refuses by vocabulary, run again with speculative_config's opt-in
# use_heterogeneous_vocab (vllm/config/speculative.py: _verify_args then skips
# verify_equal_vocab_size_if_draft_model; the draft's layers are those of any draft_model).
HETEROGENEOUS_VOCAB = {("qwen2_5", "qwen2_5_7b"), ("gemma3", "gemma3_27b")}


def heterogeneous_vocab(case: dict[str, Any]) -> dict[str, Any]:
    """A draft-model case with use_heterogeneous_vocab set (its own id)."""
    speculative = {**case["speculative"], "use_heterogeneous_vocab": True}
    return {**case, "id": case["id"] + "/hv", "speculative": speculative}


# tp sizes vLLM refuses (query heads, or KV heads in Llama-style attention), by fixture.
CONFIG_REFUSALS = (
    ("phi3", "phi3_medium_4k", "phi-3-medium-4k.json", (4, 8)),
    ("gemma3", "gemma3_1b", "gemma-3-1b.json", (8,)),
    ("qwen2_5", "qwen2_5_7b", "qwen2.5-7b.json", (8,)),
    ("granite4", "granite_4_0_h_tiny", "granite-4.0-h-tiny.json", (8,)),
    ("llama3_2_vision", "llama3_2_11b_vision", "llama-3.2-11b-vision.json", (1,)),
    ("openelm", "openelm_270m", "openelm-270m.json", (1,)),  # not in vLLM's registry
    ("falcon_h1", "falcon_h1_7b_instruct", "falcon-h1-7b-instruct.json", (8,)),
)
# Models served at a kv_cache_dtype of their own, built from config.json with vLLM's
# CacheConfig set to it (vllm_from_config.py attention_specs: the backend that takes the dtype
# and its customize_spec): (kvgen family, model, fixture, the dtype, tp sizes).
CONFIG_DTYPES = (
    ("qwen3_moe", "qwen3_235b_a22b_fp8_pth", "qwen3-235b-a22b.json", "fp8_per_token_head",
     (1, 2, 4)),
)  # fmt: skip
CONFIG_PAIRS = {(entry[0], entry[1]) for entry in CONFIG_MODELS}
TP_SIZES = (1, 2, 8)
# The cases the issue that asked for these runners quoted, at the issue's own settings
# (kvgen model, budget, block, length, N, profile, prefix caching).
QUOTED = (
    ("nemotron_h_8b", 24 << 30, 32, 8191, 2048, "none", False),
    ("nemotron_h_8b", 24 << 30, 32, 8191, 2048, "none", None),
    ("qwen3_next_80b_a3b", 70 * (1 << 30) + (1 << 29), 16, 10001, 8192, "ngram4", False),
    ("granite_4_0_h_tiny", 70 * (1 << 30) + (1 << 29), 16, 10001, 8192, "ngram4", False),
    ("qwen3_next_80b_a3b", 40 << 30, 16, 10001, 8192, "none", None),
    ("nemotron_h_8b", 40 << 30, 16, 8192, 8192, "none", None),
    # the NotModelled rows the issue quoted at max_model_len 8,192 (the grid's short length
    # is 8,191: same blocks and concurrency, fewer tokens)
    ("llama4_scout_17b_16e", 40 << 30, 16, 8192, 8192, "none", None),
    ("gemma3n_e2b", 40 << 30, 16, 8192, 8192, "none", None),
    ("deepseek_v3_2_exp", 40 << 30, 64, 8192, 8192, "none", None),
)


def _config_case(
    entry: tuple[str, str, str, Any], *, block: int, length: int, tp: int, n: int = MAX_NUM_TOKENS,
    budget: int = BUDGET_BYTES, sync: bool = False, prefix: bool | None = None,
    profile: str = "none", family: Family | None = None,
) -> dict[str, Any]:  # fmt: skip
    name, model, fixture = entry[0], entry[1], entry[2]
    prefix_name = {None: "default", True: "on", False: "off"}[prefix]
    case: dict[str, Any] = {
        "id": f"{name}/{model}/b{block}/s{length}/n{n}/tp{tp}/"
        f"{'sync' if sync else 'async'}/pc-{prefix_name}/{profile}/g{budget}",
        "family": name,
        "model": model,
        "spec": f"schema/families/{name}.yaml",
        "hf_config": str(ROOT / "tests" / "fixtures" / "hf" / fixture),
        "block_size": block,
        "max_model_len": length,
        "max_num_batched_tokens": n,
        "async_scheduling": not sync,
        "enable_prefix_caching": prefix,
        "tp": tp,
        "budget_bytes": budget,
        "speculative_profile": profile,
    }
    if name == "deepseek_v3_2":
        case["dtype"] = "fp8_ds_mla"  # the family's kv_cache_dtype: FlashMLA sparse
    if profile != "none":
        assert family is not None
        spec = family.profile(profile)
        case["speculative"] = speculative_config(spec)
        if spec.mode in ("mtp", "mtp_eagle"):
            case["draft_attention_layers"] = 1  # the MTP module's one decoder layer
    return case


def config_cases() -> list[dict[str, Any]]:
    """vLLM: the grid whose layer specs come from config.json, never from kvgen's rows."""
    grid = []
    for entry in CONFIG_MODELS:
        family = load_path(ROOT / "schema" / "families" / f"{entry[0]}.yaml").family
        assert family is not None
        native = family.model(entry[1]).max_seq_len
        lengths = (min(8191, native - 1), native)
        # Prefix caching changes only Mamba state (mamba_cache_mode): both for hybrids.
        model = family.model(entry[1])
        hybrid = any(
            kind.attention == "recurrent" or kind.parallel_state
            for kind in model.layer_kinds.values()
        )
        prefixes = (None, False) if hybrid else (None,)
        for block in PAGE_SIZES:
            for length in lengths:
                for tp in TP_SIZES:
                    for prefix in prefixes:
                        grid.append(_config_case(entry, block=block, length=length, tp=tp,
                                                 prefix=prefix))  # fmt: skip
                grid.append(_config_case(entry, block=block, length=length, tp=1, sync=True))
        for profile in entry[3]:
            for length in lengths:
                for tp in (1, 2):
                    for prefix in prefixes:
                        grid.append(
                            _config_case(
                                entry,
                                block=16,
                                length=length,
                                tp=tp,
                                prefix=prefix,
                                profile=profile,
                                family=family,
                            )
                        )
    for name, model, fixture, dtype, tps in CONFIG_DTYPES:
        native = load_path(ROOT / "schema" / "families" / f"{name}.yaml").family.model(model)
        for block in PAGE_SIZES:
            for length in (8191, native.max_seq_len):
                for tp in tps:
                    case = _config_case((name, model, fixture), block=block, length=length, tp=tp)
                    grid.append({**case, "dtype": dtype})
    for entry in CONFIG_REFUSALS:
        for tp in entry[3]:
            grid.append(_config_case(entry, block=16, length=4096, tp=tp))
    for name, model, fixture, profile, draft in CONFIG_DRAFTS:
        family = load_path(ROOT / "schema" / "families" / f"{name}.yaml").family
        for block in PAGE_SIZES:
            for length in (8192, 10001):
                for tp in (1, 2):
                    case = _config_case((name, model, fixture), block=block, length=length, tp=tp,
                                        profile=profile, family=family)  # fmt: skip
                    case["draft_hf_config"] = str(ROOT / "tests" / "fixtures" / "hf" / draft)
                    grid.append(case)
                    if (name, model) in HETEROGENEOUS_VOCAB:
                        grid.append(heterogeneous_vocab(case))
    by_model = {entry[1]: entry for entry in CONFIG_MODELS}
    for model, budget, block, length, n, profile, prefix in QUOTED:
        entry = by_model[model]
        family = load_path(ROOT / "schema" / "families" / f"{entry[0]}.yaml").family
        grid.append(_config_case(entry, block=block, length=length, tp=1, n=n, budget=budget,
                                 prefix=prefix, profile=profile, family=family))  # fmt: skip
    unique = {case["id"]: case for case in grid}
    return list(unique.values())


# SGLang: attention models from config.json, with the EAGLE3 / MTP profiles SGLang runs
# (kvgen family, model, fixture, profile, the EAGLE3 draft's config or None for MTP).
SGLANG_CONFIG_SPECULATIVE = (
    ("llama3", "llama3_1_8b", "llama-3.1-8b.json", "eagle3", "eagle3-llama3.1-8b.json"),
    ("deepseek_v3", "deepseek_v3", "deepseek-v3.json", "mtp1", None),
    ("qwen2_5", "qwen2_5_7b", "qwen2.5-7b.json", "none", None),
    # Gemma 3n's KV-shared layers keep a buffer in SGLang's pool (every hidden layer has one).
    ("gemma3n", "gemma3n_e2b", "gemma-3n-E2B-text.json", "none", None),
    ("gemma3n", "gemma3n_e4b", "gemma-3n-E4B-text.json", "none", None),
    # DeepSeek-V3.2: the DSA pool's fp8 latent and indexer keys per layer, with its MTP head.
    ("deepseek_v3_2", "deepseek_v3_2_exp", "deepseek-v3.2-exp.json", "mtp", None),
)
# NGRAM (no draft layers) and STANDALONE (a separate draft model: its config.json's layers
# at the target's per-layer size) on attention models: (kvgen family, model, fixture,
# profile, the draft's config or None).
SGLANG_CONFIG_DRAFTS = (
    ("llama3", "llama3_1_8b", "llama-3.1-8b.json", "ngram4", None),
    ("cohere2", "command_r7b", "command-r7b.json", "ngram4", None),
    ("qwen2_5", "qwen2_5_7b", "qwen2.5-7b.json", "draft_0_5b", "qwen2.5-0.5b.json"),
    ("qwen2_5", "qwen2_5_0_5b", "qwen2.5-0.5b.json", "draft_0_5b", "qwen2.5-0.5b.json"),
    ("gemma3", "gemma3_27b", "gemma-3-27b-text.json", "draft_1b", "gemma-3-1b.json"),
    ("gemma3", "gemma3_1b", "gemma-3-1b.json", "draft_1b", "gemma-3-1b.json"),
)
# A recurrent hybrid's speculative profiles in SGLang (EAGLE/MTP and NGRAM alike):
# intermediate states per draft token (kv_cache_configurator.py _handle_max_mamba_cache), at
# both pages and every tp.
SGLANG_HYBRID_SPECULATIVE = {
    "qwen3_next": ("mtp2", "ngram4"), "granite4": ("ngram4",), "nemotron_h": ("ngram4",),
    "falcon_h1": ("ngram4",),
}  # fmt: skip
SGLANG_CONFIG_PAIRS = {(entry[0], entry[1]) for entry in SGLANG_CONFIG_SPECULATIVE}
SGLANG_CONFIG_REFUSALS = (("openelm", "openelm_270m", "openelm-270m.json"),)
# Encoder-decoder models SGLang runs in its one token pool (is_encoder_decoder_model): Mllama.
SGLANG_ENCODER_DECODER = (("llama3_2_vision", "llama3_2_11b_vision", "llama-3.2-11b-vision.json"),)


def sglang_config_cases() -> list[dict[str, Any]]:
    """SGLang: the Mamba hybrids whose state and layers come from config.json, and attention
    models with the speculative profiles SGLang runs."""
    grid = []
    for name, model, fixture, profile, draft in SGLANG_CONFIG_SPECULATIVE:
        family = load_path(ROOT / "schema" / "families" / f"{name}.yaml").family
        assert family is not None
        native = family.model(model).max_seq_len
        for block in PAGE_SIZES:
            for length in (8191, native):
                for tp in TP_SIZES:
                    for prof in ("none", profile) if profile != "none" else ("none",):
                        case = _config_case((name, model, fixture), block=block, length=length,
                                            tp=tp, profile=prof, family=family)  # fmt: skip
                        if prof != "none" and draft is not None:
                            case["draft_hf_config"] = str(
                                ROOT / "tests" / "fixtures" / "hf" / draft
                            )
                        grid.append(case)
    # SGLang's own refusals from config.json: an architecture no SGLang model module names
    # (OpenELM), a kv_cache_dtype its configure_kv_cache_dtype refuses (per-token-head).
    for name, model, fixture in SGLANG_CONFIG_REFUSALS:
        grid.append(_config_case((name, model, fixture), block=16, length=1024, tp=1))
    for name, model, fixture, dtype, _ in CONFIG_DTYPES:
        for block in PAGE_SIZES:
            case = _config_case((name, model, fixture), block=block, length=8191, tp=1)
            grid.append({**case, "dtype": dtype})
    for entry in SGLANG_ENCODER_DECODER:
        for budget in (BUDGET_BYTES, 24 << 30):
            for block in (1, 16):
                for tp in (1, 2):
                    grid.append(_config_case(entry, block=block, length=8192, tp=tp, budget=budget))
    for entry in (*CONFIG_MODELS[:4], FALCON_H1, KIMI_LINEAR, LING_LINEAR):
        family = load_path(ROOT / "schema" / "families" / f"{entry[0]}.yaml").family
        assert family is not None
        native = family.model(entry[1]).max_seq_len
        for block in PAGE_SIZES:
            for length in (min(8191, native - 1), native):
                for tp in TP_SIZES:
                    case = _config_case(entry, block=block, length=length, tp=tp)
                    grid.append(case)
                    if length < native:
                        for profile in SGLANG_HYBRID_SPECULATIVE.get(entry[0], ()):
                            grid.append(_config_case(entry, block=block, length=length, tp=tp,
                                                     profile=profile, family=family))  # fmt: skip
    granite = CONFIG_MODELS[1]
    grid.append(
        _config_case(granite, block=1, length=10001, tp=2, budget=70 * (1 << 30) + (1 << 29))
    )
    # The EAGLE3 case at SGLang's own page size, 1 (the grid above: pages 16 and 64).
    name, model, fixture, profile, draft = SGLANG_CONFIG_SPECULATIVE[0]
    eagle = _config_case(
        (name, model, fixture),
        block=1,
        length=8191,
        tp=1,
        profile=profile,
        family=load_path(ROOT / "schema" / "families" / f"{name}.yaml").family,
    )
    eagle["draft_hf_config"] = str(ROOT / "tests" / "fixtures" / "hf" / draft)
    grid.append(eagle)
    grid += sglang_running_cases()
    grid += sglang_radix_cases()
    for name, model, fixture, profile, draft in SGLANG_CONFIG_DRAFTS:
        family = load_path(ROOT / "schema" / "families" / f"{name}.yaml").family
        for block in (1, *PAGE_SIZES):
            for length in (8191, family.model(model).max_seq_len):
                for tp in (1, 2):
                    case = _config_case((name, model, fixture), block=block, length=length,
                                        tp=tp, profile=profile, family=family)  # fmt: skip
                    if draft is not None:
                        case["draft_hf_config"] = str(ROOT / "tests" / "fixtures" / "hf" / draft)
                    grid.append(case)
    return grid


# Budgets small enough that a hybrid's state slots run out (SGLang refuses below 3 slots, a
# few slots run one request), and the requests one runs at once against the emitted
# max_running_requests (resolve_max_num_reqs: at most slots // 3).
SGLANG_SMALL_BUDGETS = (1 << 28, 1 << 29, 1 << 30, 2 << 30)
SGLANG_RUNNING = (64, 600)


def sglang_running_cases() -> list[dict[str, Any]]:
    grid = []
    for entry in (CONFIG_MODELS[0], CONFIG_MODELS[1], CONFIG_MODELS[2], FALCON_H1):
        family = load_path(ROOT / "schema" / "families" / f"{entry[0]}.yaml").family
        assert family is not None
        profiles = ["none", *SGLANG_HYBRID_SPECULATIVE.get(entry[0], ())]
        for profile in profiles:
            for budget in SGLANG_SMALL_BUDGETS:
                grid.append(_config_case(entry, block=16, length=8191, tp=1, budget=budget,
                                         profile=profile, family=family))  # fmt: skip
            for running in SGLANG_RUNNING:
                case = _config_case(entry, block=16, length=8191, tp=1, profile=profile,
                                    family=family)  # fmt: skip
                case["id"] += f"/r{running}"
                case["max_running_requests"] = running
                grid.append(case)
    return grid


# The Mamba radix cache settings a launch command sets, as ServerArgs fields (what kvgen plan
# --emit sglang writes for each of kvgen's strategies; the default, extra_buffer with the
# overlap scheduler, is every other case): no_buffer, extra_buffer without overlap, the lazy
# extra buffer, the radix cache disabled.
SGLANG_RADIX_FLAGS = {
    "no_buffer": {"mamba_radix_cache_strategy": "no_buffer", "disable_overlap_schedule": True},
    "extra_buffer_no_overlap": {
        "mamba_radix_cache_strategy": "extra_buffer", "disable_overlap_schedule": True,
    },
    "extra_buffer_lazy": {"mamba_radix_cache_strategy": "extra_buffer_lazy"},
    "disabled": {"disable_radix_cache": True},
}  # fmt: skip
SGLANG_RADIX_RUNNING = 64  # max_running_requests, as emitted (the radix cache disabled: slots)


def sglang_radix_cases() -> list[dict[str, Any]]:
    """Each Mamba radix cache setting on the recurrent hybrids SGLang sizes from config.json:
    pages 1 and 64 (no_buffer refused at 64), two budgets, and a drafter at page 64; a page
    that does not divide mamba_track_interval (96) refused by the extra buffer, lazy too."""
    grid = []
    for entry in (*CONFIG_MODELS[:3], FALCON_H1, KIMI_LINEAR):
        family = load_path(ROOT / "schema" / "families" / f"{entry[0]}.yaml").family
        assert family is not None
        length = min(8191, family.model(entry[1]).max_seq_len - 1)
        profile = (*SGLANG_HYBRID_SPECULATIVE.get(entry[0], ()), "none")[0]
        for mode, flags in SGLANG_RADIX_FLAGS.items():
            runs = [
                (block, budget, "none") for block in (1, 64) for budget in (BUDGET_BYTES, 2 << 30)
            ]
            runs.append((64, BUDGET_BYTES, profile))
            if entry[0] == "qwen3_next" and mode.startswith("extra_buffer"):
                runs.append((96, BUDGET_BYTES, "none"))
            for block, budget, prof in runs:
                case = _config_case(entry, block=block, length=length, tp=1, budget=budget,
                                    profile=prof, family=family)  # fmt: skip
                case["id"] += f"/r{SGLANG_RADIX_RUNNING}/{mode}"
                case["max_running_requests"] = SGLANG_RADIX_RUNNING
                case["sglang_flags"] = flags
                grid.append(case)
    return grid


def parse_engine(text: str) -> tuple[str, str]:
    """``NAME==RELEASE`` (or ``NAME``: its newest release followed) -> (name, release)."""
    name, _, release = text.partition("==")
    if name not in RELEASES:
        raise SystemExit(f"--engine {text}: no engine {name!r} (one of {', '.join(RELEASES)})")
    if release and not all(part.isdigit() for part in release.replace("post", "").split(".")):
        raise SystemExit(f"--engine {text}: {release!r} is not a release number (e.g. 0.34.0)")
    return name, release or RELEASES[name][-1]


def previous_release(engine: str, release: str) -> str | None:
    """The release before ``release`` (for one not in RELEASES yet: the newest followed)."""
    known = RELEASES[engine]
    if release not in known:
        return known[-1]
    at = known.index(release)
    return known[at - 1] if at else None


def requirements_file(engine: str, release: str) -> Path:
    """``requirements-<engine>-<release>.txt``; for a release without one, the previous
    release's with the engine pin changed, written (review it: the engine may import more)."""
    path = HERE / f"requirements-{engine}-{release}.txt"
    if path.exists():
        return path
    previous = previous_release(engine, release)
    if previous is None:
        raise SystemExit(f"no {path.relative_to(ROOT)}")
    pin = f"{engine}=={previous}"
    lines = (HERE / f"requirements-{engine}-{previous}.txt").read_text("utf-8").splitlines()
    if pin not in lines:
        raise SystemExit(f"requirements-{engine}-{previous}.txt does not pin {pin}")
    text = "\n".join(
        f"{engine}=={release}" if line == pin
        else line.replace(previous, release) if line.startswith("#") else line
        for line in lines
    ) + "\n"  # fmt: skip
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)} from {previous}'s, the engine pin changed: review it")
    return path


def ensure_venv(engine: str, venv_root: Path, release: str, fresh: bool = False) -> Path:
    """The release's own environment; installs only the pinned packages, without
    dependencies, and checks that the engine installed is ``release``."""
    env_dir = venv_root / f"venv-{engine}-{release}"
    if fresh and env_dir.exists():
        shutil.rmtree(env_dir)
    python = env_dir / "bin" / "python"
    if not python.exists():
        venv.create(env_dir, system_site_packages=True, with_pip=True)
    requirements = requirements_file(engine, release)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "-r", str(requirements)],
        check=True,
    )
    installed = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({engine!r}))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    if installed != release:
        raise SystemExit(f"{env_dir}: {engine} {installed} installed, not {release}")
    return python


def run_engine(
    engine: str, python: Path, grid: list[dict[str, Any]], runner_name: str = "{engine}_runner.py"
) -> dict[str, Any]:
    runner = HERE / runner_name.format(engine=engine)
    proc = subprocess.run(
        [str(python), str(runner)],
        input=json.dumps(grid),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"{runner.name} failed (exit {proc.returncode})")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def golden_path(engine: str, release: str, kind: str = "golden") -> Path:
    """The release's golden (``kind`` "golden") or closed loop ("closed_loop")."""
    return release_diff.fixture_path(engine, release, kind, RELEASES[engine][0])


def _other_families(engine: str, release: str, family: str) -> dict[str, Any]:
    """The fixture as it is, less ``family``'s cases (``--family``: a partial refresh)."""
    golden: dict[str, Any] = json.loads(golden_path(engine, release).read_text("utf-8"))
    golden["cases"] = [c for c in golden["cases"] if c["inputs"]["family"] != family]
    return golden


def golden_inputs(case: dict[str, Any]) -> dict[str, Any]:
    """A grid case's ``inputs`` as the fixture records them (what the tests match on)."""
    inputs = {k: case[k] for k in ("family", "model", "block_size", "max_model_len")}
    inputs.update(
        budget_bytes=case["budget_bytes"],
        max_num_tokens=case["max_num_batched_tokens"],
        speculative=case.get("speculative_profile", "none"),
        tp_size=case.get("tp", 1),
        async_scheduling=case["async_scheduling"],
    )
    if "max_running_requests" in case:
        inputs["max_running_requests"] = case["max_running_requests"]
    if "sglang_flags" in case:  # the Mamba radix cache settings as a launch command sets them
        inputs["sglang_flags"] = case["sglang_flags"]
    if case.get("speculative", {}).get("use_heterogeneous_vocab"):
        inputs["heterogeneous_vocab"] = True  # engine_capacity's keyword
    if "hf_config" in case:
        inputs["layers_from"] = Path(case["hf_config"]).relative_to(ROOT).as_posix()
        inputs["enable_prefix_caching"] = case["enable_prefix_caching"]
    else:
        inputs["layers_from"] = "kvgen spec"
    return inputs


def _missing(
    engine: str, release: str, grid: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict]:
    """``--missing``: the grid's cases the fixture does not hold yet, and the fixture whole
    (its cases are kept as they are, in their order; the new ones follow)."""
    golden: dict[str, Any] = json.loads(golden_path(engine, release).read_text("utf-8"))
    held = {json.dumps(c["inputs"], sort_keys=True) for c in golden["cases"]}
    new = [c for c in grid if json.dumps(golden_inputs(c), sort_keys=True) not in held]
    return new, golden


def in_held_order(entries: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    """``entries`` in the order the fixture at ``path`` holds their inputs, cases it lacks
    after them in grid order: a refresh moves only what the engine moved (and the snapshot,
    which reads the fixture in order, prints the same lines)."""
    held = json.loads(path.read_text("utf-8"))["cases"]
    position: dict[str, int] = {}
    for index, case in enumerate(held):
        position.setdefault(json.dumps(case["inputs"], sort_keys=True), index)
    last = len(position)
    return sorted(
        entries, key=lambda e: position.get(json.dumps(e["inputs"], sort_keys=True), last)
    )


def write_golden(
    engine: str,
    release: str,
    grid: list[dict[str, Any]],
    produced: dict[str, Any],
    kept: dict[str, Any] | None = None,
) -> Path:
    """The fixture of ``grid``'s cases; with ``kept`` (a partial refresh), those cases after
    the kept ones, the kept provenance updated with what this run adds."""
    by_id = {r["id"]: r for r in produced["results"]}
    entries = []
    model_defaults: dict[str, Any] = {}  # what vLLM's hooks set per model, with the hook
    for case in grid:
        got = dict(by_id[case["id"]])
        for key in ("id", "group_size", "mamba_block_size", "mamba_page_size_padded"):
            got.pop(key, None)  # derivable, or kept once per model in the provenance
        defaults = got.pop("engine_defaults", None)
        if defaults is not None and case["enable_prefix_caching"] is None:
            model_defaults[case["model"]] = defaults
        entries.append({"inputs": golden_inputs(case), "engine_output": got})
    provenance = dict(PROVENANCE[engine])
    if produced.get("config_provenance"):
        provenance["from_config"] = produced["config_provenance"]
        provenance["from_config"]["engine_defaults_by_model"] = model_defaults
        provenance["from_config"]["produced_by"] = (
            "engine code from config.json (run on CPU; stubs listed in "
            "bench/engines/vllm_from_config.py)"
        )
    golden = {
        "engine": engine,
        "engine_version": produced["version"],
        "pin": f"{engine}=={release}",
        "provenance": provenance,
        "refresh": f"python bench/engines/refresh_goldens.py --engine {engine}=={release} --grid",
        "requirements": requirements_file(engine, release).relative_to(ROOT).as_posix(),
        "unset_flags_read_as_none": produced.get("unset_flags_read_as_none", []),
    }
    if kept is not None:
        entries = [*kept.pop("cases"), *entries]
        old = kept["provenance"].get("from_config")
        new = golden["provenance"].get("from_config")
        if old is not None and new is not None:
            defaults = {**old["engine_defaults_by_model"], **new["engine_defaults_by_model"]}
            old.update(new, engine_defaults_by_model=defaults)
        functions = kept["provenance"]["functions"]  # a function the runner now calls
        functions += [f for f in provenance["functions"] if f not in functions]
        golden = {**kept, "engine_version": produced["version"]}
    FIXTURES.mkdir(parents=True, exist_ok=True)
    path = golden_path(engine, release)
    if kept is None and path.exists():
        entries = in_held_order(entries, path)
    # One case per line keeps the fixture small and its diffs readable.
    head = json.dumps(golden, indent=1, sort_keys=True)[:-2]
    lines = [json.dumps(entry, sort_keys=True, separators=(",", ":")) for entry in entries]
    text = head + ',\n "cases": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"
    json.loads(text)
    path.write_text(text, encoding="utf-8")
    return path


def write_facts(engine: str, release: str, python: Path) -> Path | None:
    """Run the engine's fact probe in the release's environment; keep its facts under the
    release in ``release_facts_<engine>.json`` (the other releases' as they are)."""
    probe = FACT_PROBES.get(engine)
    if probe is None:
        return None
    import closed_loop

    hf = closed_loop.HF
    given = {
        # A default launch of each closed-loop model: the block size it resolves.
        "models": {m: str(hf / f) for m, f, *_ in sorted(closed_loop.MODELS.values()) if f},
        "memory_model": str(hf / "llama-3.1-8b.json"),
        "budget_bytes": closed_loop.BUDGET_BYTES,
        # PARD-Llama-3.2-1B drafting Llama-3.1-8B (its pard4 profile: 4 tokens), and
        # Qwen2.5-0.5B drafting Qwen2.5-7B (vocabularies 151,936 and 152,064).
        "pard": {"target": str(hf / "llama-3.1-8b.json"), "draft": str(hf / "llama-3.2-1b.json"),
                 "num_speculative_tokens": 4},
        "heterogeneous_vocab": {"target": str(hf / "qwen2.5-7b.json"),
                                "draft": str(hf / "qwen2.5-0.5b.json"),
                                "num_speculative_tokens": 4},
    }  # fmt: skip
    produced = _run(python, HERE / probe, given)
    path = release_diff.facts_path(engine)
    held = json.loads(path.read_text("utf-8")) if path.exists() else {"engine": engine}
    held["what"] = (
        "what each release resolves and refuses, run on CPU by its own classes "
        f"(bench/engines/{probe}); source: the deciding line of that release"
    )
    releases = held.setdefault("releases", {})
    releases[release] = {"engine_version": produced["version"], "facts": produced["facts"],
                         "refresh": f"python bench/engines/refresh_goldens.py --engine "
                         f"{engine}=={release}"}  # fmt: skip
    held["releases"] = dict(sorted(releases.items(), key=lambda item: _release_key(item[0])))
    path.write_text(json.dumps(held, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split(".") if part.isdigit())


def _run(python: Path, script: Path, given: Any) -> dict[str, Any]:
    proc = subprocess.run(
        [str(python), str(script)], input=json.dumps(given), capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"{script.name} failed (exit {proc.returncode})")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def refresh_closed_loop(engine: str, release: str, python: Path, family: str | None) -> Path:
    import closed_loop

    loop = closed_loop.cases(engine, release)
    if family:
        loop = [case for case in loop if case["family"] == family]
    sent = [case for case in loop if "hf_config" in case and "fields" in case]
    produced = run_engine(engine, python, sent, "closed_loop_{engine}.py")
    path = golden_path(engine, release, "closed_loop")
    path = closed_loop.write_golden(engine, loop, produced, release, path, family)
    print(f"{path.relative_to(ROOT)}: {len(loop)} cases, {len(sent)} run in "
          f"{engine} {produced['version']}")  # fmt: skip
    return path


def refresh_grid(
    engine: str, release: str, python: Path, family: str | None, missing: bool
) -> Path | None:
    grid = cases(engine)
    grid += config_cases() if engine == "vllm" else sglang_config_cases()
    if family:
        grid = [case for case in grid if case["family"] == family]
    kept = _other_families(engine, release, family) if family else None
    if missing:
        grid, kept = _missing(engine, release, grid)
        if not grid:
            print(f"{golden_path(engine, release).relative_to(ROOT)} holds every case of the grid")
            return None
    produced = run_engine(engine, python, grid)
    path = write_golden(engine, release, grid, produced, kept)
    print(f"{path.relative_to(ROOT)}: {len(grid)} cases from {engine} {produced['version']}")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--engine", default="vllm",
        help="NAME==RELEASE (NAME alone: its newest release followed); "
        + "; ".join(f"{name}: {', '.join(rels)}" for name, rels in RELEASES.items()),
    )  # fmt: skip
    parser.add_argument("--venv-root", type=Path, default=VENV_ROOT)
    parser.add_argument(
        "--fresh", action="store_true", help="remake the release's environment from the index"
    )
    parser.add_argument(
        "--family",
        help="refresh only this family's cases; every other case stays as the fixture has it",
    )
    parser.add_argument(
        "--missing", action="store_true",
        help="run only the grid's cases the fixture lacks (a case just added to the grid), "
        "appended after the fixture's own, which stay as they are",
    )  # fmt: skip
    part = parser.add_mutually_exclusive_group()
    part.add_argument("--grid", action="store_true", help="only the goldens of the case grid")
    part.add_argument(
        "--closed-loop", action="store_true",
        help="only the closed loop: kvgen plan --emit's settings fed to the engine",
    )  # fmt: skip
    args = parser.parse_args(argv)
    engine, release = parse_engine(args.engine)
    python = ensure_venv(engine, args.venv_root, release, args.fresh)
    partial = args.grid or args.closed_loop or args.family or args.missing
    if not partial:
        facts = write_facts(engine, release, python)
        if facts is not None:
            print(f"{facts.relative_to(ROOT)}: the facts of {engine} {release}")
    if not args.closed_loop:
        refresh_grid(engine, release, python, args.family, args.missing)
    if args.closed_loop or not (args.grid or args.missing):
        refresh_closed_loop(engine, release, python, args.family)
    previous = previous_release(engine, release)
    if not partial and previous is not None:
        print("\n".join(release_diff.report(engine, previous, release, RELEASES[engine][0])))
    if release not in RELEASES[engine]:
        print(f"{engine} {release} is not in RELEASES (bench/engines/refresh_goldens.py): "
              "add it once its fixtures are reviewed")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
