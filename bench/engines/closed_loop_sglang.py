"""SGLang 0.5.23 configured by kvgen's emitted launch settings: what its own pool sizing computes.

Runs INSIDE SGLang's virtual environment (``refresh_goldens.py --closed-loop --engine sglang``),
never in kvgen's: it imports no kvgen module. Input (stdin): a JSON list of cases, each with
the ``fields`` that ``kvgen plan ... --emit sglang --format json`` printed, the KV budget the
plan was made for and the model's ``config.json``. Output: one JSON object per case.

What runs is SGLang's code, in the order its model runner runs it at start-up:
1. ``ServerArgs(model_path=<dir holding only config.json>, skip_tokenizer_init=True, **fields)``
   and ``RuntimeContext.set_server_args``: the resolved configuration bags every SGLang module
   reads (``get_schedule().max_total_tokens``, ``page_size``, ``max_running_requests``, the
   pool ratios, ``get_parallel()`` widths). An exception is SGLang refusing the settings.
2. ``ModelConfig.from_server_args`` (the config.json, ``context_length``), the model runner's
   derivations: ``SpeculativeAlgorithm.from_string``, ``configure_kv_cache_dtype``,
   ``resolve_layer_indices``, ``resolve_spec_aux_hidden_state_config``;
3. the real ``KVCacheConfigurator`` and its ``_resolve_memory_pool_config``:
   ``_profile_available_bytes`` (the Mamba ratio in ``_handle_max_mamba_cache``),
   ``config_from_budget`` (``create_memory_pool_configurator(...).calculate_pool_sizes``, then
   ``_apply_token_constraints``: the smaller of ``max_total_tokens`` and the profiled value,
   re-derived by ``calculate_pool_sizes_from_max_tokens``), ``resolve_max_num_reqs``,
   ``finalize_with_max_running_requests``;
4. step 3 again with ``max_total_tokens`` unset: the tokens SGLang makes from the profiled
   memory alone (both must land on the plan).
For a recurrent hybrid (an architecture on ``arg_groups/overrides.py``
``_MAMBA_RADIX_CACHE_ARCHS``) step 1 also runs ``ServerArgs.resolve_once()``, as the launcher
does first (``runtime_context.py`` ``_configure_context``): it resolves the Mamba radix cache's
strategy (``_mamba_radix_cache_resolution``) and with it the overlap scheduler, which set the
state slots per running request (``_calculate_mamba_ratio``). Each result records the
resolved ``mamba_radix_cache_strategy`` and ``disable_overlap_schedule``.

Stubs (the smallest that stand in for the GPU and the loaded model):
- for ``resolve_once`` (hybrids only), the CUDA platform the golden stands for: the resolution
  runs with ``device="cpu"`` (no accelerator here), ``arg_groups/mamba_hook.py``
  ``_platform_supports_mamba_cache_extra_buffer`` returns True (``get_platform().is_cuda``
  on an H100/H200) and ``arg_groups/speculative_hook.py``
  ``_disable_overlap_schedule_for_cpu`` does nothing (on CUDA it returns at once; on the CPU
  it would turn the overlap scheduler off under speculative decoding).
- ``torchvision``: as ``sglang_runner.py`` (an empty module; no sizing code uses it).
- the profiled memory: ``get_available_gpu_memory`` returns the plan's KV budget in GiB and
  ``pre_model_load_memory`` is 0, so ``_profile_available_bytes`` sees exactly the memory the
  budget arithmetic leaves for the KV cache (on the node: device x ``mem_fraction_static`` -
  weights); ``mem_fraction_static`` 0.9 in the bag where the fields give none (it only
  scales the pre-load memory, 0 here).
- the process groups: ``get_parallel().override_permanently(world_group=...)`` with no CPU
  group (the profiled memory it would reduce over ranks is stubbed).
- ``get_exec().graph.cuda_graph_config`` (resolved by a launch hook not run here): no prefill
  CUDA graph, which only matters for the disaggregated prefill role.
- Llama 4's ``text_config.attn_temperature_tuning``: 4 in the checkpoint, a bool in
  transformers 5 (which refuses the int): true, as the text model's config says.
- the loaded model: an empty object (no quantisation config; no
  ``get_attention_sliding_window_size``, so ``resolve_sliding_window_size`` reads the
  window from the model config: ``sliding_window_size``, else ``attention_chunk_size``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

# SGLang logs to stdout; the results go there alone (see main).
RESULTS = sys.stdout
sys.stdout = sys.stderr

# The torchvision stand-in, installed before SGLang loads.
import sglang_runner  # noqa: E402

# isort: split
import sglang  # noqa: E402
import sglang.srt.mem_cache.kv_cache_configurator as configurator_module  # noqa: E402
from sglang.srt.arg_groups import mamba_hook, speculative_hook  # noqa: E402
from sglang.srt.arg_groups.overrides import _MAMBA_RADIX_CACHE_ARCHS  # noqa: E402
from sglang.srt.configs.model_config import AttentionArch, ModelConfig  # noqa: E402
from sglang.srt.mem_cache import kv_cache_dtype  # noqa: E402
from sglang.srt.mem_cache.kv_cache_configurator import KVCacheConfigurator  # noqa: E402
from sglang.srt.model_executor.model_runner_components.layer_setup import (  # noqa: E402
    resolve_layer_indices,
)
from sglang.srt.model_executor.model_runner_components.load_model_utils import (  # noqa: E402
    resolve_sliding_window_size,
)
from sglang.srt.model_executor.model_runner_components.spec_aux_hidden_state import (  # noqa: E402
    resolve_spec_aux_hidden_state_config,
)
from sglang.srt.runtime_context import (  # noqa: E402
    get_context,
    get_exec,
    get_memory,
    get_model,
    get_parallel,
    get_schedule,
    get_spec,
)
from sglang.srt.server_args import ServerArgs  # noqa: E402
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm  # noqa: E402

PROVENANCE = {
    "engine_modules": [
        "sglang/srt/server_args.py (ServerArgs, resolve_once for recurrent hybrids)",
        "sglang/srt/arg_groups/overrides.py (_mamba_radix_cache_resolution)",
        "sglang/srt/runtime_context.py (RuntimeContext.set_server_args)",
        "sglang/srt/configs/model_config.py (ModelConfig.from_server_args)",
        "sglang/srt/mem_cache/kv_cache_configurator.py (KVCacheConfigurator)",
        "sglang/srt/model_executor/pool_configurator.py (calculate_pool_sizes)",
    ],
    "functions": [
        "ServerArgs(**fields)",
        "ServerArgs.resolve_once (recurrent hybrids)",
        "RuntimeContext.set_server_args",
        "ModelConfig.from_server_args",
        "configure_kv_cache_dtype",
        "resolve_layer_indices",
        "resolve_sliding_window_size",
        "KVCacheConfigurator._resolve_memory_pool_config",
        "KVCacheConfigurator._profile_available_bytes",
        "KVCacheConfigurator.config_from_budget",
        "KVCacheConfigurator._apply_token_constraints",
        "KVCacheConfigurator.resolve_max_num_reqs",
    ],
    "stubs": "bench/engines/closed_loop_sglang.py (profiled memory, loaded model; for "
    "resolve_once: device cpu, mamba_hook._platform_supports_mamba_cache_extra_buffer True "
    "(CUDA), speculative_hook._disable_overlap_schedule_for_cpu a no-op (CUDA))",
}


class _Delegate:
    """A resolved configuration bag, with ``replace`` answering in place of unset leaves."""

    def __init__(self, bag: Any, replace: dict[str, Any]) -> None:
        self._bag, self._replace = bag, replace

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._bag, name)
        if name not in self._replace:
            return value
        stand_in = self._replace[name]
        return stand_in(value) if callable(stand_in) else (stand_in if value is None else value)


# The CUDA graph config is resolved at launch by a hook that does not run here; the pool
# sizing only reads whether a prefill graph caps the disaggregated prefill role (none).
_NO_PREFILL_GRAPH = SimpleNamespace(prefill=SimpleNamespace(full_prefill_max_req=None,
                                                             backend=None))  # fmt: skip


def _exec_bag() -> Any:
    bag = configurator_module_get_exec()
    return _Delegate(bag, {"graph": lambda graph: _Delegate(
        graph, {"cuda_graph_config": _NO_PREFILL_GRAPH})})  # fmt: skip


configurator_module_get_exec = configurator_module.get_exec
configurator_module.get_exec = _exec_bag


LONGER_CONTEXT = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"


def config_dir(config_json: str) -> str:
    directory = Path(tempfile.mkdtemp(prefix="sglang_loop_"))
    config = json.loads(Path(config_json).read_text(encoding="utf-8"))
    text = config.get("text_config", {})
    if type(text.get("attn_temperature_tuning")) is int:
        # Llama 4's checkpoint says 4 where transformers 5 types a bool (the text model's
        # config says true); no sizing code reads it.
        text["attn_temperature_tuning"] = bool(text["attn_temperature_tuning"])
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(directory)


def _reason(exc: BaseException) -> str:
    """The engine's message, first line, the temporary model directory's name left out."""
    text = re.sub(r"\S*sglang_loop_\w+", "<model dir>", str(exc))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:400]


def pools(server_args: ServerArgs, budget_bytes: int) -> dict[str, Any]:
    """SGLang's pool sizing for the published server args, the profiled memory stubbed."""
    context = get_context()
    context.set_server_args(server_args)
    # One rank's view: no process groups exist here (the profiled memory is stubbed below).
    get_parallel().override_permanently(world_group=SimpleNamespace(cpu_group=None))
    if get_schedule().mem_fraction_static is None:
        context.override("closed loop: pre-load memory is 0", mem_fraction_static=0.9)
    model_config = ModelConfig.from_server_args(server_args)
    spec_algorithm = SpeculativeAlgorithm.from_string(get_spec().speculative_algorithm)
    model = SimpleNamespace()
    dtype_str, dtype = kv_cache_dtype.configure_kv_cache_dtype(
        server_args_kv_cache_dtype=get_model().kv_cache_dtype, model=model,
        model_dtype=model_config.dtype, is_draft_worker=False, is_dflash=False,
        speculative_draft_attention_backend=None,
        speculative_draft_kv_cache_dtype=get_spec().speculative_draft_kv_cache_dtype,
    )  # fmt: skip
    layer_info = resolve_layer_indices(
        model=model, model_config=model_config, is_draft_worker=False
    )
    spec_aux = resolve_spec_aux_hidden_state_config(
        server_args=server_args, model_config=model_config, spec_algorithm=spec_algorithm,
        is_draft_worker=False,
    )  # fmt: skip
    window = resolve_sliding_window_size(model, model_config)
    kvc = KVCacheConfigurator(
        device="cuda", gpu_id=0, attn_dp_size=1, pp_size=1, pp_group=None, model=model,
        model_config=model_config, server_args=server_args, kv_cache_dtype=dtype,
        kv_cache_dtype_str=dtype_str or get_model().kv_cache_dtype,
        model_dtype=model_config.dtype, page_size=get_schedule().page_size,
        sliding_window_size=window if model_config.is_hybrid_swa else None,
        spec_algorithm=spec_algorithm, is_draft_worker=False, post_capture_kv_active=False,
        spec_aux_config=spec_aux, is_hybrid_swa=model_config.is_hybrid_swa,
        is_hybrid_swa_compress=model_config.is_hybrid_swa_compress,
        use_mla_backend=model_config.attention_arch == AttentionArch.MLA,
        layer_info=layer_info, forward_stream=None, req_to_token_pool=None,
        token_to_kv_pool_allocator=None, memory_pool_config=None,
    )  # fmt: skip
    saved = configurator_module.get_available_gpu_memory
    configurator_module.get_available_gpu_memory = lambda *a, **k: budget_bytes / (1 << 30)
    try:
        config = kvc._resolve_memory_pool_config(0)
    finally:
        configurator_module.get_available_gpu_memory = saved
    page = get_schedule().page_size
    out = {
        "max_total_num_tokens": config.max_total_num_tokens,
        "max_running_requests": config.max_running_requests,
        "page_size": page,
        "context_len": model_config.context_len,
        "num_pages": config.max_total_num_tokens // page,
        "kv_cache_dtype": str(dtype).removeprefix("torch."),
    }
    if model_config.is_encoder_decoder and "MllamaForConditionalGeneration" in (
        model_config.hf_config.architectures or []
    ):
        # The pool slots one image takes before a request's text (sglang_runner.py).
        out.update(sglang_runner.encoder_tokens(model_config))
    if model_config.is_hybrid_swa:
        out["full_max_total_num_tokens"] = config.full_max_total_num_tokens
        out["swa_max_total_num_tokens"] = config.swa_max_total_num_tokens
        out["sliding_window_size"] = window
    if kvc.mambaish_config is not None:
        out["max_mamba_cache_size"] = get_schedule().max_mamba_cache_size
        # State slots per running request (resolve_max_num_reqs runs slots // ratio at most).
        out["mamba_ratio"] = kvc._calculate_mamba_ratio()
        out["mamba_cache_per_req"] = kvc.mambaish_config.mamba2_cache_params.mamba_cache_per_req
        out["mamba_radix_cache_strategy"] = get_exec().mamba.mamba_radix_cache_strategy
        out["disable_overlap_schedule"] = get_schedule().disable_overlap_schedule
        if get_memory().disable_radix_cache:  # _calculate_mamba_ratio's first branch
            out["disable_radix_cache"] = True
    return out


