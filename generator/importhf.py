"""Import a Hugging Face ``config.json`` into a kvgen family spec (``kvgen import-hf``).

The importer reads only what decides the KV cache: layer count, KV heads, head size, which
layers slide and how far, MLA latent sizes, recurrent state sizes, dtype and context length.
It never guesses: a field it does not know, or two fields that disagree, become diagnostics
anchored at the JSON key, and no spec is produced.

Codes (stable; a retired code is never reused):
- ``KV301`` the file cannot be read as a JSON object
- ``KV302`` a field the importer does not know (it may change the cache)
- ``KV303`` fields that contradict each other
- ``KV304`` a required field is missing
- ``KV305`` a value or feature the spec cannot express
- ``KV306`` a duplicate key in a JSON object
- ``KV307`` a value of the wrong type or range
"""

from __future__ import annotations

import bisect
import json
import keyword
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from generator.diagnostics import Diagnostic

__all__ = ["IMPORT_CODES", "ImportResult", "compact_pattern", "import_config", "to_identifier"]

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

Path_ = tuple[str | int, ...]

_DTYPES = {"bfloat16": ("bf16", 2), "float16": ("fp16", 2), "float32": ("fp32", 4)}
_DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
_LAYER_TYPES = {
    "full_attention": "full",
    "attention": "full",
    "sliding_attention": "sliding",
    "linear_attention": "linear",
    "mamba": "mamba",
    "mamba2": "mamba",
}
# Nemotron-H hybrid_override_pattern: M Mamba-2, * attention, - MLP, E MoE. MLP and MoE
# blocks hold no cache but count in num_hidden_layers (pipeline ranks split by layer index),
# so they become an `attention: none` kind rather than being dropped.
_HYBRID_CHARS = {"M": "mamba", "*": "full", "-": "none", "E": "none"}
_BLOCK_TYPES = {"attention": "full", "mamba": "mamba", "mlp": "none", "moe": "none"}


class _Abort(Exception):
    """Stop reading: the diagnostics collected so far say why."""


# --------------------------------------------------------------------------- JSON with positions


class _JsonReader:
    """Parse JSON already known to be valid, recording each key's and value's line:col."""

    def __init__(self, text: str):
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.keys: dict[Path_, tuple[int, int]] = {}
        self.values: dict[Path_, tuple[int, int]] = {}
        self.duplicates: list[tuple[Path_, tuple[int, int]]] = []
        self._decoder = json.JSONDecoder()

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def _skip(self, i: int) -> int:
        while i < len(self.text) and self.text[i] in " \t\r\n":
            i += 1
        return i

    def read(self, i: int, path: Path_) -> tuple[Any, int]:
        i = self._skip(i)
        self.values[path] = self.position(i)
        char = self.text[i]
        if char == "{":
            out: dict[str, Any] = {}
            i = self._skip(i + 1)
            while self.text[i] != "}":
                key, end = json.decoder.scanstring(self.text, i + 1)
                if key in out:
                    self.duplicates.append(((*path, key), self.position(i)))
                else:
                    self.keys[(*path, key)] = self.position(i)
                i = self._skip(end)  # at ':'
                out[key], i = self.read(i + 1, (*path, key))
                i = self._skip(i)
                if self.text[i] == ",":
                    i = self._skip(i + 1)
            return out, i + 1
        if char == "[":
            items: list[Any] = []
            i = self._skip(i + 1)
            while self.text[i] != "]":
                item, i = self.read(i, (*path, len(items)))
                items.append(item)
                i = self._skip(i)
                if self.text[i] == ",":
                    i = self._skip(i + 1)
            return items, i + 1
        return self._decoder.raw_decode(self.text, i)


# --------------------------------------------------------------------------- the config view


@dataclass(frozen=True)
class _Kind:
    """One cache shape; ``notes`` maps a spec field to the comment naming its source."""

    attention: str  # full | sliding | mla | recurrent | none
    window: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    state_bytes: int | None = None
    notes: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    base: str = ""


# An MLP-only or MoE-only block: no cache, but it keeps its layer index.
_NO_CACHE = _Kind("none", notes=(("attention", "MLP/MoE block: no KV cache"),), base="ffn")


