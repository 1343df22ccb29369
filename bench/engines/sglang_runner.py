"""Run SGLang's own KV pool sizing on CPU for the cases given on stdin; print results as JSON.

Runs INSIDE the engine's virtual environment made by ``refresh_goldens.py`` (SGLang pinned there),
never in kvgen's. A case with ``hf_config`` (the Mamba hybrids) takes its layers and recurrent
state from the model's config.json through SGLang's own ``ModelConfig``,
``configs/hybrid_arch.py`` ``mambaish_config`` and the config class's ``mamba2_cache_params``
(``run_config_case``); a case with ``layers`` uses kvgen's layer list (``make_kvc``).
What runs is SGLang's code (0.5.23):
- ``sglang/srt/model_executor/pool_configurator.py``: ``DefaultPoolConfigurator`` (``__init__``,
  ``_compute_cell_size``, ``calculate_pool_sizes``) and ``HybridSWAPoolConfigurator``
  (``__init__``, ``_recompute_cell_size``, ``calculate_pool_sizes``, ``_solve_pool_sizes``);
- ``sglang/srt/mem_cache/kv_cache_configurator.py``: ``KVCacheConfigurator._handle_max_mamba_cache``
  (the Mamba memory ratio) on the budget in GiB, then ``int(rest * (1 << 30))`` as its
  ``_profile_available_bytes`` returns it; for a hybrid from config.json also
  ``resolve_max_num_reqs`` on the final tokens (at most ``slots // _calculate_mamba_ratio()``
  requests run at once; 0 is its refusal), with the case's ``max_running_requests`` and unset;
- ``sglang/srt/configs/mamba_utils.py``: ``BaseLinearStateParams.mamba_cache_per_req`` with the
  engine's default state dtypes (``mamba2_state_dtype``: conv bf16, SSM fp32).
- ``sglang/srt/server_args.py`` ``ServerArgs.resolve_once`` for a recurrent hybrid's case (an
  architecture on ``arg_groups/overrides.py`` ``_MAMBA_RADIX_CACHE_ARCHS``), as the launcher
  runs it first (``runtime_context.py`` ``_configure_context``): the Mamba radix cache's
  strategy (``_mamba_radix_cache_resolution``) and the overlap scheduler it resolves are what
  ``_calculate_mamba_ratio`` reads (``enable_mamba_extra_buffer``, ``disable_overlap_schedule``);
  each such result records them (``mamba_radix_cache_strategy``).
The defaults ``swa_full_tokens_ratio`` and ``mamba_full_memory_ratio`` are read from SGLang's
own argument definitions (``arg_groups/fields/schedule.py``, the ``fallback`` of each ``Arg``).

Stubs (the smallest that stand in for the server and for what cannot load here):
- ``torchvision``: imported by SGLang's multimodal configs; the PyPI wheel does not load against
  the machine's CPU torch, so an empty module (version 0.28.0) stands in. No sizing code uses it.
- the server-wide argument accessors (``get_parallel``, ``get_schedule``, ``get_memory``,
  ``get_exec``, ``get_spec``, ``get_disagg``, ``get_context``) of the two modules: plain objects
  with tp = dp = 1, no speculative decoding (a config case's EAGLE3/MTP/NGRAM/STANDALONE
  profile sets ``speculative_num_draft_tokens`` and ``max_running_requests``, 8 or the case's,
  and the ``spec_algorithm`` the pool configurator asks), radix cache
  on (a hybrid's Mamba strategy and overlap scheduler as ``resolve_once`` gave them), no
  prefill/decode disaggregation, no unified memory, no user token cap; the DSA backends
  flashmla_kv (what SGLang declares on Hopper for an fp8_e4m3 cache), read only by
  DeepSeek-V3.2's latent size (``calculate_mla_kv_cache_dim``).
- for ``resolve_once``, the CUDA platform the goldens stand for: it runs with ``device="cpu"``
  (no accelerator here), ``arg_groups/mamba_hook.py``
  ``_platform_supports_mamba_cache_extra_buffer`` returns True (``get_platform().is_cuda`` on
  an H100/H200) and ``arg_groups/speculative_hook.py`` ``_disable_overlap_schedule_for_cpu``
  does nothing (on CUDA it returns at once; on the CPU it turns overlap off under MTP).
- a case with ``draft_num_layers`` (a hybrid-SWA model's EAGLE3 profile, from kvgen's rows):
  an EAGLE ``spec_algorithm`` with ``eagle_draft_num_layers`` that many full-attention layers.
- the ``kvc`` (KVCacheConfigurator) and its model config: plain objects with the layer ids, head
  count, head size and cache dtype from kvgen's spec; ``mambaish_config`` returns the attention
  layer ids and a real ``Mamba2CacheParams`` built with the spec's conv/SSM element counts.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import importlib.metadata
import json
import sys
import tempfile
import typing
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Stands in for torchvision (see the module docstring)."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name.split(".")[0] == "torchvision":
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> Any:
        module = mock.MagicMock(name=spec.name)
        module.__path__ = []
        module.__spec__ = spec
        module.__version__ = "0.28.0"
        return module

    def exec_module(self, module: Any) -> None:
        return None


sys.meta_path.insert(0, _StubFinder())
_metadata_version = importlib.metadata.version
importlib.metadata.version = lambda name: (  # type: ignore[assignment]
    "0.28.0" if name == "torchvision" else _metadata_version(name)
)

import sglang  # noqa: E402
import sglang.srt.mem_cache.kv_cache_configurator as kv_configurator  # noqa: E402
import sglang.srt.model_executor.pool_configurator as pool_configurator  # noqa: E402
import torch  # noqa: E402
from sglang.srt.arg_groups.fields.schedule import Schedule  # noqa: E402
from sglang.srt.configs.mamba_utils import Mamba2CacheParams  # noqa: E402
from sglang.srt.configs.model_config import AttentionArch  # noqa: E402

TORCH_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
TORCH_DTYPES["fp8"] = torch.float8_e4m3fn
# kvgen family -> SGLang architecture (configs/model_config.py is_hybrid_swa_model)
HYBRID_SWA_ARCHS = {
    "gpt_oss": "GptOssForCausalLM",
    "llama4_scout": "Llama4ForConditionalGeneration",
    "llama4_maverick": "Llama4ForConditionalGeneration",
}


def sglang_default(field: str) -> Any:
    """The fallback SGLang's own argument definition gives ``field``."""
    hints = typing.get_type_hints(Schedule, include_extras=True)
    for meta in hints[field].__metadata__:
        if hasattr(meta, "fallback"):
            return meta.fallback
    raise KeyError(field)


