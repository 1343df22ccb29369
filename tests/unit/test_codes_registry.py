"""One registry of diagnostic codes: each code declared exactly once, every code the source
uses is declared, and docs/codes.md is generated from the registry (checked for drift)."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest
from kvgen._cli.main import main
from kvgen._lint.codes_doc import render_catalogue, render_codes_page
from kvgen._lint.linter import duplicate_family
from kvgen._lint.rules import all_codes, find_code
from kvgen._util.diagnostics import Diagnostic

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "generator"
CODES_PAGE = ROOT / "docs" / "codes.md"
CATALOGUE = SOURCE / "_cli" / "catalogue.py"
CODE = re.compile(r"KV\d{3}")
# Where a code may be declared: the reader/schema (and line rule), file-access, import-hf and
# diff tables, and the rule modules.
DECLARING = {
    SOURCE / "_util" / "codes" / name
    for name in ("reader.py", "lines.py", "files.py", "hf.py", "review.py")
}


def _string_constants(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def _code_literals() -> Counter[tuple[str, Path]]:
    found: Counter[tuple[str, Path]] = Counter()
    for path in SOURCE.rglob("*.py"):
        if path == CATALOGUE:  # generated from the registry: test_the_catalogue_is_up_to_date
            continue
        for value in _string_constants(path):
            if CODE.fullmatch(value):
                found[(value, path)] += 1
    return found


def test_every_code_literal_in_the_source_is_its_one_declaration():
    literals = _code_literals()
    per_code = Counter(code for code, _path in literals.elements())
    assert {code for code, count in per_code.items() if count > 1} == set()
    for code, path in literals:
        assert path in DECLARING or path.parent == SOURCE / "_lint" / "rules", (code, path)


def test_every_code_used_is_declared_and_every_declared_code_is_used():
    used = {code for code, _path in _code_literals()}
    declared = [entry.code for entry in all_codes()]
    assert len(declared) == len(set(declared))
    assert set(declared) == used


def test_names_are_unique_and_every_code_has_a_default_fix_or_a_rule():
    codes = all_codes()
    assert len({entry.name for entry in codes}) == len(codes)
    for entry in codes:
        assert entry.fix or entry.check is not None, entry.code


def test_no_module_outside_the_registry_writes_a_code_as_text():
    # Diagnostics are built from a declared Code (Code.at), never Diagnostic(..., "KV...").
    for path in SOURCE.rglob("*.py"):
        if path in DECLARING or path.parent == SOURCE / "_lint" / "rules":
            continue
        assert not re.search(r'"KV\d{3}"', path.read_text(encoding="utf-8")), path


@pytest.mark.parametrize("name", ["Loc", "SPEC_SUFFIXES"])
def test_shared_names_are_defined_once(name):
    definitions = []
    for path in SOURCE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                definitions.append(path.relative_to(SOURCE).as_posix())
    assert len(definitions) == 1, definitions


def test_kv010_is_built_by_one_function_from_both_call_sites():
    for relative in ("_lint/linter.py", "_review/_sides.py"):
        text = (SOURCE / relative).read_text(encoding="utf-8")
        assert "duplicate_family(" in text, relative
    diagnostic = duplicate_family("b.yaml", (3, 9), "gemma3", "a.yaml")
    assert diagnostic == Diagnostic(
        "b.yaml", 3, 9, "KV010", "family 'gemma3' is also defined in a.yaml"
    )
    assert diagnostic.fix == find_code("KV010").fix


def test_the_codes_page_is_up_to_date(capsys):
    assert CODES_PAGE.read_text(encoding="utf-8") == render_codes_page(all_codes())
    assert main(["explain", "--check-docs", str(CODES_PAGE)]) == 0
    assert capsys.readouterr().out == ""


def test_the_catalogue_is_up_to_date():
    """``kvgen explain`` reads kvgen/catalogue.py instead of importing the rules (start-up);
    it must say what the registry says. Stale: run ``python -m kvgen._lint.codes_doc``."""
    assert CATALOGUE.read_text(encoding="utf-8") == render_catalogue(all_codes())


def test_explain_prints_the_registry_entry_from_the_catalogue(capsys):
    for entry in all_codes():
        assert main(["explain", entry.code.lower()]) == 0
        out = capsys.readouterr().out
        assert out == f"{entry.code} ({entry.name}) [{entry.severity}]\n\n{entry.doc}\n"
    assert main(["explain", "undefined-pattern-kind"]) == 0
    assert capsys.readouterr().out.startswith("KV205 (undefined-pattern-kind) [error]\n")


def test_the_codes_page_has_an_anchor_and_the_full_doc_of_every_code():
    page = CODES_PAGE.read_text(encoding="utf-8")
    for entry in all_codes():
        assert f'<a id="{entry.code.lower()}"></a>\n\n## {entry.code} {entry.name}\n' in page
        assert f"[{entry.code}](#{entry.code.lower()})" in page
        assert "### Why it matters" in page.split(f"## {entry.code} ", 1)[1]


def test_check_docs_reports_a_stale_page_and_writes_nothing(tmp_path, capsys):
    stale = tmp_path / "codes.md"
    stale.write_text(render_codes_page(all_codes()).replace("KV205", "KV2O5", 1))
    before = stale.read_text()
    assert main(["explain", "--check-docs", str(stale)]) == 1
    out = capsys.readouterr().out
    assert "-| [KV2O5]" in out and "+| [KV205]" in out
    assert stale.read_text() == before


def test_write_docs_writes_the_page_then_check_is_clean(tmp_path):
    page = tmp_path / "docs" / "codes.md"
    assert main(["explain", "--write-docs", str(page)]) == 0
    assert main(["explain", "--check-docs", str(page)]) == 0


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [
        ("KV2211", "KV221"),  # one digit too many: the closest declared code
        ("window-covers-max-seqlen", "window-covers-max-seq-len"),
        ("unused-layer-knd", "unused-layer-kind"),
    ],
)
def test_explain_suggests_the_closest_code(typed, suggested, capsys):
    assert main(["explain", typed]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"kvgen: error: unknown code {typed!r} (did you mean {suggested!r}?); "
        "see 'kvgen lint --list-rules'\n"
    )


def test_explain_without_a_code_is_a_usage_error(capsys):
    assert main(["explain"]) == 2
    assert capsys.readouterr().err.startswith("kvgen: error: give a CODE")