@dataclass
class ImportResult:
    """``text`` is the spec (``None`` when there are diagnostics)."""

    text: str | None
    diagnostics: list[Diagnostic] = field(default_factory=list)


class _Config:
    """Field access over a config (or its ``text_config``) that reports at the key's position."""

    def __init__(self, display: str, data: dict[str, Any], reader: _JsonReader):
        self.display = display
        self.data = data
        self.reader = reader
        self.diagnostics: list[Diagnostic] = []
        text_config = data.get("text_config")
        self.prefix: Path_ = ("text_config",) if isinstance(text_config, dict) else ()
        self.inner: dict[str, Any] = text_config if isinstance(text_config, dict) else data

    def where(self, name: str) -> str:
        return ".".join(str(p) for p in (*self.prefix, name)) if name in self.inner else name

    def diag(self, code: str, name: str | None, message: str, fix: str) -> None:
        line, col = 1, 1
        if name is not None:
            path = (*self.prefix, name) if name in self.inner else (name,)
            line, col = self.reader.keys.get(path, (1, 1))
        self.diagnostics.append(Diagnostic(self.display, line, col, code, message, fix=fix))

    def has(self, name: str) -> bool:
        return self.get(name) is not None

    def get(self, name: str) -> Any:
        if name in self.inner:
            return self.inner[name]
        return self.data.get(name) if self.prefix else None

    def int_(self, name: str, *, required: bool = False, minimum: int = 1) -> int | None:
        value = self.get(name)
        if value is None:
            if required:
                self.diag("KV304", None, f"config has no '{name}'", f"add '{name}' to the config")
                raise _Abort
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.diag(
                "KV307",
                name,
                f"'{self.where(name)}' must be an integer >= {minimum}, found {value!r}",
                "use the value published with the model",
            )
            raise _Abort
        return value

    def per_layer(self, name: str, layers: int) -> list[int] | None:
        """A field that is one integer or one integer per layer."""
        value = self.get(name)
        if value is None:
            return None
        if isinstance(value, list):
            if len(value) != layers:
                self.diag(
                    "KV303",
                    name,
                    f"'{self.where(name)}' lists {len(value)} values for {layers} layers",
                    "give one value per layer, or check num_hidden_layers",
                )
                raise _Abort
            if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value):
                self.diag(
                    "KV307",
                    name,
                    f"'{self.where(name)}' must list positive integers",
                    "use the values published with the model",
                )
                raise _Abort
            return list(value)
        return [self.int_(name)] * layers  # type: ignore[list-item]


# --------------------------------------------------------------------------- field checks


def _check_fields(cfg: _Config, ignored: frozenset[str]) -> None:
    def known(name: str) -> bool:
        return (
            name in CACHE_FIELDS
            or name in IGNORED_FIELDS
            or name in ignored
            or name in ALIASES
            or name.startswith(IGNORED_PREFIXES)
            or name.endswith(IGNORED_SUFFIXES)
        )

    names = set(cfg.inner)
    if cfg.prefix:
        names |= {n for n in cfg.data if n != "text_config"}
    for name in sorted(names):
        if name in UNSUPPORTED_FIELDS:
            value = cfg.get(name)
            if value not in (None, False, 0, []):
                cfg.diag(
                    "KV305",
                    name,
                    f"'{cfg.where(name)}' = {value!r}: {UNSUPPORTED_FIELDS[name]}",
                    "describe the model by hand in a spec; kvgen import-hf cannot express it",
                )
        elif not known(name):
            cfg.diag(
                "KV302",
                name,
                f"unknown config field '{cfg.where(name)}'; kvgen cannot tell whether it "
                "changes the KV cache",
                f"check the model's attention code, then pass --ignore-field {name}",
            )
    if cfg.prefix:
        for name in sorted(set(cfg.inner) & set(cfg.data) - {"text_config"}):
            if cfg.inner[name] != cfg.data[name] and name in CACHE_FIELDS - {"model_type"}:
                cfg.diag(
                    "KV303",
                    name,
                    f"'{name}' is {cfg.data[name]!r} at the top level but "
                    f"{cfg.inner[name]!r} in text_config",
                    "make the two agree",
                )
    for alias, canonical in ALIASES.items():
        if cfg.has(alias) and cfg.has(canonical) and cfg.get(alias) != cfg.get(canonical):
            cfg.diag(
                "KV303",
                alias,
                f"'{alias}' ({cfg.get(alias)!r}) disagrees with '{canonical}' "
                f"({cfg.get(canonical)!r})",
                "keep one of the two",
            )