SWA_FULL_TOKENS_RATIO = sglang_default("swa_full_tokens_ratio")
MAMBA_FULL_MEMORY_RATIO = sglang_default("mamba_full_memory_ratio")


UNSET_READS: set[str] = set()


class Flags(SimpleNamespace):
    """Server arguments: the values set here; any other flag reads as None (feature off), and
    each such read is recorded in the golden's provenance."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        UNSET_READS.add(name)
        return None


def server_state() -> SimpleNamespace:
    schedule = Flags(
        swa_full_tokens_ratio=SWA_FULL_TOKENS_RATIO,
        mamba_full_memory_ratio=MAMBA_FULL_MEMORY_RATIO,
        max_total_tokens=None,
        max_running_requests=None,
        max_mamba_cache_size=None,
        disable_overlap_schedule=False,
        chunked_prefill_size=8192,
        page_size=1,
    )

    def override(_reason: str, **values: Any) -> None:
        for name, value in values.items():
            setattr(schedule, name, value)

    return SimpleNamespace(
        parallel=Flags(attn_tp_size=1, attn_dcp_size=1, attn_dp_size=1, pp_size=1),
        schedule=schedule,
        memory=Flags(enable_hisparse=False, enable_unified_memory=False, disable_radix_cache=False),
        exec=Flags(
            mamba=Flags(enable_linear_replayssm_spec=False),
            # DeepSeek-V3.2's DSA backends as SGLang declares them on Hopper for an fp8_e4m3
            # cache (arg_groups/overrides.py _dsa_split_backend_resolution: flashmla_kv).
            kernel=Flags(dsa_prefill_backend="flashmla_kv", dsa_decode_backend="flashmla_kv"),
        ),
        spec=Flags(speculative_num_draft_tokens=None, speculative_algorithm=None),
        disagg=Flags(disaggregation_mode="null"),  # no prefill/decode disaggregation
        context=Flags(override=override),
    )


def _returning(value: Any) -> Any:
    return lambda: value


def install(state: SimpleNamespace) -> None:
    """Point every loaded SGLang module's server-argument accessors at ``state``."""
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("sglang") or module is None:
            continue
        for name in ("parallel", "schedule", "memory", "exec", "spec", "disagg", "context"):
            if callable(getattr(module, f"get_{name}", None)):
                setattr(module, f"get_{name}", _returning(getattr(state, name)))


