"""CONTRIBUTING.md's "Architecture" section stays true to the package: its list of layers names
every top-level module and sub-package of generator/ (installed as ``kvgen``) exactly once, in
the order that ``tests/unit/test_layers.py`` enforces, and every ``kvgen.<name>`` it names
exists."""

from __future__ import annotations

import re
from pathlib import Path

from tests.unit.test_layers import LAYERS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "generator"
NAME = re.compile(r"`kvgen\.([A-Za-z_][\w.]*)`")


def architecture_section() -> str:
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert contributing.count("\n## Architecture\n") == 1
    return contributing.split("\n## Architecture\n")[1].split("\n## ")[0]


def layers_list() -> str:
    section = architecture_section()
    assert section.count("**Layers.**") == 1
    return section.split("**Layers.**")[1].split("\n\n")[1]


def package_parts() -> set[str]:
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    return modules | packages


def test_the_list_of_layers_names_every_part_once_in_the_tested_order():
    named = [n for n in NAME.findall(layers_list()) if "." not in n]
    assert sorted(named) == sorted(package_parts()), sorted(set(named) ^ package_parts())
    assert named == [part for layer in LAYERS for part in layer]


def test_every_name_in_the_section_exists():
    # `kvgen.templates` is the templates/ folder (package-dir maps it there), and the shipped
    # catalogue `kvgen.families` / `kvgen.specs` is generated/ and schema/families/.
    folders = {
        "templates": ROOT / "templates",
        "families": ROOT / "generated",
        "specs": ROOT / "schema" / "families",
    }
    for name in NAME.findall(architecture_section()):
        head, *rest = name.split(".")
        base = folders.get(head, PACKAGE / head)
        path = base.joinpath(*rest)
        assert path.is_dir() or path.with_suffix(".py").is_file(), name


def test_the_check_sees_the_package():
    # A guard against the test passing vacuously on an empty or moved package.
    parts = package_parts()
    assert {"_cli", "_generate", "runtime", "sizing", "_spec", "_util"} <= parts
