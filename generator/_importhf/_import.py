"""The entry point: config.json text in, spec text or diagnostics out."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kvgen._importhf._architecture import architecture
from kvgen._importhf._attention import attention_kinds
from kvgen._importhf._config import Abort, HfConfig, check_fields, field_spelling
from kvgen._importhf._cross import cross_attention_kinds
from kvgen._importhf._dtype import cache_dtype
from kvgen._importhf._json import MAX_JSON_DEPTH, JsonReader, loads, nesting_too_deep
from kvgen._importhf._kda import is_kda, kda_layer_types, kda_state
from kvgen._importhf._layers import (
    NO_CACHE,
    RECURRENT_TYPES,
    ImportedKind,
    lightning_state,
    mamba1_state,
    per_layer_types,
    state_bytes,
)
from kvgen._importhf._located import located
from kvgen._importhf._parallel import parallel_kinds, zamba2_post_init
from kvgen._importhf._patterns import layer_count
from kvgen._importhf._quant import layout_misfit
from kvgen._importhf._refusals import architecture_refusal
from kvgen._importhf._render import Spec, default_model_name, render, to_identifier
from kvgen._importhf._sharing import shared_kinds
from kvgen._util.codes import hf as codes
from kvgen._util.diagnostics import Diagnostic

__all__ = ["MAX_CONFIG_BYTES", "ImportResult", "import_config"]

MAX_CONFIG_BYTES = 4 << 20  # published configs are a few KiB


@dataclass
class ImportResult:
    """``text`` is the spec (``None`` when there are diagnostics)."""

    text: str | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # Warnings of an import that went through (noted unknown fields, dtype notes).
    notes: list[Diagnostic] = field(default_factory=list)


def _refused(diagnostic: Diagnostic) -> ImportResult:
    return ImportResult(None, [diagnostic])


def import_config(
    display: str,
    text: str,
    *,
    family: str | None = None,
    model: str | None = None,
    tokens_per_block: int = 32,
    kv_cache_dtype: str | None = None,
    ignore_fields: Sequence[str] = (),
    max_seq_len: int | None = None,
    source: str | None = None,
) -> ImportResult:
    """Turn config.json text into spec text; every problem is a diagnostic, never an exception.

    Every diagnostic points into the config (``display``), never at the spec to be written;
    ``source`` is what the spec's header names (default ``display``: a Hugging Face cache
    repository's ``ORG/NAME@REVISION``)."""
    if len(text) > MAX_CONFIG_BYTES:
        return _refused(
            codes.CONFIG_TOO_LARGE.at(
                display, (1, 1), f"config is {len(text)} characters, over {MAX_CONFIG_BYTES}"
            )
        )
    deep = nesting_too_deep(text)
    if deep is not None:
        return _refused(
            codes.CONFIG_TOO_LARGE.at(
                display,
                JsonReader(text[: deep + 1]).position(deep),
                f"config nests deeper than {MAX_JSON_DEPTH} levels",
            )
        )
    try:
        data = loads(text)
    except json.JSONDecodeError as exc:
        return _refused(
            codes.UNREADABLE_CONFIG.at(
                display, (exc.lineno, exc.colno), f"invalid JSON: {exc.msg}", "fix the JSON syntax"
            )
        )
    if not isinstance(data, dict):
        return _refused(
            codes.UNREADABLE_CONFIG.at(display, (1, 1), "top level must be a JSON object")
        )
    reader = JsonReader(text)
    reader.read(0, ())
    cfg = HfConfig(display, data, reader)
    for path, at in reader.duplicates:
        cfg.diagnostics.append(
            codes.DUPLICATE_CONFIG_KEY.at(
                display, at, f"duplicate key '{'.'.join(map(str, path))}'"
            )
        )
    if not cfg.diagnostics and architecture_refusal(cfg):
        return ImportResult(None, cfg.diagnostics)
    check_fields(cfg, frozenset(ignore_fields))
    if cfg.diagnostics:
        # unknown or unsupported fields only (no contradiction): what do the layers hold?
        fields_only = {d.code for d in cfg.diagnostics} <= {
            codes.UNKNOWN_CONFIG_FIELD.code,
            codes.UNSUPPORTED_CONFIG_FEATURE.code,
        }
        feature = _unsupported_feature(cfg, kv_cache_dtype, max_seq_len) if fields_only else []
        return ImportResult(None, feature or sorted(cfg.diagnostics))
    try:
        spec = _build(cfg, family, model, tokens_per_block, kv_cache_dtype, max_seq_len)
    except Abort:
        return ImportResult(None, sorted(cfg.diagnostics))
    if source is not None:
        spec.source = source
    notes = sorted(cfg.notes)
    spec.notes = tuple(f"{d.code} {d.message}" for d in notes)
    out = located(cfg, render(spec))
    refused = _refused_by_schema(display, out)
    return ImportResult(None, refused) if refused else ImportResult(out, [], notes)