def make_kvc(case: dict[str, Any], hybrid_swa: bool) -> SimpleNamespace:
    attention = [lay for lay in case["layers"] if lay["type"] != "mamba"]
    mamba = [lay for lay in case["layers"] if lay["type"] == "mamba"]
    first = attention[0]
    mla = first["type"] == "mla"
    heads = 1 if mla else first["kv_heads"]
    head_dim = first["head_dim"]
    v_head_dim = first.get("v_head_dim", head_dim)  # a V head size of its own (spec v_head_dim)
    hf_config = SimpleNamespace(
        architectures=[HYBRID_SWA_ARCHS.get(case["family"], "KvgenStubForCausalLM")]
    )
    model_config = SimpleNamespace(
        hf_config=hf_config,
        hf_text_config=hf_config,
        attention_arch=AttentionArch.MLA if mla else AttentionArch.MHA,
        head_dim=head_dim,
        v_head_dim=0 if mla else v_head_dim,
        swa_head_dim=head_dim,
        swa_v_head_dim=v_head_dim,
        kv_lora_rank=head_dim - 64 if mla else None,
        qk_rope_head_dim=64 if mla else None,
        context_len=case["max_model_len"],
        num_hidden_layers=max(lay["index"] for lay in case["layers"]) + 1,
        get_num_kv_heads=lambda tp, dcp=1: max(1, heads // tp),
        get_swa_num_kv_heads=lambda tp: max(1, heads // tp),
    )
    sliding = [lay["index"] for lay in attention if lay["type"] == "sliding"]
    full = [lay["index"] for lay in attention if lay["type"] != "sliding" or not hybrid_swa]
    return SimpleNamespace(
        model_config=model_config,
        kv_cache_dtype=TORCH_DTYPES[case["dtype"]],
        kv_cache_dtype_str="auto" if case["dtype"] != "fp8" else "fp8_e4m3",
        use_mla_backend=mla,
        server_args=SimpleNamespace(enable_hisparse=False),
        layer_info=SimpleNamespace(
            num_effective_layers=len(attention),
            start_layer=0,
            end_layer=model_config.num_hidden_layers,
            full_attention_layer_ids=full,
            swa_attention_layer_ids=sliding if hybrid_swa else [],
        ),
        sliding_window_size=(attention[0]["window"] if hybrid_swa and sliding else None),
        page_size=case["block_size"],
        spec_algorithm=SimpleNamespace(
            is_eagle=lambda: False,
            is_standalone=lambda: False,
            is_dflash_family=lambda: False,
            is_none=lambda: True,
        ),
        spec_aux_config=SimpleNamespace(),
        is_draft_worker=False,
        pp_size=1,
        attn_dp_size=1,
        fused_entry_bytes=lambda kind: None,
        extra_mamba_cache_bytes_per_req=0,
        hybrid_gdn_config=None,
        hybrid_kda_config=None,
        mamba_layers=[lay["index"] for lay in mamba],
        mamba=mamba,
    )


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    # SGLang has no chunked pool: a chunked layer is a sliding window of the chunk (Llama 4).
    for lay in case["layers"]:
        if lay["type"] == "chunked":
            lay["type"] = "sliding"
    state = server_state()
    install(state)
    state.schedule.page_size = case["block_size"]
    attention = [lay for lay in case["layers"] if lay["type"] != "mamba"]
    if len({(lay.get("kv_heads", 1), lay["head_dim"]) for lay in attention}) != 1:
        return {"error": "SGLang sizes every layer with one head count; not modelled"}
    hybrid_swa = case["family"] in HYBRID_SWA_ARCHS and any(
        lay["type"] == "sliding" for lay in attention
    )
    if any(lay["type"] == "mamba" and lay["ssm_elements"] is None for lay in case["layers"]):
        return {"error": "the conv/SSM split of the recurrent state is unknown"}
    kvc = make_kvc(case, hybrid_swa)
    if case.get("draft_num_layers"):
        # An EAGLE3/MTP drafter of that many layers (its config.json's num_hidden_layers, as
        # spec_aux_hidden_state.py reads it), full attention (no eagle_draft_swa_num_layers).
        kvc.spec_algorithm = SimpleNamespace(
            is_eagle=lambda: True,
            is_standalone=lambda: False,
            is_dflash_family=lambda: False,
            is_none=lambda: False,
        )
        kvc.spec_aux_config = SimpleNamespace(
            eagle_draft_num_layers=case["draft_num_layers"], eagle_draft_swa_num_layers=None
        )
    out: dict[str, Any] = {}
    rest_memory = case["budget_bytes"] / (1 << 30)  # _profile_available_bytes works in GiB
    if kvc.mamba:
        shape = SimpleNamespace(
            conv=[(kvc.mamba[0]["conv_elements"],)], temporal=(kvc.mamba[0]["ssm_elements"],)
        )
        params = Mamba2CacheParams(shape=shape, layers=kvc.mamba_layers)
        full_ids = kvc.layer_info.full_attention_layer_ids
        kvc.mambaish_config = SimpleNamespace(
            mamba2_cache_params=params, full_attention_layer_ids=full_ids
        )
        rest_memory = kv_configurator.KVCacheConfigurator._handle_max_mamba_cache(kvc, rest_memory)
        out.update(
            mamba_cache_per_req=params.mamba_cache_per_req,
            max_mamba_cache_size=state.schedule.max_mamba_cache_size,
            mamba_ssm_dtype=str(params.dtype.temporal),
        )
        pool_configurator.mambaish_config = lambda model_config: kvc.mambaish_config
    else:
        pool_configurator.mambaish_config = lambda model_config: None
    available_bytes = int(rest_memory * (1 << 30))
    if hybrid_swa:
        configurator = pool_configurator.HybridSWAPoolConfigurator(kvc)
    else:
        configurator = pool_configurator.DefaultPoolConfigurator(kvc)
    try:
        config = configurator.calculate_pool_sizes(available_bytes, case["block_size"])
    except (ValueError, RuntimeError) as exc:
        return {"error": str(exc).split(":")[0]}
    out["max_total_num_tokens"] = config.max_total_num_tokens
    if config.swa_max_total_num_tokens is not None:
        out["swa_max_total_num_tokens"] = config.swa_max_total_num_tokens
    return out


@functools.cache
def model_config(config_json: str, is_draft_model: bool = False) -> Any:
    """SGLang's own ModelConfig for a config.json (offline: a directory holding only it)."""
    from sglang.srt.configs.model_config import ModelConfig

    directory = Path(tempfile.mkdtemp(prefix="sglang_cfg_"))
    (directory / "config.json").write_text(Path(config_json).read_text(encoding="utf-8"))
    return ModelConfig(str(directory), is_draft_model=is_draft_model)


def resolve_mamba_strategy(case: dict[str, Any]) -> tuple[str, bool, bool] | str | None:
    """The Mamba radix cache strategy, ``disable_overlap_schedule`` and ``disable_radix_cache``
    that ``ServerArgs.resolve_once`` gives a recurrent hybrid's case on CUDA (see the stubs),
    with the case's launch flags (``sglang_flags``: the strategy, ``disable_overlap_schedule``,
    ``disable_radix_cache`` as a user sets them); None for a model that is none; SGLang's
    refusal (its message) where resolution refuses the flags. Runs before any case installs
    the stubbed accessors."""
    from sglang.srt.arg_groups import mamba_hook, speculative_hook
    from sglang.srt.arg_groups.model_override_base import resolved_view
    from sglang.srt.arg_groups.overrides import _MAMBA_RADIX_CACHE_ARCHS
    from sglang.srt.server_args import ServerArgs

    config = json.loads(Path(case["hf_config"]).read_text(encoding="utf-8"))
    if not uses_mamba_radix_cache(config, _MAMBA_RADIX_CACHE_ARCHS):
        return None
    mamba_hook._platform_supports_mamba_cache_extra_buffer = lambda: True
    speculative_hook._disable_overlap_schedule_for_cpu = lambda server_args: None
    directory = Path(tempfile.mkdtemp(prefix="sglang_cfg_"))
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    fields: dict[str, Any] = {
        "context_length": case["max_model_len"], "page_size": case["block_size"],
        "tp_size": case["tp"], "max_running_requests": case.get("max_running_requests", 8),
    }  # fmt: skip
    if "speculative" in case:
        steps = case["speculative"]["num_speculative_tokens"]
        algorithm = SGLANG_ALGORITHMS[case["speculative"]["method"]]
        fields.update(speculative_algorithm=algorithm, speculative_num_steps=steps,
                      speculative_eagle_topk=1, speculative_num_draft_tokens=steps + 1)  # fmt: skip
        if algorithm == "NGRAM":
            # kvgen emits a chain (breadth 1), as its other profiles: _handle_ngram then sets
            # speculative_eagle_topk to it.
            fields["speculative_ngram_max_bfs_breadth"] = 1
    fields.update(case.get("sglang_flags", {}))
    args = ServerArgs(model_path=str(directory), skip_tokenizer_init=True, device="cpu", **fields)
    try:
        args.resolve_once()
    except (AssertionError, ValueError) as exc:  # mamba_hook.py's validators assert
        RAISED_BY[case["id"]] = _raiser(exc)
        return f"{type(exc).__name__}: {exc}"
    view = resolved_view(args)
    return (
        str(view.mamba_radix_cache_strategy),
        bool(view.disable_overlap_schedule),
        bool(view.disable_radix_cache),
    )


def uses_mamba_radix_cache(config: dict[str, Any], archs: frozenset[str]) -> bool:
    """``_mamba_radix_cache_resolution``'s gate on a config.json: an architecture on its list,
    or Granite 4.0-H (GraniteMoeHybridForCausalLM) with a layer type "mamba"."""
    names = set(config.get("architectures", []))
    granite = "GraniteMoeHybridForCausalLM" in names and "mamba" in config.get("layer_types", [])
    return bool(names & archs) or granite


RESOLVED: dict[str, tuple[str, bool, bool] | str | None] = {}
RAISED_BY: dict[str, str] = {}  # the SGLang function that refused a case's flags
# A case's speculative method (vLLM's name, as refresh_goldens.py records it) -> SGLang's
# speculative_algorithm (speculative/spec_info.py SpeculativeAlgorithm; NEXTN: EAGLE's alias
# for a model's own MTP heads; STANDALONE: a separate draft model).
SGLANG_ALGORITHMS = {"eagle3": "EAGLE3", "mtp": "NEXTN", "ngram": "NGRAM",
                     "draft_model": "STANDALONE"}  # fmt: skip


def run_config_case(case: dict[str, Any]) -> dict[str, Any]:
    """A model whose layers (and Mamba state) come from config.json through SGLang's classes:
    whether any SGLang model module names the architecture (``sglang_names``),
    ``ModelConfig`` (HF config -> SGLang's config class, heads, head size),
    ``hybrid_arch.mambaish_config`` -> the config class's ``mamba2_cache_params`` (state shapes
    at the attention-tp size, Mamba-2 groups replicated up to tp) and
    ``full_attention_layer_ids``; ``mamba2_state_dtype`` (SSM fp32 by default)."""
    from sglang.srt.configs import hybrid_arch

    state = server_state()
    state.parallel.attn_tp_size = case["tp"]
    state.parallel.tp_size = case["tp"]
    resolved = RESOLVED.get(case["id"])
    if isinstance(resolved, str):  # ServerArgs refused the case's flags
        return {"error": resolved.split(":")[0], "message": resolved,
                "raised_by": RAISED_BY[case["id"]]}  # fmt: skip
    if resolved is not None:
        strategy, state.schedule.disable_overlap_schedule, radix_off = resolved
        state.memory.disable_radix_cache = radix_off
        # fields/exec_.py's Derived fields (model_override_base.mamba_extra_buffer_of,
        # overrides.mamba_extra_buffer_lazy_of): both False with the radix cache disabled.
        extra = strategy in ("extra_buffer", "extra_buffer_lazy") and not radix_off
        state.exec.mamba.enable_mamba_extra_buffer = extra
        state.exec.mamba.enable_mamba_extra_buffer_lazy = (
            strategy == "extra_buffer_lazy" and not radix_off
        )
    install(state)
    state.schedule.page_size = case["block_size"]
    # Before ModelConfig, which needs the checkpoint's remote code for a model_type
    # transformers lacks (OpenELM): the architecture as config.json names it.
    saved = json.loads(Path(case["hf_config"]).read_text(encoding="utf-8"))
    architectures = list(saved.get("architectures") or [])
    if not any(sglang_names(arch) for arch in architectures):
        return {"error": f"SGLang {sglang.__version__} has no model class for {architectures}"}
    if case.get("dtype") in ("fp8_per_token_head", "int8_per_token_head"):
        # --kv-cache-dtype as kvgen's spec names it: SGLang's own check of the setting.
        from sglang.srt.mem_cache.kv_cache_dtype import configure_kv_cache_dtype

        try:
            configure_kv_cache_dtype(
                server_args_kv_cache_dtype=case["dtype"], model=None,
                model_dtype=torch.bfloat16, is_draft_worker=False, is_dflash=False,
                speculative_draft_attention_backend="",
            )  # fmt: skip
        except ValueError as exc:
            return {"error": str(exc), "raised_by": _raiser(exc)}
    config = model_config(case["hf_config"])
    config.context_len = case["max_model_len"]
    architectures = list(config.hf_config.architectures)
    mamba = hybrid_arch.mambaish_config(config)
    if mamba is not None:
        params = mamba.mamba2_cache_params
        full_ids = list(mamba.full_attention_layer_ids)
    else:
        # The layers the pool gives a buffer (layer_setup._compute_model_num_layers:
        # max(num_hidden_layers, num_attention_layers); Mllama's cross layers are among them).
        full_ids = list(range(max(config.num_hidden_layers, config.num_attention_layers)))
    draft_layers = eagle_draft_num_layers(case, config)
    speculative = "speculative" in case
    algorithm = SGLANG_ALGORITHMS[case["speculative"]["method"]] if speculative else None
    eagle = algorithm in ("EAGLE3", "NEXTN")
    standalone = algorithm == "STANDALONE"
    if speculative:
        # SGLang's chain as kvgen emits it (top-k 1; NGRAM's bfs breadth 1): num_speculative_
        # tokens steps verify one more token. Every algorithm's verify keeps that many
        # intermediate states on a hybrid (_handle_max_mamba_cache: any spec_algorithm).
        state.spec.speculative_num_draft_tokens = case["speculative"]["num_speculative_tokens"] + 1
    if speculative or "max_running_requests" in case:
        # kvgen emits max_running_requests (its max_batch_size, 8 unless the case says); a
        # drafter on a hybrid reads it for the intermediate states (_handle_max_mamba_cache).
        state.schedule.max_running_requests = case.get("max_running_requests", 8)
    fp8 = case.get("dtype") in ("fp8", "fp8_ds_mla")
    kvc = SimpleNamespace(
        model_config=config,
        # kvgen emits fp8_e4m3 for an fp8 / fp8_ds_mla family, else auto (the model's bf16).
        kv_cache_dtype=torch.float8_e4m3fn if fp8 else torch.bfloat16,
        kv_cache_dtype_str="fp8_e4m3" if fp8 else "auto",
        model_dtype=torch.bfloat16,
        use_mla_backend=config.attention_arch == AttentionArch.MLA,
        server_args=SimpleNamespace(enable_hisparse=False),
        layer_info=SimpleNamespace(
            num_effective_layers=len(full_ids),
            start_layer=0,
            end_layer=config.num_hidden_layers,
            full_attention_layer_ids=full_ids,
            swa_attention_layer_ids=[],
        ),
        sliding_window_size=None,
        page_size=case["block_size"],
        spec_algorithm=SimpleNamespace(
            is_eagle=lambda: eagle,
            is_standalone=lambda: standalone,
            is_dflash_family=lambda: False,
            is_dspark=lambda: False,
            is_none=lambda: not speculative,
        ),
        spec_aux_config=SimpleNamespace(eagle_draft_num_layers=draft_layers),
        is_draft_worker=False,
        is_hybrid_swa=False,
        pp_size=1,
        attn_dp_size=1,
        fused_entry_bytes=lambda kind: None,
        extra_mamba_cache_bytes_per_req=0,
        mambaish_config=mamba,
        hybrid_gdn_config=None,
        hybrid_kda_config=None,
    )
    kvc._calculate_mamba_ratio = lambda: kv_configurator.KVCacheConfigurator._calculate_mamba_ratio(
        kvc
    )
    pool_configurator.mambaish_config = hybrid_arch.mambaish_config
    rest_memory = case["budget_bytes"] / (1 << 30)
    # _profile_available_bytes: a multimodal model's post-sizing allocations come off the
    # budget first (SGLANG_VLM_CACHE_SIZE_MB; mm_feature_transport unset is cpu on one node,
    # no GPU feature pool). 0 for a text model.
    reserved = kv_configurator.mm_runtime_reservation_gb(
        is_multimodal=config.is_multimodal, mm_feature_transport=None
    )
    rest_memory -= reserved
    configurator = pool_configurator.DefaultPoolConfigurator(kvc)
    configurator_class = kv_configurator.KVCacheConfigurator
    try:
        if mamba is not None:
            rest_memory = configurator_class._handle_max_mamba_cache(kvc, rest_memory)
        pools = configurator.calculate_pool_sizes(int(rest_memory * (1 << 30)), case["block_size"])
        tokens = pools.max_total_num_tokens
        if mamba is not None:
            # The requests SGLang runs at once (resolve_max_num_reqs on the final token count):
            # with the emitted max_running_requests, and unset (what the pools alone allow).
            running = configurator_class.resolve_max_num_reqs(kvc, tokens)
            state.schedule.max_running_requests = None
            by_pools = configurator_class.resolve_max_num_reqs(kvc, tokens)
    except (ValueError, RuntimeError) as exc:
        return {"error": str(exc).split(":")[0], "raised_by": _raiser(exc)}
    if mamba is None and config.is_encoder_decoder:
        return {
            "max_total_num_tokens": tokens,
            "is_encoder_decoder": True,
            "num_attention_layers": config.num_attention_layers,
            "cell_size": configurator._cell_size,
            "mm_reservation_gb": reserved,
            **encoder_tokens(config),
        }
    if mamba is None:
        return {"max_total_num_tokens": tokens, "eagle_draft_num_layers": draft_layers}
    return {
        "max_total_num_tokens": tokens,
        "max_mamba_cache_size": state.schedule.max_mamba_cache_size,
        "max_running_requests": running,
        "max_running_requests_unset": by_pools,
        "mamba_ratio": kvc._calculate_mamba_ratio(),
        "mamba_radix_cache_strategy": resolved[0] if resolved else "auto",
        **({"disable_radix_cache": True} if resolved and resolved[2] else {}),
        **({"disable_overlap_schedule": True} if resolved and resolved[1] else {}),
        "mamba_cache_per_req": params.mamba_cache_per_req,
        "mamba_ssm_dtype": str(params.dtype.temporal).removeprefix("torch."),
        "conv_state_shape": list(params.shape.conv[0]),
    }


def encoder_tokens(config: Any) -> dict[str, int]:
    """The pool slots one image of an Mllama request takes before its text, as SGLang 0.5.23
    counts them (models/mllama.py pad_input_ids: num_concurrent_media x num_tiles x
    num_patches, MllamaVisionModel.num_patches = (image_size // patch_size) ** 2 + 1; the HF
    processor pads every image to vision_config.max_num_tiles tiles)."""
    vision = config.hf_config.vision_config
    patches = (vision.image_size // vision.patch_size) ** 2 + 1
    return {
        "num_patches": patches,
        "max_num_tiles": vision.max_num_tiles,
        "image_tokens_per_image": vision.max_num_tiles * patches,
    }


def _raiser(exc: BaseException) -> str:
    """The SGLang function that raised ``exc`` (its innermost frame in sglang/)."""
    name = ""
    trace = exc.__traceback__
    while trace is not None:
        if "sglang" in trace.tb_frame.f_code.co_filename:
            name = trace.tb_frame.f_code.co_qualname
        trace = trace.tb_next
    return name


@functools.cache
def sglang_names(architecture: str) -> bool:
    """Whether any of SGLang's model modules (sglang/srt/models/*.py) names the architecture.
    Read from the source, not ``ModelRegistry``: on a CPU-only machine the registry drops the
    modules whose GPU imports fail (DeepSeek, Nemotron-H, ...), which SGLang does run on GPUs."""
    models = Path(sglang.__file__).parent / "srt" / "models"
    return any(architecture in path.read_text(encoding="utf-8") for path in models.glob("*.py"))


def eagle_draft_num_layers(case: dict[str, Any], config: Any) -> int | None:
    """The draft layers SGLang's EAGLE/MTP/STANDALONE path adds to the target's cell, as
    ``spec_aux_hidden_state`` reads them: a path-less MTP head from the target config's
    ``num_nextn_predict_layers``; an EAGLE3 or STANDALONE draft from its own config's layer
    count; NGRAM none (``_resolve_eagle_aux_hidden_state`` returns at once)."""
    if "speculative" not in case or case["speculative"]["method"] == "ngram":
        return None
    if case.get("draft_hf_config") is None:
        # None where the target's config names no MTP layers (Qwen3-Next): no draft cell.
        layers = config.num_nextn_predict_layers
        return None if layers is None else int(layers)
    draft = model_config(case["draft_hf_config"], is_draft_model=True)
    if draft.num_nextn_predict_layers is not None:
        return int(draft.num_nextn_predict_layers)
    return int(max(draft.num_hidden_layers, draft.num_attention_layers))


def main() -> int:
    cases = json.load(sys.stdin)
    out: dict[str, Any] = {"engine": "sglang", "version": sglang.__version__, "results": []}
    for case in cases:
        if "hf_config" in case:
            RESOLVED[case["id"]] = resolve_mamba_strategy(case)
    for case in cases:
        run = run_config_case if "hf_config" in case else run_case
        out["results"].append({"id": case["id"], **run(case)})
    out["unset_flags_read_as_none"] = sorted(UNSET_READS)
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
