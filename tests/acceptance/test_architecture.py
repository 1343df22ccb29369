"""CONTRIBUTING.md's "Architecture" section stays true to the package: it names every top-level
module and sub-package of generator/ (installed as ``kvgen``) exactly once, and every
``kvgen.<name>`` it names exists."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "generator"
NAME = re.compile(r"`kvgen\.([A-Za-z_][\w.]*)`")


def architecture_section() -> str:
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert contributing.count("\n## Architecture\n") == 1
    return contributing.split("\n## Architecture\n")[1].split("\n## ")[0]


def package_parts() -> set[str]:
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    return modules | packages


def test_the_section_names_every_module_and_sub_package_once():
    named = Counter(NAME.findall(architecture_section()))
    missing = package_parts() - set(named)
    assert not missing, f"CONTRIBUTING.md's Architecture section does not name: {sorted(missing)}"
    twice = sorted(name for name, count in named.items() if count > 1)
    assert not twice, f"named more than once: {twice}"


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
    assert {"_cli", "_render", "runtime", "_rules", "_codes", "_commands"} <= parts