def _alias(cfg: _Config, canonical: str) -> str:
    for alias, target in ALIASES.items():
        if target == canonical and not cfg.has(canonical) and cfg.has(alias):
            return alias
    return canonical


# --------------------------------------------------------------------------- layer types


def _layer_types(cfg: _Config, layers: int) -> tuple[list[str | None], str]:
    """Per layer: full | sliding | linear | mamba | none (no cache); and the source note."""
    window = cfg.get("sliding_window")
    layer_types = cfg.get("layer_types")
    pattern_every = (
        cfg.int_("sliding_window_pattern") if cfg.has("sliding_window_pattern") else None
    )
    use_swa = cfg.get("use_sliding_window")
    if layer_types is not None:
        if not isinstance(layer_types, list) or len(layer_types) != layers:
            count = len(layer_types) if isinstance(layer_types, list) else "no"
            cfg.diag(
                "KV303",
                "layer_types",
                f"'{cfg.where('layer_types')}' has {count} entries for {layers} layers "
                f"(num_hidden_layers)",
                "give one entry per layer",
            )
            raise _Abort
        kinds: list[str | None] = []
        for entry in layer_types:
            if entry not in _LAYER_TYPES:
                cfg.diag(
                    "KV305",
                    "layer_types",
                    f"layer type {entry!r} in '{cfg.where('layer_types')}' is not supported",
                    "supported: " + ", ".join(sorted(_LAYER_TYPES)),
                )
                raise _Abort
            kinds.append(_LAYER_TYPES[entry])
        if pattern_every is not None:
            expected = [
                "full" if (i + 1) % pattern_every == 0 else "sliding" for i in range(layers)
            ]
            attention = [k for k in kinds if k in ("full", "sliding")]
            if attention != [
                e for e, k in zip(expected, kinds, strict=True) if k in ("full", "sliding")
            ]:
                cfg.diag(
                    "KV303",
                    "layer_types",
                    f"'{cfg.where('layer_types')}' disagrees with sliding_window_pattern "
                    f"{pattern_every} (every {pattern_every}th layer global)",
                    "remove the stale field, or fix the list",
                )
                raise _Abort
        if use_swa is False and "sliding" in kinds:
            cfg.diag(
                "KV303",
                "layer_types",
                "layer_types names sliding layers but use_sliding_window is false",
                "make the two agree",
            )
            raise _Abort
        return kinds, "config.json layer_types"
    hybrid = cfg.get("hybrid_override_pattern")
    if hybrid is not None:
        if not isinstance(hybrid, str) or len(hybrid) != layers or set(hybrid) - set(_HYBRID_CHARS):
            cfg.diag(
                "KV303",
                "hybrid_override_pattern",
                f"'{cfg.where('hybrid_override_pattern')}' must be {layers} characters of "
                "M * - E (num_hidden_layers)",
                "check the pattern against num_hidden_layers",
            )
            raise _Abort
        return [_HYBRID_CHARS[c] for c in hybrid], "config.json hybrid_override_pattern"
    blocks = cfg.get("layers_block_type")
    if blocks is not None:
        if not isinstance(blocks, list) or len(blocks) != layers or set(blocks) - set(_BLOCK_TYPES):
            cfg.diag(
                "KV303",
                "layers_block_type",
                f"'{cfg.where('layers_block_type')}' must list {layers} of "
                + ", ".join(sorted(_BLOCK_TYPES)),
                "check it against num_hidden_layers",
            )
            raise _Abort
        return [_BLOCK_TYPES[b] for b in blocks], "config.json layers_block_type"
    interval = cfg.int_("full_attention_interval") if cfg.has("full_attention_interval") else None
    if interval is not None:  # Qwen3-Next: every interval-th layer full, the rest linear
        kinds = ["full" if (i + 1) % interval == 0 else "linear" for i in range(layers)]
        return kinds, f"config.json full_attention_interval {interval}"  # type: ignore[return-value]
    if pattern_every is not None:
        kinds = ["full" if (i + 1) % pattern_every == 0 else "sliding" for i in range(layers)]
        return kinds, f"config.json sliding_window_pattern {pattern_every}"  # type: ignore[return-value]
    if use_swa is False or window is None:
        return ["full"] * layers, "full attention"
    if cfg.get("model_type") == "gemma2":  # Gemma 2 hard-codes even layers local
        return ["sliding" if i % 2 == 0 else "full" for i in range(layers)], "gemma2 alternation"
    if use_swa is True:
        first = cfg.int_("max_window_layers", minimum=0)
        if first is None:
            cfg.diag(
                "KV304",
                "use_sliding_window",
                "use_sliding_window is true but max_window_layers is missing",
                "add max_window_layers (Qwen2: layers from it on use the window)",
            )
            raise _Abort
        kinds = ["sliding" if i >= first else "full" for i in range(layers)]
        return kinds, f"config.json use_sliding_window, layers >= max_window_layers {first}"  # type: ignore[return-value]
    return ["sliding"] * layers, "config.json sliding_window on every layer"  # type: ignore[return-value]


