"""Importing generated modules from an output folder wherever it lies (stdlib only).

A generated sizing module imports its runtime from the folder it was written to
(``from .._kvgen_runtime import sizing_core``), the way a vendored package is used: copy the
whole output folder and import ``<folder>.<family>.sizing``. kvgen and its tests also import
folders that are not on ``sys.path`` (``kvgen plan --generated DIR``, a temporary render):
``import_generated`` registers such a folder as a package under a name of the caller's. Text
rendered in memory (``kvgen diff``) runs against kvgen's own runtime, which is the text that
generation writes beside it (``exec_sizing``).
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

__all__ = ["RUNTIME_MODULES", "RUNTIME_PACKAGE", "exec_sizing", "import_generated"]

RUNTIME_PACKAGE = "_kvgen_runtime"  # the runtime's folder inside every output folder
# Its modules: kvgen's own, written there verbatim (each imports those before it).
RUNTIME_MODULES = (
    "facts",
    "trtllm_split",
    "sizing_kinds",
    "sizing_options",
    "sizing_split",
    "sizing_terms",
    "sizing_quota",
    "sizing_core",
    "engines_registry",
    "engines_rows",
    "engines_vllm",
    "engines_sglang",
    "engines_trtllm",
    "engines_options",
    "engines_core",
)


def _package(name: str, folder: Path | None) -> types.ModuleType:
    """``sys.modules[name]``: a package over ``folder`` (none: holds only what is put in it);
    a package of that name over another folder is dropped with its submodules first."""
    path = [] if folder is None else [str(folder)]
    existing = sys.modules.get(name)
    if existing is not None and list(getattr(existing, "__path__", ())) == path:
        return existing
    for loaded in [n for n in sys.modules if n == name or n.startswith(f"{name}.")]:
        del sys.modules[loaded]
    package = types.ModuleType(name)
    package.__path__ = path
    sys.modules[name] = package
    return package


def import_generated(path: Path, package: str) -> types.ModuleType:
    """Import ``<folder>/<family>/<module>.py`` as ``<package>.<family>.<module>``, with
    ``folder`` (the output folder, holding ``_kvgen_runtime``) registered as ``package``; the
    module runs afresh on every call, the runtime once per package."""
    path = Path(path).resolve()
    _package(package, path.parent.parent)
    family = f"{package}.{path.parent.name}"
    name = f"{family}.{path.stem}"
    for loaded in (family, name):  # run them as they are now, not as an earlier import found them
        sys.modules.pop(loaded, None)
    importlib.invalidate_caches()
    return importlib.import_module(name)


def exec_sizing(text: str, filename: str, package: str, family: str) -> types.ModuleType:
    """Run rendered sizing module ``text`` as ``<package>.<family>.sizing`` over kvgen's own
    runtime (``kvgen.sizing_core``, ``kvgen.engines_core`` and their parts): what generation
    would write beside it, so nothing but ``text`` needs to exist on disk."""
    _package(package, None)
    runtime = _package(f"{package}.{RUNTIME_PACKAGE}", None)
    for name in RUNTIME_MODULES:
        own = importlib.import_module(f"kvgen.{name}")
        setattr(runtime, name, own)
        sys.modules[f"{runtime.__name__}.{name}"] = own
    module = types.ModuleType(f"{package}.{family}.sizing")
    module.__file__ = filename
    module.__package__ = f"{package}.{family}"
    exec(compile(text, filename, "exec", dont_inherit=True), module.__dict__)
    return module
