"""The package's import graph has no cycle (issue 12), and the diff reporters stay in step."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "generator"


def _module_name(path: Path) -> str:
    parts = ["kvgen", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(type_only: bool = False) -> dict[str, set[str]]:
    """Every ``kvgen`` module and the ``kvgen`` modules it imports, at module level or in a
    function (a lazy import still couples two modules), relative imports resolved, and with
    ``type_only`` the imports of TYPE_CHECKING blocks too."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = set() if type_only else {
            id(n)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for child in node.body
            for n in ast.walk(child)
        }  # fmt: skip
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                module = node.module if node.level == 0 else ".".join(
                    part for part in (base, node.module) if part
                )  # fmt: skip
                if module:
                    names = {f"{module}.{a.name}" for a in node.names}
                    found |= names
                    if not names <= set(modules):  # `from kvgen import facts` imports facts
                        found.add(module)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _cycle_through(graph: dict[str, set[str]], start: str) -> list[str] | None:
    stack = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for nxt in sorted(graph[node]):
            if nxt == start:
                return [*path, start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None


def test_render_and_the_context_builders_form_no_cycle():
    graph = import_graph()
    for module in (
        "kvgen._generate.render",
        "kvgen._generate.sizing_context",
        "kvgen._generate.allocator_context",
    ):
        assert _cycle_through(graph, module) is None, _cycle_through(graph, module)
    assert "kvgen._generate.render" not in graph["kvgen._generate.sizing_context"]
    assert "kvgen._generate.render" not in graph["kvgen._generate.allocator_context"]
    assert {"kvgen._generate.sizing_context", "kvgen._generate.allocator_context"} <= graph[
        "kvgen._generate.render"
    ]


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 40  # the walk found the package
    cycles = [c for module in sorted(graph) if (c := _cycle_through(graph, module))]
    assert cycles == []


def test_the_package_has_no_import_cycle_even_through_type_only_imports():
    # costmodel <-> dcp and shapes <-> recurrent were cycles through TYPE_CHECKING imports.
    graph = import_graph(type_only=True)
    cycles = [c for module in sorted(graph) if (c := _cycle_through(graph, module))]
    assert cycles == []


def test_relative_imports_are_resolved_and_the_runtime_modules_are_leaves_in_order():
    # The sizing runtime imports itself relatively (its copy in generated/ does the same).
    graph = import_graph(type_only=True)
    assert graph["kvgen.sizing.facts"] == set()
    assert graph["kvgen.sizing.trtllm_split"] == set()
    assert graph["kvgen.sizing.sizing_kinds"] == {"kvgen.sizing.facts"}
    assert graph["kvgen.sizing.sizing_options"] == {
        "kvgen.sizing.facts",
        "kvgen.sizing.sizing_kinds",
    }
    assert graph["kvgen.sizing.sizing_split"] == {
        "kvgen.sizing.facts",
        "kvgen.sizing.sizing_kinds",
        "kvgen.sizing.sizing_options",
    }
    assert graph["kvgen.sizing.sizing_terms"] == {
        "kvgen.sizing.facts",
        "kvgen.sizing.sizing_kinds",
        "kvgen.sizing.sizing_options",
        "kvgen.sizing.sizing_split",
    }
    assert graph["kvgen.sizing.sizing_quota"] == {
        "kvgen.sizing.facts",
        "kvgen.sizing.sizing_kinds",
        "kvgen.sizing.sizing_options",
        "kvgen.sizing.sizing_terms",
        "kvgen.sizing.trtllm_split",
    }
    parts = {
        f"kvgen.sizing.sizing_{part}" for part in ("kinds", "options", "split", "terms", "quota")
    }
    assert graph["kvgen.sizing.sizing_core"] == parts  # the public functions and ``bind``
    # The engine policies: the registry of engines and releases (on the facts alone: the float
    # dtypes a model dtype decides), the row types, each engine's policy on them, then the core
    # (``engine_capacity`` and ``bind``).
    assert graph["kvgen.sizing.engines_registry"] == {"kvgen.sizing.facts"}
    rows = {"kvgen.sizing.facts", "kvgen.sizing.sizing_kinds", "kvgen.sizing.sizing_options"}
    assert graph["kvgen.sizing.engines_rows"] == rows
    registry = {"kvgen.sizing.engines_registry"}
    assert graph["kvgen.sizing.engines_vllm"] == {*rows, *registry, "kvgen.sizing.engines_rows"}
    assert graph["kvgen.sizing.engines_sglang"] == {*rows, *registry, "kvgen.sizing.engines_rows"}
    # TensorRT-LLM 38198e34's splits (issue 31): the registry and the interpreter's tables
    assert graph["kvgen.sizing._trtllm_budget"] == {
        "kvgen.sizing.engines_registry",
        "kvgen.sizing.facts",
    }
    assert graph["kvgen.sizing._trtllm_pool_split"] == {
        "kvgen.sizing._trtllm_budget",
        "kvgen.sizing.facts",
    }
    assert graph["kvgen.sizing._trtllm_pools"] == {
        "kvgen.sizing._trtllm_budget",
        "kvgen.sizing._trtllm_pool_split",
        "kvgen.sizing.sizing_kinds",
        "kvgen.sizing.sizing_quota",
        "kvgen.sizing.trtllm_split",
    }
    assert graph["kvgen.sizing.engines_trtllm"] == {
        "kvgen.sizing._trtllm_pools",
        "kvgen.sizing.engines_rows",
        "kvgen.sizing.sizing_kinds",
        "kvgen.sizing.sizing_options",
        "kvgen.sizing.sizing_quota",
        "kvgen.sizing.sizing_split",  # a rebatched manager's recurrent sums (_RANKS)
        "kvgen.sizing.sizing_terms",
        "kvgen.sizing.trtllm_split",
    }
    # The check of a call's arguments (issue 29), on the policies' names and validators.
    assert graph["kvgen.sizing.engines_options"] == {
        "kvgen.sizing.engines_registry",
        "kvgen.sizing.engines_rows",
        "kvgen.sizing.engines_sglang",
        "kvgen.sizing.engines_vllm",
        "kvgen.sizing.sizing_options",
    }
    parts = ("registry", "rows", "vllm", "sglang", "trtllm", "options")
    engine_parts = {f"kvgen.sizing.engines_{part}" for part in parts}
    assert graph["kvgen.sizing.engines_core"] == {
        "kvgen.sizing.sizing_core",
        "kvgen.sizing.sizing_kinds",
        "kvgen.sizing.sizing_options",
        *engine_parts,
    }


def test_diff_formats_are_the_reporters_formats():
    from kvgen._cli.commands import diff
    from kvgen._review.reporters import EMITTERS, FORMATS

    assert diff.FORMATS == FORMATS == tuple(EMITTERS)