# --------------------------------------------------------------------------- per-layer shapes


def _state_bytes(cfg: _Config, kind: str, dtype_bytes: int) -> _Kind:
    ssm_dtype = cfg.get("mamba_ssm_dtype")
    ssm_bytes = _DTYPES[ssm_dtype][1] if ssm_dtype in _DTYPES else dtype_bytes
    if kind == "linear":  # Gated DeltaNet (Qwen3-Next)
        kh, kd = (
            cfg.int_("linear_num_key_heads", required=True),
            cfg.int_("linear_key_head_dim", required=True),
        )
        vh, vd = (
            cfg.int_("linear_num_value_heads", required=True),
            cfg.int_("linear_value_head_dim", required=True),
        )
        width = cfg.int_("linear_conv_kernel_dim", required=True)
        conv = (width - 1) * (2 * kh * kd + vh * vd)  # type: ignore[operator]
        ssm = vh * kd * vd  # type: ignore[operator]
        note = (
            f"config.json: conv (linear_conv_kernel_dim {width} - 1) * (2 * linear_num_key_heads "
            f"{kh} * linear_key_head_dim {kd} + linear_num_value_heads {vh} * "
            f"linear_value_head_dim {vd}) * {dtype_bytes} B + state {vh} * {kd} * {vd} "
            f"* {ssm_bytes} B"
        )
    else:  # Mamba-2
        heads = cfg.int_("mamba_num_heads", required=True)
        head_dim = cfg.int_("mamba_head_dim", required=True)
        state = cfg.int_(_alias(cfg, "ssm_state_size"), required=True)
        groups = cfg.int_(_alias(cfg, "n_groups"), required=True)
        width = cfg.int_(_alias(cfg, "conv_kernel"), required=True)
        conv = (width - 1) * (heads * head_dim + 2 * groups * state)  # type: ignore[operator]
        ssm = heads * head_dim * state  # type: ignore[operator]
        note = (
            f"config.json: conv (conv_kernel {width} - 1) * (mamba_num_heads {heads} * "
            f"mamba_head_dim {head_dim} + 2 * n_groups {groups} * ssm_state_size {state}) * "
            f"{dtype_bytes} B + ssm {heads} * {head_dim} * {state} * {ssm_bytes} B"
        )
    return _Kind(
        "recurrent",
        state_bytes=conv * dtype_bytes + ssm * ssm_bytes,
        notes=(("state_bytes", note),),
        base=kind,
    )


