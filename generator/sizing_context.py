"""Template context of ``generated/<family>/sizing.py``: the family's tables and the interpreter.

A sizing module is the family's tables (rows of ``kvgen.sizing_core``'s own row types, built
here from the spec) followed by the interpreter, ``kvgen.sizing_core`` copied verbatim. The
tables are laid out here in the form ``ruff format`` gives them (a row on one line when it fits
in 100 columns, else one item per line), so rendering needs no formatter. Text grows linearly
with the spec: one row per layer kind and one name per pattern entry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from kvgen import engines_core, layout, sizing_core
from kvgen.costmodel import headroom
from kvgen.engines._rows import engine_tables
from kvgen.engines_core import EngineLayer
from kvgen.recurrent import mamba_fields
from kvgen.render_input import SpecInput, artifact
from kvgen.shapes import kind_head_dim, mla_bytes
from kvgen.sizing_core import Kind, Model, Profile, Stack
from kvgen.spec import MODES_WITH_DRAFT_POOL, LayerStack, Speculative

LINE_LENGTH = 100
TABLES_MARK = "# ---- family tables (from the spec) ----\n"
INTERPRETER_MARK = (
    "# ---- interpreter: kvgen.sizing_core, the same in every generated module ----\n"
)


class CoreParts(NamedTuple):
    """``kvgen.sizing_core``'s source cut where generation puts the family's text."""

    docstring: str  # the source's own module docstring, replaced by the family's
    prelude: str  # imports, __all__, row types, up to and including the tables mark
    tables: str  # the example family's tables, replaced by the family's
    interpreter: str  # from the interpreter mark to the end, inlined verbatim


ENGINE_ROWS_MARK = "# ---- engine rows: kvgen.engines_core ----\n"
ENGINE_TABLES_MARK = "# ---- engine tables (from the spec) ----\n"
ENGINE_POLICIES_MARK = (
    "# ---- engine policies: kvgen.engines_core, the same in every generated module ----\n"
)


class EngineParts(NamedTuple):
    """``kvgen.engines_core``'s source cut where generation puts the family's engine rows."""

    prelude: str  # docstring and imports: dropped (the sizing module defines those names)
    rows: str  # row types, from the rows mark up to and including the tables mark, verbatim
    tables: str  # the example family's engine rows, replaced by the family's
    policies: str  # from the policies mark to the end, inlined verbatim


def engine_parts(source: str | None = None) -> EngineParts:
    text = Path(engines_core.__file__).read_text(encoding="utf-8") if source is None else source
    rows = text.index(ENGINE_ROWS_MARK)
    tables = text.index(ENGINE_TABLES_MARK) + len(ENGINE_TABLES_MARK)
    policies = text.index(ENGINE_POLICIES_MARK)
    return EngineParts(text[:rows], text[rows:tables], text[tables:policies], text[policies:])


def core_parts(source: str | None = None) -> CoreParts:
    text = Path(sizing_core.__file__).read_text(encoding="utf-8") if source is None else source
    docstring_end = text.index('"""\n', 3) + 4
    tables = text.index(TABLES_MARK) + len(TABLES_MARK)
    interpreter = text.index(INTERPRETER_MARK)
    return CoreParts(
        text[:docstring_end], text[docstring_end:tables], text[tables:interpreter],
        text[interpreter:],
    )  # fmt: skip


# --------------------------------------------------------------------------- rows from the spec


