"""The entry point: config.json text in, spec text or diagnostics out."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from kvgen.diagnostics import Diagnostic
from kvgen.importhf._config import Abort, Config, check_fields, field_spelling
from kvgen.importhf._json import JsonReader
from kvgen.importhf._layers import (
    NO_CACHE,
    Kind,
    attention_kinds,
    cache_dtype,
    per_layer_types,
    state_bytes,
)
from kvgen.importhf._render import Spec, default_model_name, render, to_identifier

__all__ = ["IMPORT_CODES", "ImportResult", "import_config"]

# Stable diagnostic codes of ``kvgen import-hf`` (one line each, for ``kvgen explain``).
IMPORT_CODES = {
    "KV301": "the file cannot be read as a JSON object (syntax, encoding, top-level type)",
    "KV302": "a config field the importer does not know; it may change the KV cache",
    "KV303": "config fields that contradict each other",
    "KV304": "a field the importer needs is missing",
    "KV305": "a value or feature the spec format cannot express",
    "KV306": "a duplicate key in a JSON object",
    "KV307": "a value of the wrong type or range",
}


@dataclass
class ImportResult:
    """``text`` is the spec (``None`` when there are diagnostics)."""

    text: str | None
    diagnostics: list[Diagnostic] = field(default_factory=list)


def import_config(
    display: str,
    text: str,
    *,
    family: str | None = None,
    model: str | None = None,
    tokens_per_block: int = 32,
    kv_cache_dtype: str | None = None,
    ignore_fields: Sequence[str] = (),
) -> ImportResult:
    """Turn config.json text into spec text; every problem is a diagnostic, never an exception."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return ImportResult(
            None,
            [
                Diagnostic(
                    display,
                    exc.lineno,
                    exc.colno,
                    "KV301",
                    f"invalid JSON: {exc.msg}",
                    fix="fix the JSON syntax",
                )
            ],
        )
    if not isinstance(data, dict):
        return ImportResult(
            None,
            [
                Diagnostic(
                    display,
                    1,
                    1,
                    "KV301",
                    "top level must be a JSON object",
                    fix="pass the model's config.json",
                )
            ],
        )
    reader = JsonReader(text)
    reader.read(0, ())
    cfg = Config(display, data, reader)
    for path, (line, col) in reader.duplicates:
        cfg.diagnostics.append(
            Diagnostic(
                display,
                line,
                col,
                "KV306",
                f"duplicate key '{'.'.join(map(str, path))}'",
                fix="remove one",
            )
        )
    check_fields(cfg, frozenset(ignore_fields))
    if cfg.diagnostics:
        return ImportResult(None, sorted(cfg.diagnostics))
    try:
        spec = _build(cfg, family, model, tokens_per_block, kv_cache_dtype)
    except Abort:
        return ImportResult(None, sorted(cfg.diagnostics))
    return ImportResult(render(spec), [])


def _build(cfg: Config, family: str | None, model: str | None, tpb: int, dtype: str | None) -> Spec:
    layers_name = field_spelling(cfg, "num_hidden_layers")
    layers = cfg.int_(layers_name, required=True)
    seq_name = field_spelling(cfg, "max_position_embeddings")
    seq_len = cfg.int_(seq_name, required=True)
    short, dtype_note, dtype_bytes = cache_dtype(cfg, dtype)
    types, types_note = per_layer_types(cfg, layers)  # type: ignore[arg-type]
    attention = attention_kinds(cfg, layers, types, seq_len)  # type: ignore[arg-type]
    kinds: list[Kind] = []
    for kind, shape in zip(types, attention, strict=True):
        if kind in ("linear", "mamba"):
            kinds.append(state_bytes(cfg, kind, dtype_bytes))
        elif shape is not None:
            kinds.append(shape)
        elif kind == "none":
            kinds.append(NO_CACHE)
    cacheless = types.count("none")
    layers_note = f"config.json {layers_name}"
    if cacheless:
        layers_note += (
            f"; kinds from {types_note}, {cacheless} MLP/MoE blocks without cache (attention: none)"
        )
    elif types_note not in ("full attention",):
        layers_note += f"; kinds from {types_note}"
    mtp = cfg.int_("num_nextn_predict_layers", minimum=0) or cfg.int_(
        "mtp_num_hidden_layers", minimum=0
    )
    mtp_name = (
        "num_nextn_predict_layers"
        if cfg.has("num_nextn_predict_layers")
        else "mtp_num_hidden_layers"
    )
    return Spec(
        family=family or to_identifier(str(cfg.data.get("model_type") or ""), "f") or "imported",
        model=model or default_model_name(cfg.display, cfg.data) or "imported",
        source=cfg.display,
        tokens_per_block=tpb,
        tpb_note="kvgen import-hf --tokens-per-block (engine default 32)",
        dtype=short,
        dtype_note=dtype_note,
        seq_len=seq_len,  # type: ignore[arg-type]
        seq_note=f"config.json {seq_name}",
        kinds=kinds,
        layers_note=layers_note,
        mtp_layers=mtp or 0,
        mtp_note=f"config.json {mtp_name}",
    )