def _cuda_platform() -> None:
    """The resolution's platform checks as on CUDA (see the stubs in the module docstring)."""
    mamba_hook._platform_supports_mamba_cache_extra_buffer = lambda: True
    speculative_hook._disable_overlap_schedule_for_cpu = lambda server_args: None


def launch_args(case: dict[str, Any], fields: dict[str, Any], model_path: str) -> ServerArgs:
    """ServerArgs for the fields; resolved as the launcher resolves them for a hybrid."""
    config = json.loads(Path(case["hf_config"]).read_text(encoding="utf-8"))
    hybrid = sglang_runner.uses_mamba_radix_cache(config, _MAMBA_RADIX_CACHE_ARCHS)
    extra = {"device": "cpu"} if hybrid else {}
    args = ServerArgs(model_path=model_path, skip_tokenizer_init=True, **fields, **extra)
    if hybrid:
        _cuda_platform()
        args.resolve_once()
    return args


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    fields = dict(case["fields"])
    os.environ.pop(LONGER_CONTEXT, None)
    if case.get("draft_hf_config"):
        # kvgen's notes: the EAGLE3 draft's path, and (its config says 2048 positions) the
        # environment variable SGLang's own EAGLE tests set for a longer context_length.
        fields["speculative_draft_model_path"] = config_dir(case["draft_hf_config"])
        os.environ[LONGER_CONTEXT] = "1"
    try:
        args = launch_args(case, fields, config_dir(case["hf_config"]))
    except Exception as exc:
        return {"refused": _reason(exc), "refused_by": "ServerArgs"}
    architectures = json.loads(Path(case["hf_config"]).read_text(encoding="utf-8"))
    architectures = architectures.get("architectures", [])
    if not any(sglang_runner.sglang_names(arch) for arch in architectures):
        # As sglang_runner.py: no model module of SGLang names the architecture.
        return {"refused": f"SGLang {sglang.__version__} has no model class for {architectures}",
                "refused_by": "sglang/srt/models"}  # fmt: skip
    try:
        out = pools(args, case["budget_bytes"])
    except Exception as exc:
        return {"refused": _reason(exc), "refused_by": "the pool sizing"}
    fields.pop("max_total_tokens", None)
    try:
        alone = pools(launch_args(case, fields, args.model_path), case["budget_bytes"])
        out["from_memory_alone"] = {"max_total_num_tokens": alone["max_total_num_tokens"]}
    except Exception as exc:
        out["from_memory_alone"] = {"refused": _reason(exc)}
    return out


def main() -> int:
    cases = json.load(sys.stdin)
    out: dict[str, Any] = {"engine": "sglang", "version": sglang.__version__, "results": []}
    for case in cases:
        out["results"].append({"id": case["id"], **run_case(case)})
    out["provenance"] = PROVENANCE
    json.dump(out, RESULTS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
