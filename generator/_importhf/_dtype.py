"""The cache dtype an import writes: the config's torch_dtype, a compressed-tensors
``kv_cache_scheme``, or ``--kv-cache-dtype``."""

from __future__ import annotations

import json
from typing import Any

from kvgen._importhf._config import Abort, HfConfig
from kvgen._util.codes import hf as codes
from kvgen.sizing.facts import DTYPE_BYTES, MODEL_DTYPES

__all__ = ["DTYPES", "cache_dtype", "json_text"]

# config.json's torch_dtype -> kvgen's dtype and its bytes per element
DTYPES = {name: (dtype, DTYPE_BYTES[dtype]) for dtype, name in MODEL_DTYPES.items()}
_DTYPES = DTYPES


def json_text(value: object) -> str:
    """A config value for a message, bounded (a config is untrusted input)."""
    try:
        text = json.dumps(value, sort_keys=True, default=str, allow_nan=False)
    except ValueError:  # NaN or an infinity (json.loads reads them), which JSON has not
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def cache_dtype(cfg: HfConfig, override: str | None) -> tuple[str, str, int]:
    names = [n for n in ("torch_dtype", "dtype") if cfg.has(n)]
    values = {cfg.get(n) for n in names}
    if len(values) > 1:
        cfg.diag(
            codes.CONTRADICTORY_CONFIG_FIELDS,
            "dtype",
            f"torch_dtype {cfg.get('torch_dtype')!r} disagrees with dtype {cfg.get('dtype')!r}",
            "keep one of the two",
        )
        raise Abort
    model_dtype = values.pop() if values else None
    if model_dtype is not None and model_dtype not in _DTYPES:
        cfg.diag(
            codes.UNSUPPORTED_CONFIG_FEATURE,
            names[0],
            f"{names[0]} {model_dtype!r} is not supported",
            "use bfloat16, float16 or float32, or pass --kv-cache-dtype",
        )
        raise Abort
    if override is not None:
        bytes_ = _DTYPES[model_dtype][1] if model_dtype else DTYPE_BYTES.get(override, 2)
        return override, "kvgen import-hf --kv-cache-dtype", bytes_
    scheme = _kv_cache_scheme(cfg)
    if scheme is not None:  # a quantized cache; recurrent states stay in the model dtype
        layout, note = scheme
        return layout, note, _DTYPES[model_dtype][1] if model_dtype else 2
    if model_dtype is None:
        cfg.diag(
            codes.MISSING_CONFIG_FIELD,
            None,
            "config has no 'torch_dtype' (or 'dtype')",
            "pass --kv-cache-dtype",
        )
        raise Abort
    short, bytes_ = _DTYPES[model_dtype]
    if model_dtype == "float32":
        cfg.note(
            codes.IMPORT_NOTE,
            names[0],
            f"{names[0]} float32: the KV cache imports as fp32, the checkpoint's; kvgen plan "
            "sizes each engine in the dtype it serves it in (vLLM bf16, SGLang fp16, "
            "TensorRT-LLM fp32)",
            "pass --kv-cache-dtype bf16 for a bf16 cache on every engine",
        )
    return short, f"config.json {names[0]} {model_dtype}", bytes_


# ModelOpt's kv_cache_quant_algo -> the cache layout (vLLM's
# MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP, vllm/utils/torch_utils.py)
_MODELOPT_KV = {"fp8": "fp8", "nvfp4": "nvfp4"}


def _modelopt_kv(cfg: HfConfig, quant: dict[str, Any]) -> tuple[str, str] | None:
    """A ModelOpt checkpoint's ``kv_cache_quant_algo`` (in quantization_config, or its legacy
    ``quantization`` block), as vLLM's get_kv_cache_quant_algo_string reads it."""
    inner = quant.get("quantization")
    inner = inner if isinstance(inner, dict) else quant
    algo = inner.get("kv_cache_quant_algo", quant.get("kv_cache_quant_algo"))
    if algo is None:
        return None
    if isinstance(algo, str) and algo.lower() in _MODELOPT_KV:
        layout = _MODELOPT_KV[algo.lower()]
        return layout, f"config.json quantization_config kv_cache_quant_algo {algo!s:.8}"
    cfg.diag(
        codes.UNSUPPORTED_CONFIG_FEATURE,
        "quantization_config",
        f"kv_cache_quant_algo {json_text(algo)} is not FP8 or NVFP4, the ModelOpt KV cache "
        "layouts import-hf reads",
        "pass --kv-cache-dtype for the layout the engine uses",
    )
    raise Abort


def _kv_cache_scheme(cfg: HfConfig) -> tuple[str, str] | None:
    """The cache layout (and the spec note) a quantized checkpoint sets, None without one:
    a compressed-tensors ``kv_cache_scheme`` of 8-bit floats is fp8 (4-bit floats nvfp4 in a
    ModelOpt config, as vLLM reads it), a ModelOpt ``kv_cache_quant_algo`` FP8 or NVFP4;
    anything else is refused (KV305)."""
    quant = cfg.get("quantization_config")
    scheme = quant.get("kv_cache_scheme") if isinstance(quant, dict) else None
    where = "quantization_config"
    if scheme is None and cfg.has("kv_cache_scheme"):
        scheme, where = cfg.get("kv_cache_scheme"), "kv_cache_scheme"
    modelopt = isinstance(quant, dict) and str(quant.get("quant_method", "")).startswith("modelopt")
    if scheme is None:
        return _modelopt_kv(cfg, quant) if modelopt else None
    if isinstance(scheme, dict) and scheme.get("num_bits") == 8 and scheme.get("type") == "float":
        strategy = scheme.get("strategy", "tensor")
        note = f"config.json {where} kv_cache_scheme: 8-bit float ({strategy!s:.20}) KV cache"
        return "fp8", note
    four_bit_float = isinstance(scheme, dict) and (scheme.get("num_bits"), scheme.get("type")) == (
        4,
        "float",
    )
    if modelopt and four_bit_float:
        return "nvfp4", f"config.json {where} kv_cache_scheme: 4-bit float (NVFP4) KV cache"
    cfg.diag(
        codes.UNSUPPORTED_CONFIG_FEATURE,
        where,
        f"kv_cache_scheme {json_text(scheme)} is not an 8-bit float KV cache, the one quantized "
        "cache scheme import-hf reads",
        "pass --kv-cache-dtype for the layout the engine uses",
    )
    raise Abort
