"""One name per concept across the package's rooms (issue 28).

A class name is defined once in generator/ (installed as ``kvgen``): two rooms that mean the
same thing import one definition, two that mean different things say so in their names. The
names a user or a generated file reads (``PUBLIC_TWINS``) keep their spelling and say here why.
No room declares a ``typing.Protocol`` copy of another room's record (a "twin" of a concrete
class, written to dodge an import cycle): a Protocol is allowed only in ``PROTOCOLS``, with its
reason. The identifiers that say "runtime" mean the shim runtime ``kvgen.runtime`` (CONTRIBUTING,
"Names"); the sizing runtime's own are spelt "sizing" except its public names
(``RUNTIME_VERSION`` of a generated module, the ``_kvgen_runtime`` folder).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "generator"

# Names defined twice on purpose: both definitions are public and neither can be renamed
# without breaking what users or older output folders read.
PUBLIC_TWINS: dict[str, tuple[set[str], str]] = {
    "LayerKind": (
        {"_spec/models.py", "runtime/_kinds.py"},
        "a layer kind as the spec states it (the JSON Schema's $defs/LayerKind, "
        "schema/kvspec.schema.json) and as an allocator's tables carry it (kvgen.allocator_api, "
        "re-exported by every generated allocator): one concept, validated and resolved",
    ),
    "LayerStack": (
        {"_spec/models.py", "runtime/_tables.py"},
        "a layer stack as the spec states it ($defs/LayerStack) and in an allocator's tables "
        "(kvgen.allocator_api): one concept, validated and resolved",
    ),
    "Model": (
        {"_spec/models.py", "sizing/sizing_kinds.py"},
        "a model as the spec states it ($defs/Model) and a row of a sizing module's TABLES "
        "(imported by every generated sizing module, docs/api.md 'Interpreter tables')",
    ),
}

# typing.Protocol classes allowed, by (file, class): none. The shim's cache kinds read the
# records themselves (kvgen.runtime._kinds holds them), not Protocol copies of them.
PROTOCOLS: dict[tuple[str, str], str] = {}

# Identifiers that say "runtime" and mean the sizing runtime (kvgen.sizing, copied as
# _kvgen_runtime, a folder name that only strings spell): the public ones only. RUNTIME_VERSION
# is also the shim's own version (kvgen.runtime.RUNTIME_VERSION); both are public.
SIZING_RUNTIME_PUBLIC = {"RUNTIME_VERSION"}


def _classes() -> dict[str, list[tuple[str, ast.ClassDef]]]:
    found: dict[str, list[tuple[str, ast.ClassDef]]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found[node.name].append((path.relative_to(PACKAGE).as_posix(), node))
    return found


def _is_protocol(node: ast.ClassDef) -> bool:
    names = {ast.unparse(base) for base in node.bases}
    return bool(names & {"Protocol", "typing.Protocol", "typing_extensions.Protocol"}) or any(
        name.startswith(("Protocol[", "typing.Protocol[")) for name in names
    )


def test_every_class_name_is_defined_once():
    twice = {
        name: sorted(path for path, _ in where)
        for name, where in _classes().items()
        if len(where) > 1
    }
    allowed = {name: sorted(paths) for name, (paths, _why) in PUBLIC_TWINS.items()}
    assert twice == allowed


def test_no_protocol_twins_a_class():
    protocols = {
        (path, node.name)
        for where in _classes().values()
        for path, node in where
        if _is_protocol(node)
    }
    assert protocols == set(PROTOCOLS)


def test_the_checks_see_a_twin():
    # Not vacuous: the walk finds the package's classes, the public twins among them, and a
    # Protocol written the usual way is recognised.
    classes = _classes()
    assert len(classes) > 150
    assert {path for path, _ in classes["LayerKind"]} == PUBLIC_TWINS["LayerKind"][0]
    tree = ast.parse("class Shape(Protocol):\n    x: int\nclass Box(typing.Protocol[T]): ...")
    nodes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert [_is_protocol(n) for n in nodes] == [True, True]


def test_runtime_in_an_identifier_means_the_shim():
    # An identifier that says "runtime" names the shim (kvgen.runtime, its RUNTIME_VERSION) or
    # one of the sizing runtime's public names; never the sizing runtime's internals (those say
    # "sizing": SIZING_MODULES, SIZING_PACKAGE) nor a value given at run time.
    word = re.compile(r"\b\w*runtime\w*\b", re.IGNORECASE)
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Name | ast.arg | ast.keyword):
                names = [getattr(node, "id", None) or getattr(node, "arg", None) or ""]
            elif isinstance(node, ast.Attribute):
                names = [node.attr]
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.alias):
                names = [node.asname or node.name.rsplit(".", 1)[-1]]
            for name in names:
                if word.fullmatch(name) and name not in SIZING_RUNTIME_PUBLIC:
                    if name in {"RuntimeError", "RuntimeWarning"}:
                        continue  # Python's own
                    found.add(f"{rel}: {name}")
    assert found == set()
