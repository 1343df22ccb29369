"""kvgen works from a plain wheel, as pre-commit's hook environments install it: the templates
travel inside it (as ``kvgen/templates``) and rendering needs no checkout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_every_generator_package_is_listed_in_pyproject():
    tomllib = pytest.importorskip("tomllib")  # stdlib from Python 3.11
    listed = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    on_disk = {
        ".".join(("kvgen", *p.parent.relative_to(REPO / "generator").parts))
        for p in (REPO / "generator").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert on_disk | {"kvgen.templates"} == listed


def test_a_wheel_install_renders_exactly_what_the_checkout_renders(tmp_path):
    pytest.importorskip("setuptools")
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
        check=True,
        capture_output=True,
    )
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", *map(str, wheels.glob("*.whl"))],
        check=True,
        capture_output=True,
    )
    project = tmp_path / "project"
    (project / "schema" / "families").mkdir(parents=True)
    spec = REPO / "schema" / "families" / "gemma3.yaml"
    (project / "schema" / "families" / "gemma3.yaml").write_bytes(spec.read_bytes())
    # -I: the checkout (and its editable install's path hooks) stay out of sys.path.
    where = subprocess.run(
        [str(python), "-I", "-c", "import kvgen.render as r; print(r.TEMPLATES_DIR)"],
        cwd=project,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert Path(where).parts[-2:] == ("kvgen", "templates") and str(venv) in where
    subprocess.run(
        [str(python), "-I", "-m", "kvgen", "-q", "generate"],
        cwd=project,
        check=True,
        capture_output=True,
    )
    for name in ("sizing.py", "allocator.py", "__init__.py"):
        built = (project / "generated" / "gemma3" / name).read_bytes()
        assert built == (REPO / "generated" / "gemma3" / name).read_bytes(), name
