"""The package's layers (issue 28): every top-level part of generator/ (installed as ``kvgen``)
stands in one layer of ``LAYERS``, and imports run down them only.

A module imports modules of its own layer or of a layer below, never above; two packages of one
layer import each other not at all. Every import counts: at module level, inside a function (a
lazy import still couples two modules) and under TYPE_CHECKING. The package's own
``__init__.py`` (its face: names looked up on first use, no import) is outside the rule. The
sizing runtime is the one folder that generation copies whole into an output folder: its
modules are exactly ``SIZING_MODULES`` and import nothing else of kvgen. CONTRIBUTING.md's
"Architecture" section draws the same layers.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "generator"

# From the ground up. A part is a top-level module or sub-package of generator/.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("sizing",),  # the stdlib sizing runtime, copied whole into <out>/_kvgen_runtime
    ("runtime",),  # the torch shim that generated allocators import
    ("allocator_api",),  # the shim's names that every generated allocator re-exports
    ("_util",),  # leaf helpers, findings and their codes, bounded file and TOML reading
    ("_spec",),  # a spec read and validated
    ("_model",),  # the static model: a spec's facts as the sizing runtime's tables
    ("_lint",),  # the semantic rules (which may read the model), noqa, the reporters
    ("_generate",),  # render and write; the project and the output folders
    ("_engines",),  # what each engine allocates; one deployment's plan
    ("_deploy", "_importhf"),  # hardware to launch settings; a Hugging Face config to a spec
    ("_review",),  # every spec at a git ref against the working tree
    ("_cli",),  # the command line
    ("__main__",),  # python -m kvgen
)


def _module_name(path: Path) -> str:
    parts = ["kvgen", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Every kvgen module -> the kvgen modules it imports (all of them: lazy and type-only
    included), relative imports resolved."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1])
                    module = ".".join(p for p in (base, node.module) if p)
                else:
                    module = node.module or ""
                names = {f"{module}.{a.name}" for a in node.names}
                found |= names & set(modules)
                if not names <= set(modules):
                    found.add(module)
        resolved = set()
        for target in found:
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]  # kvgen.x.name -> kvgen.x
            if target in modules and target != name:
                resolved.add(target)
        graph[name] = resolved
    return graph


def part_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None  # None: the package's face, kvgen itself


def layer_of(part: str) -> int | None:
    return next((i for i, layer in enumerate(LAYERS) if part in layer), None)


def unplaced() -> list[str]:
    parts = {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    parts |= {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    placed = {part for layer in LAYERS for part in layer}
    return sorted(parts - placed)


def violations() -> list[str]:
    """Every import that runs up the layers or across two packages of one layer, and every
    top-level part that no layer holds."""
    found = [f"{part}: in no layer of LAYERS (add it to one)" for part in unplaced()]
    for module, imported in sorted(import_graph().items()):
        here = part_of(module)
        if here is None or layer_of(here) is None:
            continue
        for target in sorted(imported):
            there = part_of(target)
            if there is None or there == here or layer_of(there) is None:
                continue
            if layer_of(there) > layer_of(here):  # type: ignore[operator]
                found.append(f"{module} -> {target}: runs up ({here} below {there})")
            elif layer_of(there) == layer_of(here):
                found.append(f"{module} -> {target}: across one layer ({here}, {there})")
    return found


def test_every_part_stands_in_one_layer():
    assert unplaced() == []
    parts = [part for layer in LAYERS for part in layer]
    assert len(parts) == len(set(parts))


def test_imports_run_down_the_layers():
    assert violations() == []


def test_the_rule_sees_an_import_that_runs_up():
    # The check is not vacuous: the graph holds the package, and an import from the sizing
    # runtime up to the command line would be reported.
    graph = import_graph()
    assert len(graph) > 100
    assert "kvgen.sizing.sizing_core" in graph["kvgen.sizing.engines_core"]
    assert layer_of("_cli") > layer_of("sizing")  # type: ignore[operator]


def test_the_sizing_runtime_is_one_folder_copied_whole():
    from kvgen._generate.vendored import SIZING_MODULES

    folder = {p.stem for p in (PACKAGE / "sizing").glob("*.py") if p.name != "__init__.py"}
    assert folder == set(SIZING_MODULES)
    graph = import_graph()
    for name in SIZING_MODULES:
        imported = graph[f"kvgen.sizing.{name}"]
        assert all(m.startswith("kvgen.sizing.") for m in imported), (name, imported)
