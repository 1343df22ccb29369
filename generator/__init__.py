"""kvgen: KV-cache sizing modules and allocator shims generated from one spec per model family.

The names below are the Python API; every other module is an internal part whose names may
change (the command line, ``kvgen --help``, is the other public surface). They are imported on
first use, so ``import kvgen`` stays free of pydantic, jinja2 and torch: the generated
allocators import the shim runtime ``kvgen.runtime`` through this package.

- ``load_family(path)`` / ``load_bytes(path, raw)``: a validated spec (``Family``), or the
  positioned diagnostics of one that is not (``LoadedSpec``); ``SpecInput`` is a loaded spec
  with its bytes and path, what rendering takes;
- ``lint_paths(paths)``: every finding for the spec files given, as ``Diagnostic`` records;
- ``bound_module(family)``: a family's sizing module built in memory (no files);
- ``import_generated(path, package)``: a generated module from an output folder anywhere;
- ``engine_capacity(family, model, budget_bytes, engine=...)``: what vLLM, SGLang and
  TensorRT-LLM give a model for one KV budget (``EngineCapacity``; ``NotModelled``);
- ``find_family(name)``: family ``name`` as the commands find it from the working directory,
  the project's own or else the one kvgen ships (``FoundFamily``: its generated ``sizing()``
  module, its spec ``family()``); the shipped modules also import as
  ``kvgen.families.<family>.sizing``;
- ``version()``: the installed version.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
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

# Where each public name lives (imported by ``__getattr__`` on first use). No TYPE_CHECKING
# imports of them: a type checker of the shim runtime (torch side) would follow them into
# the whole generator.
_HOMES = {
    "Diagnostic": "kvgen._util.diagnostics",
    "EngineCapacity": "kvgen._engines.capacity",
    "Family": "kvgen._spec.models",
    "FoundFamily": "kvgen._generate.shipped",
    "LoadedSpec": "kvgen._spec.loader",
    "NotModelled": "kvgen._engines.capacity",
    "SpecInput": "kvgen._generate.render_input",
    "bound_module": "kvgen._generate.sizing_context",
    "engine_capacity": "kvgen._engines.capacity",
    "find_family": "kvgen._generate.shipped",
    "import_generated": "kvgen._generate.vendored",
    "lint_paths": "kvgen._lint.linter",
    "load_bytes": "kvgen._spec.loader",
    "load_family": "kvgen._spec.loader",
    "version": "kvgen._util.meta",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'kvgen' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
