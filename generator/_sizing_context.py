"""Template context of ``generated/<family>/sizing.py``: the family's tables, bound to the runtime.

A sizing module is the family's tables (rows of ``kvgen.sizing_core``'s and
``kvgen.engines_core``'s own row types, built here from the spec) and two calls that install
the runtime over them; the runtime itself is those two modules, written once into the output
folder (``RUNTIME_FILES``). The tables are laid out here in the form ``ruff format`` gives them
(a row on one line when it fits in 100 columns, else one item per line), so rendering needs no
formatter. Text grows linearly with the spec: one row per layer kind and one name per pattern
entry. ``bound_module`` binds the same runtime to the same tables in memory, without text.
"""

from __future__ import annotations

import importlib
import re
import types
from collections import Counter
from pathlib import Path
from typing import Any

from kvgen import _layout as layout
from kvgen import engines_core, sizing_core
from kvgen._cache_kinds import spec_kind
from kvgen._engines._rows import engine_tables
from kvgen._recurrent import mamba_fields
from kvgen._render_input import SpecInput, artifact
from kvgen._shapes import kind_head_dim, kind_v_head_dim, mla_bytes
from kvgen._spec import MODES_WITH_DRAFT_POOL, Family, LayerStack, Speculative
from kvgen._vendored import RUNTIME_MODULES, RUNTIME_PACKAGE
from kvgen.engines_rows import EngineDraft, EngineLayer, EngineModel
from kvgen.facts import mode_headroom
from kvgen.sizing_kinds import Kind, Model, Profile, Stack

LINE_LENGTH = 100
# The runtime in the output folder: file -> the kvgen module written there verbatim.
RUNTIME_FILES = {
    f"{RUNTIME_PACKAGE}/{name}.py": importlib.import_module(f"kvgen.{name}")
    for name in RUNTIME_MODULES
}


def runtime_sources() -> dict[str, str]:
    """``{relative path: source}`` of the runtime modules, read from kvgen itself."""
    return {
        path: Path(module.__file__ or "").read_text(encoding="utf-8")
        for path, module in RUNTIME_FILES.items()
    }


# --------------------------------------------------------------------------- rows from the spec


