"""The declared interface between a generated sizing module and its consumers (issue 28).

kvgen's planner, CLI and Python API read a generated (or vendored) family only through the
module's public names (docs/api.md, "The interface of a sizing module"): its ``TABLES``, the
``RUNTIME_VERSION`` its runtime installs, ``ENGINE_MODELS`` and the public functions. No module
of kvgen outside the sizing runtime itself reads one of the module's private names (at c2a37ec
the planner read ten of them at nineteen sites: ``_MODELS``, ``_ENGINE_MODELS``, ``_PROFILES``,
``_options``, ``_cached_terms``, ``_trtllm_plans``, ``_trtllm_held``, ``_whole_grains``,
``_swa_context_tokens``, ``_trtllm_capacity``); and each layer of a family is written once in
its module (no second table of the same layers for the engines).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
from kvgen._generate.vendored import SIZING_MODULES
from kvgen.sizing import sizing_core

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "generator"
GENERATED = REPO / "generated"
FAMILIES = sorted(p.parent.name for p in GENERATED.glob("*/sizing.py"))
# The sizing runtime: the modules generation copies into every output folder.
RUNTIME = {GENERATOR / "sizing" / f"{name}.py" for name in SIZING_MODULES}


def _private_names() -> set[str]:
    """Every private name a bound sizing module holds (its own and the runtime's)."""
    names: set[str] = set()
    for family in FAMILIES:
        module = importlib.import_module(f"generated.{family}.sizing")
        names |= {n for n in vars(module) if n.startswith("_") and not n.startswith("__")}
    return names


def _reads(tree: ast.AST, private: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each private name ``tree`` reads from another object: ``x._name``
    (not ``self``/``cls``), ``getattr(x, "_name")``, ``vars(x)["_name"]``,
    ``x.__dict__["_name"]``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in private:
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append((node.lineno, node.attr))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("getattr", "hasattr") and len(node.args) >= 2:
                name = node.args[1]
                if isinstance(name, ast.Constant) and name.value in private:
                    found.append((node.lineno, name.value))
        elif (
            isinstance(node, ast.Subscript)  # vars(module)["_name"], module.__dict__["_name"]
            and isinstance(node.slice, ast.Constant)
            and node.slice.value in private
        ):
            found.append((node.lineno, node.slice.value))
    return found


def test_no_module_outside_the_sizing_runtime_reads_a_private_name_of_a_generated_module():
    private = _private_names()
    # The names the planner read at c2a37ec are among those the check looks for.
    assert {"_MODELS", "_PROFILES", "_options", "_cached_terms", "_whole_grains"} <= private
    found = [
        f"{path.relative_to(REPO)}:{line}: {name}"
        for path in sorted(GENERATOR.rglob("*.py"))
        if path not in RUNTIME
        for line, name in _reads(ast.parse(path.read_text(encoding="utf-8")), private)
    ]
    assert found == []


def test_the_check_finds_each_form_of_a_private_read():
    private = {"_MODELS", "_options"}
    source = (
        "a = sizing._MODELS\n"
        "b = getattr(module, '_options')\n"
        "c = vars(module)['_MODELS']\n"
        "d = self._MODELS\n"  # an object's own attribute is no read of a module
        "e = sizing.TABLES.models\n"
    )
    assert _reads(ast.parse(source), private) == [(1, "_MODELS"), (2, "_options"), (3, "_MODELS")]


@pytest.mark.parametrize("family", FAMILIES)
def test_a_sizing_module_declares_its_interface(family):
    module = importlib.import_module(f"generated.{family}.sizing")
    tables = module.TABLES
    assert isinstance(tables, module.SizingTables)
    assert module.RUNTIME_VERSION == sizing_core.RUNTIME_VERSION
    assert (tables.family, tables.tokens_per_block) == (module.FAMILY, module.TOKENS_PER_BLOCK)
    assert (tables.spec_sha256, tables.kv_cache_dtype) == (
        module.SPEC_SHA256,
        module.KV_CACHE_DTYPE,
    )
    assert tuple(tables.models) == module.MODELS
    assert tuple(tables.profiles) == module.SPECULATIVE
    assert set(module.ENGINE_MODELS) == set(module.MODELS)
    for name in ("TABLES", "RUNTIME_VERSION", "ENGINE_MODELS", "trtllm_plans", "trtllm_held"):
        assert name in module.__all__


@pytest.mark.parametrize("family", FAMILIES)
def test_each_layer_is_written_once(family):
    # One table of models in the module's text; the engine rows are derived at bind.
    text = (GENERATED / family / "sizing.py").read_text(encoding="utf-8")
    assert text.count("TABLES = SizingTables(") == 1
    for second in ("_ENGINE_MODELS", "EngineModel(", "EngineLayer(", "_MODELS:", "_PROFILES:"):
        assert second not in text


def test_the_engine_rows_of_a_module_are_those_kvgen_derives_from_the_spec():
    # Bound from TABLES at import, the same rows kvgen._engines.capacity reads from the spec.
    from kvgen._model.engine_rows import engine_tables
    from kvgen._spec.loader import load_family

    for family in ("gemma3n", "deepseek_v3_2", "falcon_h1", "kimi_linear", "llama3_2_vision"):
        module = importlib.import_module(f"generated.{family}.sizing")
        spec = load_family(REPO / "schema" / "families" / f"{family}.yaml")
        # Row types of two copies of the runtime: compared by value, as printed.
        assert repr(module.ENGINE_MODELS) == repr(engine_tables(spec))
