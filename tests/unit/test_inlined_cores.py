"""The runtime modules that ``bind`` installs into one family's namespace must not define the
same top-level name: the later one would silently rebind the earlier, and the sizing
interpreter would call the engine policies' function (this happened once, when both were
inlined into each module: both defined ``_state_at_tp``)."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import kvgen.sizing.engines_core
import kvgen.sizing.sizing_core
from kvgen.sizing.engines_core import _PARTS as _ENGINE_PARTS
from kvgen.sizing.sizing_core import _PARTS

# ``__all__`` grows by the engine core's names; ``bind`` and ``_PARTS`` are each core's own and
# are never installed (``sizing_core._NEVER_INSTALLED``).
SHARED = {"__all__", "bind", "_PARTS"}


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


def test_no_two_installed_runtime_modules_define_the_same_name():
    # The order the two ``bind``s install them.
    modules = [*_PARTS, kvgen.sizing.sizing_core, *_ENGINE_PARTS, kvgen.sizing.engines_core]
    names = {module.__name__: _top_level_names(module.__file__) for module in modules}
    for (one, ones), (other, others) in itertools.combinations(names.items(), 2):
        assert ones & others - SHARED == set(), (one, other)
