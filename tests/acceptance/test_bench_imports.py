"""The fuzz harnesses and benchmarks import kvgen's modules as they are named now (issue 29:
"keep the fuzzers current"): a module renamed private (``kvgen.loader`` -> ``kvgen._spec.loader``)
or a name moved away makes this test fail, not a fuzz run that then checks nothing."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name or None) of every ``kvgen`` import in ``path``, functions too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, None) for a in node.names if a.name.startswith("kvgen")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kvgen"):
            found += [(node.lineno, node.module or "", a.name) for a in node.names]
    return found


@pytest.mark.parametrize("path", sorted(BENCH.rglob("*.py")), ids=lambda p: p.name)
def test_every_kvgen_import_of_the_bench_resolves(path: Path) -> None:
    missing = []
    for line, module, name in _imports(path):
        try:
            imported = importlib.import_module(module)
        except ImportError as exc:
            missing.append(f"{path.name}:{line}: {module} ({exc})")
            continue
        if name is not None and not hasattr(imported, name):
            try:  # a submodule (from kvgen import _weights)
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{path.name}:{line}: {module}.{name}")
    assert missing == []


def test_the_fuzzers_are_found():
    names = {p.name for p in BENCH.glob("fuzz*.py")}
    assert {"fuzz.py", "fuzz_features.py", "fuzz_shim.py", "fuzz_api.py"} <= names
    assert all(_imports(BENCH / name) for name in names)
