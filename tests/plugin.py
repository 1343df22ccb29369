"""kvgen's pytest plugin: the shared fixtures, the hypothesis profile and the markers.

Loaded by ``tests/conftest.py`` (``pytest_plugins``). Support modules beside it
(``tests.workloads``, ``tests.sizing_support``, ``tests.runtime_tables``, ``tests.diff_report``)
are imported as the package ``tests``: every tier folder holds an ``__init__.py``, so pytest's
rootdir-based import puts the repository root on the path, no ``sys.path`` edit needed.

Markers (registered in pyproject.toml, ``--strict-markers``):

- ``torch``: applied here, before import, to every test module that imports torch, the shim
  runtime, or a support module that renders generated allocators; ``-m "not torch"`` then skips
  collecting those modules, so such a run never imports torch.
- ``gpu``: needs CUDA; skipped when ``torch.cuda.is_available()`` is false.
- ``slow``: builds a wheel, runs mypy or a long fuzz slice (still part of the default run).
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# CI runs on 2 busy cores: wall-clock deadlines would make property tests flaky, and a
# derandomized run reproduces exactly what CI saw.
settings.register_profile("kvgen", deadline=None, derandomize=True)
settings.load_profile("kvgen")

ROOT = Path(__file__).resolve().parent.parent

# Importing any of these (at module level or inside a test) imports torch: the shim runtime,
# and the support modules that render and import generated allocators.
TORCH_MODULES = (
    "torch",
    "kvgen.runtime",
    "tests.workloads",
    "tests.runtime_tables",
    "tests.diff_report",
    "tests.trtllm_cases",
)
# A test using this fixture imports generated allocators too.
TORCH_FIXTURES = frozenset({"rendered_families"})
_KEYWORDS = frozenset({"and", "or", "not", "True", "False"})


@cache
def imports_torch(path: Path) -> bool:
    """Whether the module at ``path`` imports torch, directly or through a support module."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError):
        return False  # pytest reports the broken module itself
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        if any(n == m or n.startswith(m + ".") for n in names for m in TORCH_MODULES):
            return True
    return False


class _MarksPresent:
    """A ``-m`` matcher: a mark name matches when it is in the set (keyword arguments ignored)."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def __call__(self, name: str, /, **_kwargs: object) -> bool:
        return name in self.names


def _selectable_with_torch(markexpr: str) -> bool:
    """Whether some test carrying ``torch`` (and any other marks) can match ``markexpr``.

    Tries every assignment of the other mark names in the expression, so ``-m slow`` still
    collects a torch module's slow tests while ``-m "not torch"`` skips the module unimported.
    """
    from _pytest.mark.expression import Expression

    expression = Expression.compile(markexpr)
    names = sorted(set(re.findall(r"[A-Za-z_][\w.]*", markexpr)) - _KEYWORDS - {"torch"})
    for values in itertools.product((False, True), repeat=len(names)):
        present = frozenset({"torch", *(n for n, v in zip(names, values, strict=True) if v)})
        if expression.evaluate(_MarksPresent(present)):
            return True
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    markexpr = config.option.markexpr
    if (
        markexpr
        and collection_path.suffix == ".py"
        and collection_path.name.startswith("test_")
        and imports_torch(collection_path)
        and not _selectable_with_torch(markexpr)
    ):
        return True
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if imports_torch(item.path) or TORCH_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.torch)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("gpu") is not None:
        import torch

        if not torch.cuda.is_available():
            pytest.skip("needs a CUDA device (torch.cuda.is_available() is False)")


@pytest.fixture(scope="session")
def rendered_families(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Any]:
    """Lazily render-and-import families by name: ``rendered_families(name)``.

    Names are fixture families with a tokens_per_block suffix (``fx_mixed_t32``) or shipped
    family names (``gemma3``); each is rendered once per session into a temporary directory.
    """
    from kvgen._spec.loader import load_family

    from tests.workloads import FIXTURE_SPECS, render_family, with_tokens_per_block

    out = tmp_path_factory.mktemp("rendered")
    rendered: dict[str, Any] = {}

    def get(name: str) -> Any:
        if name not in rendered:
            stem, _, tpb = name.rpartition("_t")
            fixture = FIXTURE_SPECS / f"{stem}.yaml"
            if fixture.exists() and tpb.isdigit():
                family = with_tokens_per_block(load_family(fixture), int(tpb))
                rendered[name] = render_family(family, fixture.read_bytes(), out, fixture.name)
            else:
                spec = ROOT / "schema" / "families" / f"{name}.yaml"
                source = f"schema/families/{spec.name}"
                rendered[name] = render_family(load_family(spec), spec.read_bytes(), out, source)
        return rendered[name]

    return get