def kind_row(
    kind_name: str, stack: LayerStack, layers: int, dtype: str, shape_of: LayerStack
) -> Kind:
    """One layer kind: standard attention keeps heads and dtype (tensor parallelism divides
    the heads at call time); MLA latents and raw shapes are folded to bytes per token."""
    kind = stack.layer_kinds[kind_name]
    cls = spec_kind(kind)
    dtype = kind.dtype or stack.kv_cache_dtype or dtype
    kv_heads = head_dim = v_head_dim = fixed = 0
    if cls.cached_heads:
        if kind.bytes_per_token is not None:
            fixed = kind.bytes_per_token
        elif kind.kv_lora_rank is not None:
            # MLA (with an fp8_ds_mla layout and an index-K cache) folds to bytes per token.
            fixed = mla_bytes(kind, dtype)
        else:
            kv_heads = kind.kv_heads or 0
            head_dim = kind_head_dim(kind, shape_of)
            if kind.v_head_dim is not None:  # 0 in the row: V's head size is K's
                v_head_dim = kind_v_head_dim(kind, shape_of)
    return Kind(
        kind.attention,
        layers=layers,
        window=cls.window(kind),
        sink_tokens=kind.sink_tokens,
        kv_heads=kv_heads,
        head_dim=head_dim,
        dtype=dtype if kv_heads or kind.recurrent_dims is not None else "",
        bytes_per_token=fixed,
        extra_bytes_per_token=kind.extra_bytes_per_token,
        state_bytes=kind.state_bytes or 0,
        **mamba_fields(kind, dtype),
        reads=kind.reads,
        **cls.encoder_fields(kind),
        chunk=cls.chunk(kind),
        v_head_dim=v_head_dim,
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
    extra, slots, backoff = mode_headroom(
        profile.mode, profile.max_draft_len, profile.tree_draft_tokens
    )
    # A generation step adds 1 + draft slots tokens: G (§2).
    return Profile(profile.mode, profile.max_draft_len, extra, slots + 1, backoff, draft)


def family_tables(family: Family) -> tuple[dict[str, Model], dict[str, Profile]]:
    """The interpreter's rows of ``family``: models and speculative profiles."""
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


def statement(target: str, value: Any, named: dict[Any, str] | None = None) -> str:
    """``target = value`` in canonical layout (the template's one way to write a table);
    rows in ``named`` are written as their names."""
    return layout.statement(target, layout.literal(value, _POSITIONAL_FIRST, named))


def shared_drafts(engine_models: dict[str, EngineModel]) -> dict[EngineDraft, str]:
    """The engine rows of a speculative profile that several models share, each named once
    (``_DRAFT_<PROFILE>``, then ``_2``... for a profile whose rows differ by model), in the
    models' order: a family's tables then write a shared draft once, not per model."""
    uses: Counter[EngineDraft] = Counter()
    for entry in engine_models.values():
        uses.update(entry.drafts.values())
    names: dict[EngineDraft, str] = {}
    taken: set[str] = set()
    for entry in engine_models.values():
        for profile, draft in entry.drafts.items():
            if uses[draft] < 2 or draft in names:
                continue
            base = "_DRAFT_" + re.sub(r"\W", "_", profile).upper()
            name = base
            suffix = 2
            while name in taken:
                name, suffix = f"{base}_{suffix}", suffix + 1
            names[draft] = name
            taken.add(name)
    return names


def literal(value: Any) -> str:
    """A scalar as canonical code (the one quoting rule)."""
    return layout.flat(layout.literal(value))


# The row types a table may name, by the runtime module that defines them.
_ROW_TYPES = {
    "engines_rows": ("EngineDraft", "EngineLayer", "EngineModel"),
    "sizing_kinds": ("Kind", "Model", "Profile", "Stack"),
}


def _row_imports(tables: str) -> list[tuple[str, str]]:
    """``(runtime module, names)`` of the row types the tables name (no unused import)."""
    out = []
    for module, names in _ROW_TYPES.items():
        used = [name for name in names if f"{name}(" in tables or f"{name}]" in tables]
        if used:
            out.append((module, ", ".join(used)))
    return out


@artifact("sizing.py", "sizing.py.j2")
def sizing_context(spec: SpecInput) -> dict[str, Any]:
    models, profiles = family_tables(spec.family)
    engine_models = engine_tables(spec.family)
    drafts = shared_drafts(engine_models)
    engine_rows = [statement(name, draft) for draft, name in drafts.items()]
    engine_rows.append(statement("_ENGINE_MODELS: dict[str, EngineModel]", engine_models, drafts))
    tables = (
        statement("_MODELS: dict[str, Model]", models),
        statement("_PROFILES: dict[str, Profile]", profiles),
        "\n".join(engine_rows),
    )
    return {
        "models": models,
        "profiles": profiles,
        "tables": tables,
        "row_imports": _row_imports("\n".join(tables)),
        "runtime_version": sizing_core.RUNTIME_VERSION,
        "module_path": f"generated/{spec.family.family}/sizing.py",
        "statement": statement,
        "literal": literal,
    }


def bound_module(family: Family, *, spec_sha256: str = "", name: str = "") -> types.ModuleType:
    """The family's sizing module built in memory: the tables of ``family`` bound to kvgen's
    own runtime, as the generated module binds them to its copy (no text rendered, none run).
    kvgen answers from it where it needs the static cost of a spec it holds (the TensorRT-LLM
    row of ``kvgen._engines``)."""
    models, profiles = family_tables(family)
    module = types.ModuleType(name or f"kvgen_sizing_{family.family}")
    module.__dict__.update(
        FAMILY=family.family,
        SPEC_SHA256=spec_sha256,
        TOKENS_PER_BLOCK=family.tokens_per_block,
        KV_CACHE_DTYPE=family.kv_cache_dtype,
        _MODELS=models,
        _PROFILES=profiles,
        _ENGINE_MODELS=engine_tables(family),
    )
    sizing_core.bind(module.__dict__)
    engines_core.bind(module.__dict__)
    return module
