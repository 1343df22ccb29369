"""Kimi Delta Attention (Kimi Linear): its layers and its state, in the Gated-DeltaNet form of
a ``mamba:`` kind (docs/cost-model.md §8).

A KDA layer keeps one conv window over its q, k and v projections and one recurrent state per
head. vLLM 0.33.0 ``MambaStateShapeCalculator.kda_state_shape`` allocates a conv state of
``(num_heads*head_dim + 2*num_k_heads*head_k_dim)/tp x (conv_kernel - 1)`` and a recurrent
state of ``num_heads/tp x head_dim x head_dim``, with ``num_k_heads = num_heads`` and
``head_k_dim = head_dim`` (SGLang 0.5.23 ``KimiLinearStateShape.create`` the same). That is a
``mamba:`` state with ``num_heads = n_groups = heads`` and ``head_dim = d_state = head_dim``.
The recurrent state is fp32 by default in both engines (vLLM ``kda_state_dtype``: "auto" is
float32; SGLang ``mamba2_state_dtype``: float32) and in transformers (the KDA kernels keep the
state in float32); the conv window is in the model dtype.

A checkpoint's config.json gives the dimensions and the layer placement in
``linear_attn_config`` (``kda_layers`` / ``full_attn_layers``, 1-indexed); transformers'
``KimiLinearConfig`` saves them flat (``linear_num_heads``, ``linear_head_dim``,
``linear_conv_kernel_dim``, ``layer_types``), and reads ``linear_attn_config`` first.

transformers' ``BailingHybridConfig`` (Ling V3: model_type ``bailing_hybrid`` with a
``short_conv_kernel_size``) has the same layer (``BailingHybridDeltaAttention``: one conv over
q, k and v of ``linear_num_heads x linear_head_dim`` each, a ``head_dim x head_dim`` state per
head); its ``__post_init__`` sets ``linear_head_dim = head_dim``, ``linear_num_heads =
num_attention_heads`` and ``linear_conv_kernel_dim = short_conv_kernel_size`` (saved too), and
places full attention (MLA) at every ``layer_group_size``-th layer. Without the short conv it
is a Ling 2.5 lightning checkpoint instead (``_layers.py``)."""

from __future__ import annotations

from typing import Any, NoReturn

from kvgen._importhf._config import Abort, HfConfig
from kvgen._importhf._layers import ImportedKind
from kvgen._spec.models import MAX_DIM, MAX_HEADS, MAX_STATE_BYTES
from kvgen._util.codes import Code
from kvgen._util.codes import hf as codes

__all__ = ["is_kda", "kda_layer_types", "kda_state"]

KDA_MODELS = frozenset({"kimi_linear"})
LING_V3 = "bailing_hybrid"  # KDA when its config has a short_conv_kernel_size
_NESTED = "linear_attn_config"
# flat field of transformers' KimiLinearConfig -> linear_attn_config key it is read from
# (the class default, the spec's bound on the mamba: field it becomes)
_DIMENSIONS = {
    "linear_num_heads": ("num_heads", 32, MAX_HEADS),
    "linear_head_dim": ("head_dim", 128, MAX_DIM),
    "linear_conv_kernel_dim": ("short_conv_kernel_size", 4, 64),
}


# BailingHybridConfig.__post_init__: the field each flat KDA dimension is set from.
_LING_V3_SOURCES = {
    "linear_num_heads": "num_attention_heads",
    "linear_head_dim": "head_dim",
    "linear_conv_kernel_dim": "short_conv_kernel_size",
}


def is_kda(cfg: HfConfig) -> bool:
    model_type = cfg.get("model_type")
    if model_type == LING_V3:
        return cfg.get("short_conv_kernel_size") is not None
    return model_type in KDA_MODELS


def _nested(cfg: HfConfig) -> dict[str, Any]:
    block = cfg.get(_NESTED)
    if block is None:
        return {}
    if not isinstance(block, dict):
        _refuse(cfg, None, f"'{cfg.where(_NESTED)}' must be an object, found {block!r:.40}")
    return block


def _refuse(
    cfg: HfConfig,
    key: str | None,
    message: str,
    code: Code = codes.INVALID_CONFIG_VALUE,
    field: str = _NESTED,
) -> NoReturn:
    """One diagnostic at linear_attn_config's ``key``, or at the top-level ``field``."""
    fix = "use the values published with the model"
    where = cfg.reader.keys.get((*cfg.prefix, _NESTED, key)) if key is not None else None
    if where is None:
        cfg.diag(code, field, message, fix)
    else:
        cfg.diagnostics.append(code.at(cfg.display, where, message, fix))
    raise Abort