def _unsupported_feature(
    cfg: HfConfig, kv_cache_dtype: str | None, max_seq_len: int | None
) -> list[Diagnostic]:
    """The feature the spec format cannot express (KV305), when reading the layers past the
    unknown fields finds one: a refusal names that, not the unknown field that announces it
    (LFM's ``conv_L_cache`` of its conv layers, inkling's ``swa_*`` of its hybrid layers).
    Nothing read here is kept: the unknown fields still block an import that gets further."""
    probe = HfConfig(cfg.display, cfg.data, cfg.reader)
    with contextlib.suppress(Abort):
        _build(probe, None, None, 32, kv_cache_dtype or "bf16", max_seq_len)
    code = codes.UNSUPPORTED_CONFIG_FEATURE.code
    return [d for d in probe.diagnostics if d.code == code][:1]


def _refused_by_schema(display: str, text: str) -> list[Diagnostic]:
    """The schema's and lint's verdict on the spec built; the checks above should leave them
    nothing to say, but if they do, say it about the config (the spec is never written): what
    import-hf writes always lints clean, so it always generates."""
    from kvgen._lint.linter import lint_loaded
    from kvgen._spec.loader import load_bytes

    loaded = load_bytes("<imported spec>", text.encode("utf-8"))
    found = loaded.diagnostics
    if not found:
        found = [d for d in lint_loaded(loaded) if d.severity == "error"]
    return [
        codes.INVALID_CONFIG_VALUE.at(
            display,
            (1, 1),
            f"the spec built from this config would be refused ({d.code}): {d.message}",
        )
        for d in found
    ]


def _seq_len(cfg: HfConfig, flag: int | None) -> tuple[int, str]:
    """The model's context: the config's, or ``--max-seq-len`` (a pure SSM saves none; a
    deployment may cap it, never raise it past the native length)."""
    seq_name = field_spelling(cfg, "max_position_embeddings")
    native = cfg.int_(seq_name) if cfg.has(seq_name) else None
    if native is None and flag is None:
        cfg.diag(
            codes.MISSING_CONFIG_FIELD,
            None,
            "config has no 'max_position_embeddings' (state-space and ALiBi models save "
            "none; their cache does not bound the context)",
            "pass --max-seq-len N, the longest context you deploy",
        )
        raise Abort
    if flag is None:
        return native, f"config.json {seq_name}"  # type: ignore[return-value]  # both None: refused
    if native is not None and flag > native:
        cfg.diag(
            codes.INVALID_CONFIG_VALUE,
            seq_name,
            f"--max-seq-len {flag} is past the config's {seq_name} {native}",
            "give at most the native length; plan a RoPE-scaled context at deploy time "
            "(kvgen plan --max-seq-len N --rope-scaled)",
        )
        raise Abort
    return flag, "kvgen import-hf --max-seq-len"


