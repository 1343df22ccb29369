"""Field access over a parsed config, and the check that every field is known."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal, overload

from kvgen._importhf._fields import (
    ALIASES,
    CACHE_FIELDS,
    IGNORED_FIELDS,
    IGNORED_PREFIXES,
    IGNORED_SUFFIXES,
    MODEL_ALIASES,
    MTP_ONLY_FIELDS,
    REVIEWED_FIELDS,
    UNSUPPORTED_FIELDS,
    could_move_cache,
)
from kvgen._importhf._json import JsonReader, Path_
from kvgen._importhf._served import engines_note
from kvgen._spec.models import (
    MAX_DIM,
    MAX_HEADS,
    MAX_HIDDEN_SIZE,
    MAX_LAYERS,
    MAX_SEQ_LEN,
    MAX_VOCAB_SIZE,
    MAX_WINDOW,
)
from kvgen._util.codes import Code
from kvgen._util.codes import hf as codes
from kvgen._util.diagnostics import Diagnostic

__all__ = [
    "DEFAULT_MAXIMUM",
    "MAXIMA",
    "Abort",
    "HfConfig",
    "check_fields",
    "field_spelling",
    "reviewed",
]

# Upper bounds, checked before anything is built from a value: the spec's own bounds for
# the fields that become spec values (so an import never builds a spec the schema refuses),
# DEFAULT_MAXIMUM for the other integers (state sizes, intervals, kernel widths).
MAXIMA = {
    "num_hidden_layers": MAX_LAYERS,
    "num_nextn_predict_layers": MAX_LAYERS,
    "mtp_num_hidden_layers": MAX_LAYERS,
    "max_window_layers": MAX_LAYERS,
    "max_position_embeddings": MAX_SEQ_LEN,
    "sliding_window": MAX_WINDOW,
    "sliding_window_pattern": MAX_LAYERS,
    "full_attention_interval": MAX_LAYERS,
    "num_key_value_heads": MAX_HEADS,
    "num_attention_heads": MAX_HEADS,
    "num_global_key_value_heads": MAX_HEADS,
    "head_dim": MAX_DIM,
    "global_head_dim": MAX_DIM,
    "v_head_dim": MAX_DIM,
    "kv_lora_rank": MAX_DIM,
    "qk_rope_head_dim": MAX_DIM,
    "hidden_size": MAX_HIDDEN_SIZE,
    "vocab_size": MAX_VOCAB_SIZE,
}
DEFAULT_MAXIMUM = 1 << 20


class Abort(Exception):
    """Stop reading: the diagnostics collected so far say why."""


class HfConfig:
    """A Hugging Face config.json (or its ``text_config``): field access that reports at the
    key's position."""

    def __init__(self, display: str, data: dict[str, Any], reader: JsonReader):
        self.display = display
        self.data = data
        self.reader = reader
        self.diagnostics: list[Diagnostic] = []
        self.notes: list[Diagnostic] = []
        text_config = data.get("text_config")
        self.prefix: Path_ = ("text_config",) if isinstance(text_config, dict) else ()
        self.inner: dict[str, Any] = text_config if isinstance(text_config, dict) else data
        model_type = self.inner.get("model_type", data.get("model_type"))
        # Other spellings of canonical fields, as this model's config class reads them.
        self.aliases: dict[str, str] = {
            **ALIASES,
            **MODEL_ALIASES.get(model_type if isinstance(model_type, str) else "", {}),
        }

    def where(self, name: str) -> str:
        return ".".join(str(p) for p in (*self.prefix, name)) if name in self.inner else name

    def diag(self, code: Code, name: str | None, message: str, fix: str) -> None:
        line, col = 1, 1
        if name is not None:
            path = (*self.prefix, name) if name in self.inner else (name,)
            line, col = self.reader.keys.get(path, (1, 1))
        self.diagnostics.append(code.at(self.display, (line, col), message, fix))

    def note(self, code: Code, name: str | None, message: str, fix: str) -> None:
        """A finding that does not stop the import: said, and kept in the spec's header."""
        self.diag(code, name, message, fix)
        self.notes.append(replace(self.diagnostics.pop(), severity="warning"))

    def has(self, name: str) -> bool:
        return self.get(name) is not None

    def get(self, name: str) -> Any:
        if name in self.inner:
            return self.inner[name]
        return self.data.get(name) if self.prefix else None

    def maximum(self, name: str) -> int:
        return MAXIMA.get(self.aliases.get(name, name), DEFAULT_MAXIMUM)

    @overload
    def int_(self, name: str, *, required: Literal[True], minimum: int = 1) -> int: ...
    @overload
    def int_(self, name: str, *, required: bool = False, minimum: int = 1) -> int | None: ...
    def int_(self, name: str, *, required: bool = False, minimum: int = 1) -> int | None:
        value = self.get(name)
        if value is None:
            if required:
                self.missing(name)
            return None
        maximum = self.maximum(name)
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            self.diag(
                codes.INVALID_CONFIG_VALUE,
                name,
                f"'{self.where(name)}' must be an integer in [{minimum}, {maximum}], "
                f"found {value!r}",
                "use the value published with the model",
            )
            raise Abort
        return value

    def nested(self, name: str) -> list[Path_]:
        """The blocks below the top level (two deep at most) that hold ``name``: where a
        config of several models (Qwen-Omni's thinker and talker, PI0's VLM and action
        expert) keeps each model's own fields."""
        found: list[Path_] = []
        for key, block in self.data.items():
            if not isinstance(block, dict) or key == "text_config":
                continue
            if name in block:
                found.append((key,))
            for inner_key, inner in block.items():
                if isinstance(inner, dict) and name in inner:
                    found.append((key, inner_key))
        return found

    def missing(self, name: str) -> None:
        """Refuse a required field the config lacks, naming it, and where the config holds
        it in a model's block of its own (positioned at the first such block)."""
        where = self.nested(name)
        if not where:
            self.diag(
                codes.MISSING_CONFIG_FIELD,
                None,
                f"config has no '{name}'",
                f"add '{name}' to the config",
            )
            raise Abort
        blocks = ", ".join(f"'{'.'.join(map(str, path))}'" for path in where[:4])
        line, col = self.reader.keys.get(where[0], (1, 1))
        self.diagnostics.append(
            codes.MISSING_CONFIG_FIELD.at(
                self.display,
                (line, col),
                f"config has no '{name}' for one language model: it is in {blocks}, the "
                "blocks of a config of several models",
                "import the language model's block as a config.json of its own",
            )
        )
        raise Abort

    def per_layer(self, name: str, layers: int) -> list[int] | None:
        """A field that is one integer or one integer per layer."""
        value = self.get(name)
        if value is None:
            return None
        if isinstance(value, list):
            if len(value) != layers:
                self.diag(
                    codes.CONTRADICTORY_CONFIG_FIELDS,
                    name,
                    f"'{self.where(name)}' lists {len(value)} values for {layers} layers",
                    "give one value per layer, or check num_hidden_layers",
                )
                raise Abort
            maximum = self.maximum(name)
            if not all(
                isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= maximum for v in value
            ):
                self.diag(
                    codes.INVALID_CONFIG_VALUE,
                    name,
                    f"'{self.where(name)}' must list integers in [1, {maximum}]",
                    "use the values published with the model",
                )
                raise Abort
            return list(value)
        return [self.int_(name, required=True)] * layers  # present: not None above