def kind_row(
    kind_name: str, stack: LayerStack, layers: int, dtype: str, shape_of: LayerStack
) -> Kind:
    """One layer kind: standard attention keeps heads and dtype (tensor parallelism divides
    the heads at call time); MLA latents and raw shapes are folded to bytes per token."""
    kind = stack.layer_kinds[kind_name]
    dtype = kind.dtype or stack.kv_cache_dtype or dtype
    kv_heads = head_dim = fixed = 0
    if kind.attention not in ("recurrent", "none"):
        if kind.bytes_per_token is not None:
            fixed = kind.bytes_per_token
        elif kind.kv_lora_rank is not None:
            # MLA (with an fp8_ds_mla layout and an index-K cache) folds to bytes per token.
            fixed = mla_bytes(kind, dtype)
        else:
            kv_heads = kind.kv_heads or 0
            head_dim = kind_head_dim(kind, shape_of)
    return Kind(
        kind.attention,
        layers=layers,
        window=kind.window if kind.attention == "sliding" else None,
        sink_tokens=kind.sink_tokens,
        kv_heads=kv_heads,
        head_dim=head_dim,
        dtype=dtype if kv_heads or kind.recurrent_dims is not None else "",
        bytes_per_token=fixed,
        extra_bytes_per_token=kind.extra_bytes_per_token,
        state_bytes=kind.state_bytes or 0,
        **mamba_fields(kind, dtype),
        reads=kind.reads,
        **({"encoder_tokens": kind.encoder_tokens or 0} if kind.attention == "cross" else {}),
        chunk=(kind.chunk or 0) if kind.attention == "chunked" else 0,
    )


def stack_row(stack: LayerStack, dtype: str, shape_of: LayerStack) -> Stack:
    """The pattern as written and one row per kind it uses, sorted, with its layer count:
    O(pattern + kinds) time and text."""
    pattern = tuple(stack.layers.pattern)
    laps, rest = divmod(stack.layers.count, len(pattern))
    counts: dict[str, int] = {}
    for i, name in enumerate(pattern):
        counts[name] = counts.get(name, 0) + laps + (i < rest)
    kinds = {name: kind_row(name, stack, counts[name], dtype, shape_of) for name in sorted(counts)}
    return Stack(stack.layers.count, pattern, kinds)


def profile_row(profile: Speculative | None, draft: Stack | None) -> Profile:
    """Headroom terms of §2 and §5 without the opt-in overlap slack (added at call time)."""
    if profile is None:
        return Profile("none", draft_len=0, extra=0, step=1, backoff=0)
    head = headroom(profile)
    return Profile(profile.mode, profile.max_draft_len, head.extra, head.step, head.backoff, draft)


def family_tables(spec: SpecInput) -> tuple[dict[str, Model], dict[str, Profile]]:
    family = spec.family
    dtype = family.kv_cache_dtype
    models = {
        model.name: Model(
            max_seq_len=model.max_seq_len,
            layers=stack_row(model, dtype, model),
            profiles=family.profiles_for(model.name),
            extra_layers={
                profile.name: stack_row(profile.extra_layers, dtype, model)
                for profile in family.speculative
                if profile.extra_layers is not None and profile.applies_to(model.name)
            },
        )
        for model in family.models
    }
    profiles = {"none": profile_row(None, None)}
    for profile in family.speculative:
        draft = None
        if profile.mode in MODES_WITH_DRAFT_POOL and profile.draft is not None:
            draft = stack_row(profile.draft, dtype, profile.draft)
        profiles[profile.name] = profile_row(profile, draft)
    return models, profiles


# --------------------------------------------------------------------------- canonical layout

# Row types whose first field reads as the row's tag and is written positionally.
_POSITIONAL_FIRST = (Kind, Profile, EngineLayer)


def statement(target: str, value: Any) -> str:
    """``target = value`` in canonical layout (the template's one way to write a table)."""
    return layout.statement(target, layout.literal(value, _POSITIONAL_FIRST))


def literal(value: Any) -> str:
    """A scalar as canonical code (the one quoting rule)."""
    return layout.flat(layout.literal(value))


@artifact("sizing.py", "sizing.py.j2")
def sizing_context(spec: SpecInput) -> dict[str, Any]:
    models, profiles = family_tables(spec)
    return {
        "core": core_parts(),
        "engines": engine_parts(),
        "engine_models": engine_tables(spec.family),
        "models": models,
        "profiles": profiles,
        "statement": statement,
        "literal": literal,
    }