def _attention_kinds(
    cfg: _Config, layers: int, types: list[str | None], seq_len: int
) -> list[_Kind | None]:
    if cfg.has("kv_lora_rank"):
        rank = cfg.int_("kv_lora_rank")
        rope = cfg.int_("qk_rope_head_dim", required=True, minimum=0)
        mla = _Kind(
            "mla",
            kv_lora_rank=rank,
            qk_rope_head_dim=rope,
            base="mla",
            notes=(
                ("kv_lora_rank", "config.json kv_lora_rank"),
                ("qk_rope_head_dim", "config.json qk_rope_head_dim"),
            ),
        )
        if any(t not in ("full", "none") for t in types):
            cfg.diag(
                "KV305",
                "kv_lora_rank",
                "MLA with sliding or recurrent layers is not supported",
                "describe the model by hand",
            )
            raise _Abort
        return [mla if t == "full" else None for t in types]
    heads_name = _alias(cfg, "num_key_value_heads")
    q_name = _alias(cfg, "num_attention_heads")
    q_heads = cfg.per_layer(q_name, layers)
    kv_heads = cfg.per_layer(heads_name, layers) or q_heads
    if kv_heads is None:
        cfg.diag(
            "KV304",
            None,
            "config has neither 'num_key_value_heads' nor 'num_attention_heads'",
            "add num_key_value_heads",
        )
        raise _Abort
    head_dims = cfg.per_layer("head_dim", layers)
    hd_note = "config.json head_dim"
    if head_dims is None:
        hidden = cfg.int_(_alias(cfg, "hidden_size"), required=True)
        if q_heads is None or len(set(q_heads)) != 1 or hidden % q_heads[0]:  # type: ignore[operator]
            cfg.diag(
                "KV303",
                q_name,
                f"cannot derive head_dim from hidden_size {hidden} and "
                f"{q_name} {cfg.get(q_name)!r}",
                "add head_dim",
            )
            raise _Abort
        head_dims = [hidden // q_heads[0]] * layers  # type: ignore[operator]
        hd_note = f"config.json hidden_size {hidden} / {q_name} {q_heads[0]}"
    for i, (kv, q) in enumerate(zip(kv_heads, q_heads or kv_heads, strict=True)):
        if kv > q or q % kv:
            cfg.diag(
                "KV303",
                heads_name,
                f"layer {i}: {kv} KV heads do not divide {q} query heads",
                "check num_key_value_heads against num_attention_heads",
            )
            raise _Abort
    window = cfg.int_("sliding_window") if cfg.has("sliding_window") else None
    if window is None and "sliding" in types:
        cfg.diag(
            "KV303",
            "layer_types" if cfg.has("layer_types") else "sliding_window",
            "layers are sliding but sliding_window is null",
            "set sliding_window",
        )
        raise _Abort
    global_hd = cfg.int_("global_head_dim") if cfg.has("global_head_dim") else None
    global_kv = (
        cfg.int_("num_global_key_value_heads") if cfg.has("num_global_key_value_heads") else None
    )
    per_list = isinstance(cfg.get(heads_name), list)
    out: list[_Kind | None] = []
    for i, kind in enumerate(types):
        if kind not in ("full", "sliding"):
            out.append(None)
            continue
        kv, hd = kv_heads[i], head_dims[i]
        kv_note = f"config.json {heads_name}" + (" (per-layer list)" if per_list else "")
        this_hd_note = hd_note
        if kind == "full" and global_kv is not None:
            kv, kv_note = global_kv, "config.json num_global_key_value_heads"
        if kind == "full" and global_hd is not None:
            hd, this_hd_note = global_hd, "config.json global_head_dim"
        notes = [("kv_heads", kv_note), ("head_dim", this_hd_note)]
        if kind == "sliding" and window >= seq_len:  # type: ignore[operator]
            notes.append(
                (
                    "attention",
                    f"config.json sliding_window {window} >= "
                    f"max_position_embeddings {seq_len}: full attention (SIZING.md §1)",
                )
            )
            kind = "full"
        if kind == "sliding":
            notes.append(("window", "config.json sliding_window"))
            out.append(
                _Kind(
                    "sliding",
                    window=window,
                    kv_heads=kv,
                    head_dim=hd,
                    notes=tuple(notes),
                    base="sliding",
                )
            )
        else:
            out.append(_Kind("full", kv_heads=kv, head_dim=hd, notes=tuple(notes), base="full"))
    return out


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


def _name_kinds(kinds: list[_Kind]) -> dict[_Kind, str]:
    names: dict[_Kind, str] = {}
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
    "kv_heads",
    "head_dim",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "state_bytes",
)


def _kind_lines(kind: _Kind, indent: str) -> list[str]:
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
    return lines


