"""The two cores that generation inlines into one sizing module must not define the same
top-level name: the later definition would silently rebind the earlier one, and the sizing
interpreter would call the engine policies' function (this happened once: both defined
``_state_at_tp``)."""

from __future__ import annotations

import ast
from pathlib import Path

import kvgen.engines_core
import kvgen.sizing_core

# Names the engine core takes from the sizing core on purpose (it runs after it).
SHARED = {"__all__"}


def _top_level_names(path: str | None) -> set[str]:
    assert path is not None
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_the_engine_core_defines_no_name_the_sizing_core_defines():
    sizing = _top_level_names(kvgen.sizing_core.__file__)
    engines = _top_level_names(kvgen.engines_core.__file__)
    assert sizing & engines - SHARED == set()