# --------------------------------------------------------------------------- field checks


def reviewed(name: str, model_types: set[object]) -> bool:
    """Whether ``name`` was reviewed as not moving the cache of this model type."""
    models, _ = REVIEWED_FIELDS.get(name, (frozenset(), ""))
    return models is None or bool(models & model_types)


def check_fields(cfg: HfConfig, ignored: frozenset[str]) -> None:
    # a composite config's own model_type and its text_config's (fuyu around persimmon)
    model_types = {cfg.inner.get("model_type"), cfg.data.get("model_type")}

    def known(name: str) -> bool:
        return (
            name in CACHE_FIELDS
            or reviewed(name, model_types)
            or name in IGNORED_FIELDS
            or name in ignored
            or name in cfg.aliases
            or name.startswith(IGNORED_PREFIXES)
            or name.endswith(IGNORED_SUFFIXES)
        )

    names = set(cfg.inner)
    if cfg.prefix:
        names |= {n for n in cfg.data if n != "text_config"}
    # A composite config's own fields (beside text_config): its vision or audio towers' and
    # projector's, which hold no cache of the text model; the importer reads the text model
    # from text_config, so an unknown one is noted, never blocking (issue 32).
    outer = {n for n in cfg.data if n not in cfg.inner} if cfg.prefix else set()
    has_mtp = any(cfg.get(n) for n in ("num_nextn_predict_layers", "mtp_num_hidden_layers"))
    for name in sorted(names):
        if name in MTP_ONLY_FIELDS and not has_mtp:
            continue  # the kinds of MTP layers the model does not have
        if name in UNSUPPORTED_FIELDS:
            value = cfg.get(name)
            if value not in (None, False, 0, []):
                cfg.diag(
                    codes.UNSUPPORTED_CONFIG_FEATURE,
                    name,
                    f"'{cfg.where(name)}' = {value!r}: {UNSUPPORTED_FIELDS[name]}"
                    + engines_note(cfg.get("model_type"), cfg.data.get("model_type")),
                    "describe the model by hand in a spec; kvgen import-hf cannot express it",
                )
        elif not known(name) and could_move_cache(name) and name not in outer:
            cfg.diag(
                codes.UNKNOWN_CONFIG_FIELD,
                name,
                f"unknown config field '{cfg.where(name)}'; its name says it may change a "
                "cache's shape, count, window, dtype or state",
                f"check the model's attention code, then pass --ignore-field {name}",
            )
        elif not known(name):
            cfg.note(
                codes.UNKNOWN_CONFIG_FIELD,
                name,
                f"unknown config field '{cfg.where(name)}' read as not moving the cache "
                + (
                    "(a composite config's own field, beside the text model's text_config)"
                    if name in outer
                    else "(its name names no cache shape, count, window, dtype or state)"
                ),
                "if it does change the cache, describe the model by hand",
            )
    if cfg.prefix:
        for name in sorted(set(cfg.inner) & set(cfg.data) - {"text_config"}):
            if cfg.inner[name] != cfg.data[name] and name in CACHE_FIELDS - {"model_type"}:
                cfg.diag(
                    codes.CONTRADICTORY_CONFIG_FIELDS,
                    name,
                    f"'{name}' is {cfg.data[name]!r} at the top level but "
                    f"{cfg.inner[name]!r} in text_config",
                    "make the two agree",
                )
    for alias, canonical in cfg.aliases.items():
        if cfg.has(alias) and cfg.has(canonical) and cfg.get(alias) != cfg.get(canonical):
            cfg.diag(
                codes.CONTRADICTORY_CONFIG_FIELDS,
                alias,
                f"'{alias}' ({cfg.get(alias)!r}) disagrees with '{canonical}' "
                f"({cfg.get(canonical)!r})",
                "keep one of the two",
            )


def field_spelling(cfg: HfConfig, canonical: str) -> str:
    """The name this config gives ``canonical``: an alias when only the alias is set."""
    for alias, target in cfg.aliases.items():
        if target == canonical and not cfg.has(canonical) and cfg.has(alias):
            return alias
    return canonical