@dataclass
class _Spec:
    family: str
    model: str
    source: str
    tokens_per_block: int
    tpb_note: str
    dtype: str
    dtype_note: str
    seq_len: int
    seq_note: str
    kinds: list[_Kind]
    layers_note: str
    mtp_layers: int = 0
    mtp_note: str = ""


def _render(spec: _Spec) -> str:
    names = _name_kinds(spec.kinds)
    per_layer = [names[k] for k in spec.kinds]
    lines = [
        "# yaml-language-server: $schema=../kvspec.schema.json",
        f"# Imported by kvgen import-hf from {spec.source}; every number names its config field.",
        "schema_version: 1",
        f"family: {spec.family}",
        f"tokens_per_block: {spec.tokens_per_block}  # {spec.tpb_note}",
        f"kv_cache_dtype: {spec.dtype}  # {spec.dtype_note}",
        "models:",
        f"  - name: {spec.model}",
        f"    max_seq_len: {spec.seq_len}  # {spec.seq_note}",
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


# --------------------------------------------------------------------------- entry point


def _dtype(cfg: _Config, override: str | None) -> tuple[str, str, int]:
    names = [n for n in ("torch_dtype", "dtype") if cfg.has(n)]
    values = {cfg.get(n) for n in names}
    if len(values) > 1:
        cfg.diag(
            "KV303",
            "dtype",
            f"torch_dtype {cfg.get('torch_dtype')!r} disagrees with dtype {cfg.get('dtype')!r}",
            "keep one of the two",
        )
        raise _Abort
    model_dtype = values.pop() if values else None
    if model_dtype is not None and model_dtype not in _DTYPES:
        cfg.diag(
            "KV305",
            names[0],
            f"{names[0]} {model_dtype!r} is not supported",
            "use bfloat16, float16 or float32, or pass --kv-cache-dtype",
        )
        raise _Abort
    if override is not None:
        bytes_ = _DTYPES[model_dtype][1] if model_dtype else _DTYPE_BYTES.get(override, 2)
        return override, "kvgen import-hf --kv-cache-dtype", bytes_
    if model_dtype is None:
        cfg.diag("KV304", None, "config has no 'torch_dtype' (or 'dtype')", "pass --kv-cache-dtype")
        raise _Abort
    short, bytes_ = _DTYPES[model_dtype]
    return short, f"config.json {names[0]} {model_dtype}", bytes_


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
    reader = _JsonReader(text)
    reader.read(0, ())
    cfg = _Config(display, data, reader)
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
    _check_fields(cfg, frozenset(ignore_fields))
    if cfg.diagnostics:
        return ImportResult(None, sorted(cfg.diagnostics))
    try:
        spec = _build(cfg, family, model, tokens_per_block, kv_cache_dtype)
    except _Abort:
        return ImportResult(None, sorted(cfg.diagnostics))
    return ImportResult(_render(spec), [])


def _build(
    cfg: _Config, family: str | None, model: str | None, tpb: int, dtype: str | None
) -> _Spec:
    layers_name = _alias(cfg, "num_hidden_layers")
    layers = cfg.int_(layers_name, required=True)
    seq_name = _alias(cfg, "max_position_embeddings")
    seq_len = cfg.int_(seq_name, required=True)
    short, dtype_note, dtype_bytes = _dtype(cfg, dtype)
    types, types_note = _layer_types(cfg, layers)  # type: ignore[arg-type]
    attention = _attention_kinds(cfg, layers, types, seq_len)  # type: ignore[arg-type]
    kinds: list[_Kind] = []
    for kind, shape in zip(types, attention, strict=True):
        if kind in ("linear", "mamba"):
            kinds.append(_state_bytes(cfg, kind, dtype_bytes))
        elif shape is not None:
            kinds.append(shape)
        elif kind == "none":
            kinds.append(_NO_CACHE)
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
    return _Spec(
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


def default_model_name(display: str, data: dict[str, Any]) -> str | None:
    """From ``_name_or_path``, else the file name (its folder's name for ``config.json``)."""
    from pathlib import PurePath

    source = data.get("_name_or_path") if isinstance(data, dict) else None
    if isinstance(source, str) and source.strip("/"):
        return to_identifier(source.rstrip("/").rsplit("/", 1)[-1])
    path = PurePath(display)
    stem = path.parent.name if path.stem == "config" else path.stem
    return to_identifier(stem)


# --------------------------------------------------------------------------- field tables


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Fields the importer reads.
CACHE_FIELDS = _words(
    """num_hidden_layers num_key_value_heads num_attention_heads head_dim hidden_size
    max_position_embeddings sliding_window layer_types sliding_window_pattern use_sliding_window
    max_window_layers kv_lora_rank qk_rope_head_dim torch_dtype dtype model_type text_config
    hybrid_override_pattern layers_block_type full_attention_interval mamba_num_heads
    mamba_head_dim ssm_state_size n_groups conv_kernel mamba_ssm_dtype linear_num_key_heads
    linear_key_head_dim linear_num_value_heads linear_value_head_dim linear_conv_kernel_dim
    global_head_dim num_global_key_value_heads num_nextn_predict_layers
    mtp_num_hidden_layers"""
)
# Other spellings of the same field (OpenELM, Mamba configs): alias -> canonical.
ALIASES = {
    "num_transformer_layers": "num_hidden_layers",
    "num_kv_heads": "num_key_value_heads",
    "num_query_heads": "num_attention_heads",
    "max_context_length": "max_position_embeddings",
    "model_dim": "hidden_size",
    "attention_head_dim": "head_dim",
    "state_size": "ssm_state_size",
    "mamba_d_state": "ssm_state_size",
    "mamba_n_groups": "n_groups",
    "mamba_d_conv": "conv_kernel",
}
# Fields that change the cache in ways the spec cannot express yet.
UNSUPPORTED_FIELDS = {
    "attention_chunk_size": "chunked local attention is not a spec layer kind",
    "num_kv_shared_layers": "layers that reuse another layer's KV cache",
    "attention_k_eq_v": "layers whose keys double as values",
    "index_topk": "a sparse-attention indexer cache (use extra_bytes_per_token by hand)",
    "index_head_dim": "a sparse-attention indexer cache (use extra_bytes_per_token by hand)",
    "compress_ratios": "compressed per-layer caches",
    "swa_num_key_value_heads": "separate sliding-layer head counts",
    "swa_head_dim": "separate sliding-layer head sizes",
}
# Fields known not to change the KV cache (weights, training, tokenizer, rope, routing).
IGNORED_FIELDS = _words(
    """architectures transformers_version vocab_size intermediate_size tie_word_embeddings
    initializer_range hidden_act hidden_activation pretraining_tp query_pre_attn_scalar
    cache_implementation num_experts_per_tok num_local_experts n_routed_experts n_shared_experts
    routed_scaling_factor topk_method n_group topk_group norm_topk_prob scoring_func
    first_k_dense_replace ep_size seq_aux q_lora_rank qk_nope_head_dim v_head_dim
    decoder_sparse_step mlp_only_layers num_experts experts_per_token swiglu_limit
    initial_context_length logit_scale partial_rotary_factor attn_output_gate expand chunk_size
    residual_in_fp32 rescale_prenorm_residual num_logits_to_keep model_max_length ffn_multipliers
    qkv_multipliers ffn_dim_divisor normalization_layer_name normalize_qk_projections
    share_input_output_layers activation_fn_name num_gqa_groups mm_tokens_per_image
    is_encoder_decoder qk_layernorm aux_loss_alpha qk_norm ffn_with_glu
    original_max_position_embeddings logits_scaling embedding_multiplier pad_vocab_size_multiple
    hidden_size_per_layer_input layer_norm_type norm_type position_embedding_type"""
)
IGNORED_PREFIXES = (
    "_",
    "vision_",
    "audio_",
    "image_",
    "rope_",
    "moe_",
    "router_",
    "mamba_",
    "time_step",
    "output_",
    "use_",
    "num_experts",
    "auto_",
)
IGNORED_SUFFIXES = (
    "_token_id",
    "_token_ids",
    "_token_index",
    "_dropout",
    "_pdrop",
    "_eps",
    "_epsilon",
    "_bias",
    "_softcapping",
    "_range",
    "_act",
    "_multiplier",
    "_intermediate_size",
    "_config",
    "_theta",
    "_scaling",
    "_coef",
)
