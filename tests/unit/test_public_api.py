"""``kvgen`` names its Python API in ``__all__`` (httpx's convention): an accidental export or
a lost one fails here, and importing the package stays light (the generated allocators import
the shim runtime through it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import kvgen

API = [
    "Diagnostic",
    "EngineCapacity",
    "Family",
    "FoundFamily",
    "LoadedSpec",
    "NotModelled",
    "SpecInput",
    "bound_module",
    "engine_capacity",
    "find_family",
    "import_generated",
    "lint_paths",
    "load_bytes",
    "load_family",
    "version",
]


def test_the_package_exports_exactly_its_api():
    assert kvgen.__all__ == API


def test_every_exported_name_resolves_to_its_home_module():
    from kvgen._engines.capacity import engine_capacity
    from kvgen._generate.vendored import import_generated
    from kvgen._spec.loader import load_family

    for name in API:
        value = getattr(kvgen, name)
        assert value.__module__.startswith("kvgen"), name
    assert kvgen.engine_capacity is engine_capacity
    assert kvgen.load_family is load_family
    assert kvgen.import_generated is import_generated
    assert set(API) <= set(dir(kvgen))


def test_an_unknown_name_is_an_attribute_error_and_submodules_still_import():
    try:
        kvgen.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("no AttributeError")
    from kvgen._model import quant  # a submodule, not an exported name

    assert quant.__name__ == "kvgen._model.quant"


def test_importing_the_package_imports_no_submodule_nor_heavy_dependency():
    code = (
        "import sys, kvgen\n"
        "print(sorted(m for m in sys.modules if m.startswith("
        "('kvgen.', 'pydantic', 'jinja2', 'torch'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# Modules other code imports by name: the shim runtime and the allocator API (what generated
# allocators import), and the sizing runtime written verbatim into every output folder (what
# generated sizing modules import from ``_kvgen_runtime``: the folder kvgen.sizing). Every other
# part is internal.
PUBLIC_MODULES = {"runtime", "allocator_api", "sizing"}


def test_every_internal_module_has_a_private_name():
    package = Path(kvgen.__file__).parent
    # Every runtime module, a private name's too (TensorRT-LLM 38198e34's splits), is in
    # kvgen.sizing.
    public = PUBLIC_MODULES
    names = {
        p.stem if p.suffix == ".py" else p.name
        for p in package.iterdir()
        if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists())
    }
    named = {n for n in names if not n.startswith("_")}
    assert named == public, sorted(named ^ public)
    assert {"_cli", "_engines", "_spec", "_util"} <= names  # the internals, underscored
