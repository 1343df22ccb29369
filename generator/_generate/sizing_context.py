"""Template context of ``generated/<family>/sizing.py``: the family's tables, bound to the
sizing runtime.

A sizing module is the family's tables, one value (``TABLES``, a ``SizingTables`` of the sizing
runtime's row types, built from the spec by ``kvgen._model.sizing_rows`` and
``kvgen._model.engine_rows.sizing_tables``; each layer kind written once), and two calls that
install the sizing runtime over them; the sizing runtime itself is written once into the output
folder (``SIZING_FILES``). The tables are laid out here in the form ``ruff format`` gives them (a
row on one line when it fits in 100 columns, else one item per line), so rendering needs no
formatter. Text grows linearly with the spec: one row per layer kind and one name per pattern entry.
``bound_module`` binds the same sizing runtime to the same tables in memory, without text.
"""

from __future__ import annotations

import importlib
import re
import types
from collections import Counter
from pathlib import Path
from typing import Any

from kvgen._generate import layout
from kvgen._generate.render_input import SpecInput, artifact
from kvgen._generate.vendored import SIZING_MODULES, SIZING_PACKAGE
from kvgen._model.engine_rows import sizing_tables
from kvgen._model.sizing_rows import kind_row, profile_row, stack_row
from kvgen._spec.models import Family
from kvgen.sizing import engines_core, sizing_core
from kvgen.sizing.engines_rows import EngineDraft, EngineLayer
from kvgen.sizing.sizing_kinds import Kind, Profile, SizingTables

LINE_LENGTH = 100
# The sizing runtime in the output folder: file -> the kvgen module written there verbatim.
SIZING_FILES = {
    f"{SIZING_PACKAGE}/{name}.py": importlib.import_module(f"kvgen.sizing.{name}")
    for name in SIZING_MODULES
}


def sizing_sources() -> dict[str, str]:
    """``{relative path: source}`` of the sizing runtime's modules, read from kvgen itself."""
    return {
        path: Path(module.__file__ or "").read_text(encoding="utf-8")
        for path, module in SIZING_FILES.items()
    }


# --------------------------------------------------------------------------- canonical layout

# Row types whose first field reads as the row's tag and is written positionally.
_POSITIONAL_FIRST = (Kind, Profile, EngineLayer)
# Re-exported: the rows of a spec (``kvgen._model.sizing_rows``), as this module built them before.
__all__ = [
    "SIZING_FILES",
    "bound_module",
    "kind_row",
    "profile_row",
    "sizing_context",
    "sizing_sources",
    "stack_row",
    "statement",
]


def statement(target: str, value: Any, named: dict[Any, str] | None = None) -> str:
    """``target = value`` in canonical layout (the template's one way to write a table);
    rows in ``named`` are written as their names."""
    return layout.statement(target, layout.literal(value, _POSITIONAL_FIRST, named))


def shared_drafts(tables: SizingTables) -> dict[EngineDraft, str]:
    """The engine rows of a speculative profile that several models share, each named once
    (``_DRAFT_<PROFILE>``, then ``_2``... for a profile whose rows differ by model), in the
    models' order: a family's tables then write a shared draft once, not per model."""
    uses: Counter[EngineDraft] = Counter()
    for entry in tables.models.values():
        uses.update(entry.drafts.values())
    names: dict[EngineDraft, str] = {}
    taken: set[str] = set()
    for entry in tables.models.values():
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
    "engines_rows": ("EngineArch", "EngineDraft", "EngineLayer"),
    "sizing_kinds": ("Kind", "Model", "Profile", "SizingTables", "Stack"),
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
    tables = sizing_tables(spec.family, spec.sha256)
    drafts = shared_drafts(tables)
    rows = [statement(name, draft) for draft, name in drafts.items()]
    rows.append(statement("TABLES", tables, drafts))
    text = "\n".join(rows)
    return {
        "models": tables.models,
        "profiles": tables.profiles,
        "tables": text,
        "row_imports": _row_imports(text),
        "runtime_version": sizing_core.RUNTIME_VERSION,
        "module_path": f"generated/{spec.family.family}/sizing.py",
        "statement": statement,
        "literal": literal,
    }


def bound_module(family: Family, *, spec_sha256: str = "", name: str = "") -> types.ModuleType:
    """The family's sizing module built in memory: the tables of ``family`` bound to kvgen's
    own runtime, as the generated module binds them to its copy (no text rendered, none run).
    kvgen answers from it where it needs the static cost of a spec it holds (the TensorRT-LLM
    row of ``kvgen._engines.capacity``)."""
    module = types.ModuleType(name or f"kvgen_sizing_{family.family}")
    module.__dict__["TABLES"] = sizing_tables(family, spec_sha256)
    sizing_core.bind(module.__dict__)
    engines_core.bind(module.__dict__)
    return module