def _dimension(cfg: HfConfig, flat: str) -> tuple[int, str]:
    """A KDA dimension as KimiLinearConfig.__post_init__ reads it: linear_attn_config's key,
    else the flat field, else the class default; with where it came from."""
    key, default, maximum = _DIMENSIONS[flat]
    nested = _nested(cfg)
    if key in nested:
        value, where, note = nested[key], f"{cfg.where(_NESTED)}.{key}", f"{_NESTED}.{key}"
    elif cfg.has(flat):
        value, where, note = cfg.get(flat), cfg.where(flat), flat
    elif cfg.get("model_type") == LING_V3 and cfg.has(_LING_V3_SOURCES[flat]):
        source = _LING_V3_SOURCES[flat]
        value, where = cfg.get(source), cfg.where(source)
        note = f"{source} (BailingHybridConfig: {flat} = {source})"
    else:
        return default, f"KimiLinearConfig default {flat} {default}"
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        _refuse(cfg, key if key in nested else None,
                f"'{where}' must be an integer in [1, {maximum}], found {value!r:.40}",
                field=_NESTED if key in nested else flat)  # fmt: skip
    return value, f"config.json {note}"


def _layer_list(cfg: HfConfig, key: str, layers: int) -> set[int]:
    value = _nested(cfg)[key]
    if not isinstance(value, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= layers for i in value
    ):
        _refuse(cfg, key, f"'{cfg.where(_NESTED)}.{key}' must list layer numbers in [1, {layers}] "
                "(1-indexed, num_hidden_layers)")  # fmt: skip
    return set(value)


def kda_layer_types(cfg: HfConfig, layers: int) -> tuple[list[str | None], str] | None:
    """Kimi Linear's layer kinds where config.json has no ``layer_types`` (KimiLinearConfig:
    ``layer_types`` first, then linear_attn_config's ``kda_layers`` / ``full_attn_layers``,
    then its default: full attention at every 4th layer from layer 4, KDA elsewhere); None
    for every other model, and where ``layer_types`` is given (read as for any model)."""
    if not is_kda(cfg) or cfg.has("layer_types"):
        return None
    if cfg.get("model_type") == LING_V3:
        group = cfg.int_("layer_group_size", required=True)
        kinds: list[str | None] = [
            "full" if (i + 1) % group == 0 else "linear" for i in range(layers)
        ]
        return kinds, f"config.json layer_group_size {group} (every {group}th layer full)"
    nested = _nested(cfg)
    if "kda_layers" in nested and "full_attn_layers" in nested:
        kda = _layer_list(cfg, "kda_layers", layers)
        full = _layer_list(cfg, "full_attn_layers", layers)
        if kda & full or len(kda) + len(full) != layers:
            _refuse(cfg, "kda_layers", f"'{cfg.where(_NESTED)}' kda_layers and full_attn_layers "
                    f"must name each of the {layers} layers once (num_hidden_layers)",
                    codes.CONTRADICTORY_CONFIG_FIELDS)  # fmt: skip
        kinds = ["linear" if i + 1 in kda else "full" for i in range(layers)]
        return kinds, f"config.json {_NESTED} kda_layers / full_attn_layers (1-indexed)"
    kinds = ["full" if i and i % 4 == 0 else "linear" for i in range(layers)]
    return kinds, "KimiLinearConfig default: full attention at layers 4, 8, ... (0-indexed)"


def kda_state(cfg: HfConfig, dtype_bytes: int) -> ImportedKind:
    """A KDA layer's state as a ``mamba:`` kind in the Gated-DeltaNet form (module docstring),
    each number with the field it came from; the recurrent state fp32."""
    heads, heads_note = _dimension(cfg, "linear_num_heads")
    head_dim, dim_note = _dimension(cfg, "linear_head_dim")
    width, width_note = _dimension(cfg, "linear_conv_kernel_dim")
    if width < 2:
        _refuse(cfg, "short_conv_kernel_size", f"a KDA conv kernel of {width} keeps no window")
    conv = (width - 1) * 3 * heads * head_dim
    ssm = heads * head_dim * head_dim
    total = conv * dtype_bytes + ssm * 4
    if total > MAX_STATE_BYTES:
        _refuse(cfg, "num_heads", f"KDA state of {total} bytes per layer is over the spec's "
                f"maximum {MAX_STATE_BYTES}")  # fmt: skip
    dims: tuple[tuple[str, int | str, str], ...] = (
        ("num_heads", heads, heads_note),
        ("head_dim", head_dim, dim_note),
        ("d_state", head_dim, f"{dim_note} (KDA: head_k_dim = head_dim)"),
        ("n_groups", heads, f"{heads_note} (KDA: num_k_heads = num_heads)"),
        ("d_conv", width, width_note),
        ("ssm_dtype", "fp32", "KDA recurrent state: vLLM kda_state_dtype, SGLang default fp32"),
    )
    note = (
        f"{total} B per request at tp=1: Kimi Delta Attention, conv (kernel {width} - 1) * 3 "
        f"(q, k, v) * {heads} heads * {head_dim} * {dtype_bytes} B + recurrent {heads} * "
        f"{head_dim} * {head_dim} * 4 B (fp32)"
    )
    return ImportedKind("recurrent", mamba=dims, notes=(("mamba", note),), base="kda")