# vLLM 0.33 (vllm/config/model.py, _get_and_verify_max_len) takes max_position_embeddings as
# the scaled context for these RoPE types ("YaRN variants leave max_position_embeddings already
# scaled, as Transformers' _compute_yarn_parameters assumes") and for every gemma3 model type
# ("Gemma3's max_model_len (128K) is already scaled by RoPE scaling"); any other type's
# factor it multiplies into the derived max_model_len.
UNSCALED_ROPE_TYPES = (
    "su",
    "longrope",
    "llama3",
    "yarn",
    "deepseek_yarn",
    "deepseek_llama_scaling",
)


def _already_scaled(
    cfg: HfConfig, kind: str, native: int | None, original: Any, scaled: Any
) -> bool:
    """Whether the config's max_position_embeddings ``native`` is already the RoPE-scaled
    context: a gemma3 model; or a block whose pre-scaling length is below it (Llama 3.1:
    original_max_position_embeddings 8192 under 131072) or whose scaled length it reaches
    (DeepSeek-V3: 4096 x 40 = 163840); or, with no original length given, a type vLLM never
    multiplies."""
    if native is None:
        return False
    model_types = (cfg.inner.get("model_type"), cfg.data.get("model_type"))
    if any(isinstance(t, str) and "gemma3" in t for t in model_types):
        return True
    if isinstance(original, int) and not isinstance(original, bool) and original >= 1:
        return original < native or (scaled is not None and scaled <= native)
    return kind in UNSCALED_ROPE_TYPES and kind != "yarn"  # yarn: original defaults to native


def _note_rope_scaling(cfg: HfConfig, seq_len: int) -> None:
    """A RoPE scaling block (``rope_scaling``, or transformers-5 ``rope_parameters`` with a
    scaled ``rope_type``) is noted with the context it reaches, ``factor`` times
    ``original_max_position_embeddings`` (the native length without one): the spec keeps
    the native context, and a deployment plans the scaled one with ``--rope-scaled``. Where
    max_position_embeddings already is the scaled context (``_already_scaled``), the note says
    so and suggests no longer plan."""
    seq_name = field_spelling(cfg, "max_position_embeddings")
    native = cfg.get(seq_name)
    native = native if isinstance(native, int) and not isinstance(native, bool) else None
    for name in ("rope_scaling", "rope_parameters"):
        block = cfg.get(name)
        if not isinstance(block, dict):
            continue
        kind = block.get("rope_type", block.get("type"))
        if kind in (None, "default") or not isinstance(kind, str):
            continue
        factor = block.get("factor")
        numeric = isinstance(factor, (int, float)) and not isinstance(factor, bool)
        given = block.get("original_max_position_embeddings") or cfg.get(
            "original_max_position_embeddings"
        )
        original = given
        if not isinstance(original, int) or isinstance(original, bool) or original < 1:
            original = seq_len
        # numeric: factor is an int or a float, not None (mypy does not narrow through a bool)
        scaled = int(original * factor) if numeric and 1 <= factor <= 1 << 10 else None  # type: ignore[operator]
        by = f"{name}: {kind[:20]!r} scaling" + (f" by {factor!r:.12}" if numeric else "")
        if _already_scaled(cfg, kind, native, given, scaled):
            cfg.note(
                codes.IMPORT_NOTE,
                name,
                f"{by}; {seq_name} {native} is already the scaled context, which the spec "
                f"keeps as max_seq_len {seq_len}",
                f"plan up to {native} tokens as it is; no longer context comes from this block",
            )
            return
        reach = f" to {scaled} tokens" if scaled and scaled > seq_len else ""
        cfg.note(
            codes.IMPORT_NOTE,
            name,
            f"{by}{reach}; the spec keeps the native max_seq_len {seq_len}",
            f"plan the scaled context with --max-seq-len {scaled} --rope-scaled"
            if reach
            else "plan a RoPE-scaled context with --rope-scaled",
        )
        return


