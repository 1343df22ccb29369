"""The package and its generated output pass ``mypy --strict`` (``[tool.mypy]`` in
pyproject.toml, as .ci/run runs it), the generated allocators default ``ruff check``, and the
allocator template emits canonical code by itself (what ``ruff format`` would write)."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.workloads import ROOT

GENERATED = ROOT / "generated"
PYPROJECT = ROOT / "pyproject.toml"

needs_mypy = pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None, reason="mypy is not installed"
)


def _mypy(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    # The source folder generator/ is installed as `kvgen` (setuptools' editable finder, which
    # mypy does not follow): give mypy the same view, as .ci/run does.
    (tmp_path / "kvgen").symlink_to(ROOT / "generator", target_is_directory=True)
    (tmp_path / "generated").symlink_to(GENERATED, target_is_directory=True)
    env = {**os.environ, "MYPYPATH": str(tmp_path)}
    args = [sys.executable, "-m", "mypy", f"--config-file={PYPROJECT}", "--no-incremental"]
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path)


def test_mypy_is_strict_over_the_whole_package_and_ci_runs_it():
    # Strict implies warn_unused_ignores (no stale ignore); ignore-without-code makes every
    # ignore name its error code. Over kvgen (the torch shim and allocator_api included) and
    # generated/ (every family's sizing module and allocator, and the vendored runtime).
    tomllib = pytest.importorskip("tomllib")  # stdlib from Python 3.11
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["mypy"]
    assert config["strict"] is True
    assert config["packages"] == ["kvgen", "generated"]
    assert "ignore-without-code" in config["enable_error_code"]
    assert not {"ignore_errors", "ignore_missing_imports", "follow_imports"} & set(config)
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'MYPYPATH="$typed" python -m mypy --cache-dir "$typed/.mypy_cache"\n' in ci


@pytest.mark.slow
@needs_mypy
def test_the_package_and_its_generated_output_pass_mypy_strict(tmp_path):
    # One mypy run for everything: reading torch's stubs dominates its time.
    result = _mypy(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found in" in result.stdout


@pytest.mark.parametrize("config", ["--isolated", f"--config={ROOT / 'pyproject.toml'}"])
def test_generated_allocators_pass_ruff_check(config):
    files = sorted(str(path) for path in GENERATED.glob("*/allocator.py"))
    assert len(files) >= 13
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", config, *files], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout


def _raw_allocator_renders() -> dict[str, str]:
    """The allocator template rendered for every shipped and fixture spec, unformatted."""
    from kvgen._generate.allocator_context import allocator_context
    from kvgen._generate.render import HEADER, SpecInput, _environment, family_context
    from kvgen._spec.loader import load_family

    template = _environment().get_template("allocator.py.j2")
    specs = sorted((ROOT / "schema" / "families").glob("*.yaml"))
    specs += sorted((ROOT / "tests" / "fixtures" / "specs").glob("*.yaml"))
    out = {}
    for path in specs:
        family = load_family(path)
        spec = SpecInput(path.relative_to(ROOT).as_posix(), path.read_bytes(), family)
        base = {
            "header": HEADER.format(source=spec.source),
            "spec_sha256": spec.sha256,
            "family": family,
            **family_context(family),
        }
        out[spec.source] = template.render(**base, **allocator_context(spec))
    return out


def test_allocator_template_emits_canonical_code():
    args = ["format", "--isolated", "--line-length", "100", "--target-version", "py310", "-"]
    for source, text in _raw_allocator_renders().items():
        result = subprocess.run(
            [sys.executable, "-m", "ruff", *args], input=text, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout == text, source


def test_generated_allocator_checks_the_runtime_version():
    text = (GENERATED / "llama3" / "allocator.py").read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    imports = lines.index("from kvgen.runtime import allocator as _rt")
    assert lines[imports + 1].startswith("_rt.require_version(")
    assert '"generated/llama3/allocator.py"' in lines[imports + 1]


def _all_literal(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    exported = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__"
    )
    names = list(ast.literal_eval(exported))
    for node in tree.body:  # literal lists appended (``__all__ += [...]``) count too
        if (
            isinstance(node, ast.AugAssign)
            and getattr(node.target, "id", "") == "__all__"
            and isinstance(node.value, ast.List)
        ):
            names += ast.literal_eval(node.value)
    return names


def test_generated_allocator_public_names():
    # The family's own names, then the runtime's, declared once in kvgen.allocator_api and
    # appended (``__all__ += _api.__all__``) rather than listed again in every allocator.
    text = (GENERATED / "gemma3" / "allocator.py").read_text()
    assert "__all__ += _api.__all__" in text
    own = _all_literal(GENERATED / "gemma3" / "allocator.py")
    runtime = _all_literal(ROOT / "generator" / "allocator_api.py")
    assert not set(own) & set(runtime)
    assert sorted(own + runtime) == sorted(
        [
            *("FAMILY", "KV_CACHE_DTYPE", "MODELS", "NO_PAGE", "PROFILES", "SEMANTICS"),
            *("SPECULATIVE", "SPEC_SHA256", "TABLES", "TOKENS_PER_BLOCK", "Model", "Profile"),
            *("AllocatorError", "CacheManager", "DoubleFreeError", "DuplicateRequestError"),
            *("InvalidRequestIdError", "InvalidStepError", "KVCacheShim", "Layer", "LayerKind"),
            *("LayerStack", "OutOfPagesError", "Pool", "PoolAllocationError"),
            *("QuotaTooSmallError", "RequestError", "ResumeRefusedError", "UnknownNameError"),
            *("UnknownRequestError", "live_pages", "peak_live_pages", "select_device"),
        ]
    )
