"""The cache dtype an import writes: the config's torch_dtype, a compressed-tensors
``kv_cache_scheme``, or ``--kv-cache-dtype``."""

from __future__ import annotations

import json

from kvgen.codes import hf as codes
from kvgen.facts import DTYPE_BYTES
from kvgen.importhf._config import Abort, Config

__all__ = ["DTYPES", "cache_dtype", "json_text"]

DTYPES = {"bfloat16": ("bf16", 2), "float16": ("fp16", 2), "float32": ("fp32", 4)}
_DTYPES = DTYPES


def json_text(value: object) -> str:
    """A config value for a message, bounded (a config is untrusted input)."""
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def cache_dtype(cfg: Config, override: str | None) -> tuple[str, str, int]:
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
        return "fp8", scheme, _DTYPES[model_dtype][1] if model_dtype else 2
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
            f"{names[0]} float32: the KV cache imports as fp32, twice the bytes of the bf16 "
            "cache engines usually serve",
            "pass --kv-cache-dtype bf16 if you serve bf16",
        )
    return short, f"config.json {names[0]} {model_dtype}", bytes_


def _kv_cache_scheme(cfg: Config) -> str | None:
    """The cache dtype a compressed-tensors ``kv_cache_scheme`` sets (the spec note), None
    without one; an 8-bit float scheme is fp8, anything else is refused (KV305)."""
    quant = cfg.get("quantization_config")
    scheme = quant.get("kv_cache_scheme") if isinstance(quant, dict) else None
    where = "quantization_config"
    if scheme is None and cfg.has("kv_cache_scheme"):
        scheme, where = cfg.get("kv_cache_scheme"), "kv_cache_scheme"
    if scheme is None:
        return None
    if isinstance(scheme, dict) and scheme.get("num_bits") == 8 and scheme.get("type") == "float":
        strategy = scheme.get("strategy", "tensor")
        return f"config.json {where} kv_cache_scheme: 8-bit float ({strategy!s:.20}) KV cache"
    cfg.diag(
        codes.UNSUPPORTED_CONFIG_FEATURE,
        where,
        f"kv_cache_scheme {json_text(scheme)} is not an 8-bit float KV cache, the one quantized "
        "cache scheme import-hf reads",
        "pass --kv-cache-dtype for the layout the engine uses",
    )
    raise Abort