def _query_heads(cfg: HfConfig) -> tuple[int | None, str]:
    """The model's query heads, which vLLM (ModelConfig.verify_with_parallel_config), SGLang
    (QKVParallelLinear) and TensorRT-LLM check tp against at start-up, and the field that
    gives them; None where the config gives no one count (none, or one per layer)."""
    name = field_spelling(cfg, "num_attention_heads")
    value = cfg.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        return None, name
    return cfg.int_(name), name


def _build(
    cfg: HfConfig,
    family: str | None,
    model: str | None,
    tpb: int,
    dtype: str | None,
    max_seq_len: int | None = None,
) -> Spec:
    zamba2_post_init(cfg)
    layers, layers_name = layer_count(cfg)
    seq_len, seq_note = _seq_len(cfg, max_seq_len)
    _note_rope_scaling(cfg, seq_len)
    short, dtype_note, dtype_bytes = cache_dtype(cfg, dtype)
    types, types_note = kda_layer_types(cfg, layers) or per_layer_types(cfg, layers)
    attention = attention_kinds(cfg, layers, types, seq_len)
    kinds: list[ImportedKind] = []
    for kind, shape in zip(types, attention, strict=True):
        if kind == "mamba1":
            kinds.append(mamba1_state(cfg, dtype_bytes))
        elif kind == "lightning":
            kinds.append(lightning_state(cfg, dtype_bytes))
        elif kind in RECURRENT_TYPES:
            kinds.append(
                kda_state(cfg, dtype_bytes) if is_kda(cfg) else state_bytes(cfg, kind, dtype_bytes)
            )
        elif shape is not None:
            kinds.append(shape)
        elif kind == "none":
            kinds.append(NO_CACHE)
    kinds = parallel_kinds(cfg, kinds, dtype_bytes)
    kinds, cross_note = cross_attention_kinds(cfg, kinds, layers)
    kinds = shared_kinds(cfg, kinds, types)
    misfit = layout_misfit(kinds, short)
    if misfit is not None:
        where, why = misfit
        cfg.diag(
            codes.KV_CACHE_LAYOUT_MISMATCH,
            where if cfg.has(where) else None,
            f"--kv-cache-dtype {short}: {why}",
            codes.KV_CACHE_LAYOUT_MISMATCH.fix,
        )
        raise Abort
    cacheless = types.count("none")
    layers_note = f"config.json {layers_name}"
    if cacheless:
        layers_note += (
            f"; kinds from {types_note}, {cacheless} MLP/MoE blocks without cache (attention: none)"
        )
    elif types_note not in ("full attention",):
        layers_note += f"; kinds from {types_note}"
    if cross_note:
        layers_note += f"; {cross_note}"
    nextn = field_spelling(cfg, "num_nextn_predict_layers")
    mtp = cfg.int_(nextn, minimum=0) or cfg.int_("mtp_num_hidden_layers", minimum=0)
    mtp_name = nextn if cfg.has(nextn) else "mtp_num_hidden_layers"
    # The language model's own vocab_size only (engines compare a draft's with it); a
    # multimodal config's top level may count other tokens.
    vocab = cfg.int_("vocab_size") if "vocab_size" in cfg.inner else None
    query, query_name = _query_heads(cfg)
    arch, arch_note = architecture(cfg.data)
    return Spec(
        architecture=arch,
        architecture_note=arch_note,
        family=family or to_identifier(str(cfg.data.get("model_type") or ""), "f") or "imported",
        model=model or default_model_name(cfg.display, cfg.data) or "imported",
        source=cfg.display,
        tokens_per_block=tpb,
        tpb_note="kvgen import-hf --tokens-per-block (engine default 32)",
        dtype=short,
        dtype_note=dtype_note,
        seq_len=seq_len,
        seq_note=seq_note,
        vocab_size=vocab,
        vocab_note=f"config.json {cfg.where('vocab_size')}",
        query_heads=query,
        query_note=f"config.json {cfg.where(query_name)}",
        kinds=kinds,
        layers_note=layers_note,
        mtp_layers=mtp or 0,
        mtp_note=f"config.json {mtp_name}",
    )
