"""Naming, layer patterns and the spec text the importer writes."""

from __future__ import annotations

import keyword
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kvgen._importhf._layers import ImportedKind

__all__ = ["Spec", "compact_pattern", "default_model_name", "render", "to_identifier"]


# --------------------------------------------------------------------------- naming and patterns


def compact_pattern(kinds: Sequence[str]) -> list[str]:
    """The shortest prefix whose cyclic repetition reproduces ``kinds`` (layer i: p[i % len])."""
    for period in range(1, len(kinds) + 1):
        if all(kinds[i] == kinds[i % period] for i in range(len(kinds))):
            return list(kinds[:period])
    return list(kinds)


def to_identifier(text: str, prefix: str = "m") -> str | None:
    """``Llama-3.1-8B`` -> ``llama_3_1_8b``; ``None`` when nothing usable is left."""
    name = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:64].rstrip("_")
    if not name:
        return None
    if not name[0].isalpha():
        name = f"{prefix}_{name}"[:64]
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        name = f"{name}_model"
    return name


def _name_kinds(kinds: list[ImportedKind]) -> dict[ImportedKind, str]:
    names: dict[ImportedKind, str] = {}
    for kind in kinds:
        if kind in names:
            continue
        same = [k for k in dict.fromkeys(kinds) if k.base == kind.base]
        if len(same) == 1:
            names[kind] = kind.base
        elif kind.kv_heads is not None:
            names[kind] = f"{kind.base}_kv{kind.kv_heads}_d{kind.head_dim}"
        else:
            names[kind] = f"{kind.base}_{same.index(kind) + 1}"
    return names


# --------------------------------------------------------------------------- rendering


_FIELDS = (
    "attention",
    "window",
    "chunk",
    "kv_heads",
    "head_dim",
    "v_head_dim",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "state_bytes",
    "index_head_dim",
    "reads",
    "encoder_tokens",
)


def _kind_lines(kind: ImportedKind, indent: str) -> list[str]:
    notes = dict(kind.notes)
    lines = []
    for name in _FIELDS:
        value = getattr(kind, name)
        if name == "attention":
            value = "full" if kind.attention == "mla" else kind.attention
        if value is None:
            continue
        note = notes.get(name)
        lines.append(f"{indent}{name}: {value}" + (f"  # {note}" if note else ""))
    if kind.mamba:
        lines.append(f"{indent}{kind.mamba_key}:  # {notes['mamba']}")
        lines += [f"{indent}  {name}: {value}  # {note}" for name, value, note in kind.mamba]
    return lines


@dataclass
class Spec:
    family: str
    model: str
    source: str
    tokens_per_block: int
    tpb_note: str
    dtype: str
    dtype_note: str
    seq_len: int
    seq_note: str
    kinds: list[ImportedKind]
    layers_note: str
    mtp_layers: int = 0
    mtp_note: str = ""
    vocab_size: int | None = None
    vocab_note: str = ""
    query_heads: int | None = None  # num_attention_heads: engines refuse a tp not dividing it
    query_note: str = ""
    architecture: str | None = None  # config.json architectures[0]: the class engines load
    architecture_note: str = ""
    notes: tuple[str, ...] = ()  # said at import (KV302 notes, dtype notes), kept as comments


def _comment(text: str) -> str:
    """One comment line: a config's own strings (field names) may hold line breaks or
    control characters, which would end the comment; they are written escaped."""
    return text.encode("unicode_escape").decode("ascii")


def render(spec: Spec) -> str:
    names = _name_kinds(spec.kinds)
    per_layer = [names[k] for k in spec.kinds]
    lines = [
        "# yaml-language-server: $schema=../kvspec.schema.json",
        f"# Imported by kvgen import-hf from {spec.source}; every number names its config field.",
        *(f"# note: {_comment(note)}" for note in spec.notes),
        "schema_version: 1",
        f"family: {spec.family}",
        f"tokens_per_block: {spec.tokens_per_block}  # {spec.tpb_note}",
        f"kv_cache_dtype: {spec.dtype}  # {spec.dtype_note}",
        "models:",
        f"  - name: {spec.model}",
        f"    max_seq_len: {spec.seq_len}  # {spec.seq_note}",
        *(
            [f"    architecture: {spec.architecture}  # {spec.architecture_note}"]
            if spec.architecture
            else []
        ),
        *([f"    vocab_size: {spec.vocab_size}  # {spec.vocab_note}"] if spec.vocab_size else []),
        *(
            [f"    num_attention_heads: {spec.query_heads}  # {spec.query_note}"]
            if spec.query_heads
            else []
        ),
        "    layer_kinds:",
    ]
    for kind, name in names.items():
        lines.append(f"      {name}:")
        lines += _kind_lines(kind, "        ")
    lines += [
        "    layers:",
        f"      count: {len(per_layer)}  # {spec.layers_note}",
        f"      pattern: [{', '.join(compact_pattern(per_layer))}]",
    ]
    if spec.mtp_layers:
        mtp_kind = next((k for k in spec.kinds if k.attention in ("mla", "full")), None)
        if mtp_kind is not None:
            lines += [
                "speculative:",
                "  - name: mtp",
                "    mode: mtp",
                f"    max_draft_len: {spec.mtp_layers}  # {spec.mtp_note}",
                "    extra_layers:  # MTP layers have the shape of a full-attention layer",
                "      layer_kinds:",
                "        mtp:",
                *_kind_lines(mtp_kind, "          "),
                "      layers:",
                f"        count: {spec.mtp_layers}  # {spec.mtp_note}",
                "        pattern: [mtp]",
            ]
    return "\n".join(lines) + "\n"


def default_model_name(display: str, data: dict[str, Any]) -> str | None:
    """From ``_name_or_path``, else the file name (its folder's name for ``config.json``)."""
    from pathlib import PurePath

    source = data.get("_name_or_path") if isinstance(data, dict) else None
    if isinstance(source, str) and source.strip("/"):
        return to_identifier(source.rstrip("/").rsplit("/", 1)[-1])
    path = PurePath(display)
    stem = path.parent.name if path.stem == "config" else path.stem
    return to_identifier(stem)
