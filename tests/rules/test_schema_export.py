"""schema/kvspec.schema.json: byte-identical to a fresh export, enforced by ``kvgen schema
--check``; it validates every shipped spec, and agrees with pydantic on the lint corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from kvgen._cli.main import main
from kvgen._spec.loader import load_path, parse_yaml
from kvgen._spec.models import SCHEMA_ID
from kvgen._spec.schema_export import DRAFT, MODELINE_PREFIX, export_schema

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schema" / "kvspec.schema.json"
CORPUS = ROOT / "tests" / "lint_corpus"
SHIPPED = sorted((ROOT / "schema" / "families").glob("*.yaml"))


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def parsed(path: Path):
    data, _, diagnostics = parse_yaml(path.as_posix(), path.read_bytes())
    return data, diagnostics


def test_committed_schema_is_byte_identical_to_a_fresh_export():
    assert SCHEMA.read_text(encoding="utf-8") == export_schema()


def test_export_is_draft_2020_12_with_a_stable_id():
    schema = json.loads(export_schema())
    assert schema["$schema"] == DRAFT
    assert schema["$id"] == SCHEMA_ID
    assert export_schema() == export_schema()


def test_schema_check_passes_on_the_committed_file(capsys):
    assert main(["schema", "--check", "--output", str(SCHEMA)]) == 0
    assert capsys.readouterr().out == ""


def test_schema_check_reports_drift_as_a_unified_diff(tmp_path, capsys):
    stale = tmp_path / "kvspec.schema.json"
    stale.write_text(export_schema().replace('"title": "Window"', '"title": "Windw"'))
    assert main(["schema", "--check", "--output", str(stale)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"--- {stale.as_posix()} (committed)\n+++ ")
    changed = [line for line in out.splitlines() if line[:1] in "+-" and "Wind" in line]
    assert [line[0] for line in changed] == ["-", "+"]
    assert "Windw" in changed[0] and "Window" in changed[1]
    assert stale.read_text() != export_schema()  # --check writes nothing


def test_schema_check_reports_a_missing_file(tmp_path):
    assert main(["schema", "--check", "--output", str(tmp_path / "none.json")]) == 1
    assert list(tmp_path.iterdir()) == []


def test_schema_writes_the_file_and_is_then_clean(tmp_path):
    out = tmp_path / "schema" / "kvspec.schema.json"
    assert main(["schema", "--output", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == export_schema()
    assert main(["schema", "--check", "--output", str(out)]) == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["kvspec.schema.json"]


def test_schema_check_flags_specs_without_the_modeline(tmp_path, capsys):
    schema = tmp_path / "kvspec.schema.json"
    schema.write_text(export_schema())
    (tmp_path / "families").mkdir()
    good = tmp_path / "families" / "good.yaml"
    good.write_text(f"{MODELINE_PREFIX}../kvspec.schema.json\nschema_version: 1\n")
    bad = tmp_path / "families" / "bad.yaml"
    bad.write_text("schema_version: 1\n")
    assert main(["schema", "--check", "--output", str(schema)]) == 1
    assert capsys.readouterr().out == (
        f"{bad.as_posix()}:1:1: first line must be "
        "'# yaml-language-server: $schema=../kvspec.schema.json'\n"
    )


@pytest.mark.skipif(not SHIPPED, reason="no shipped specs under schema/families yet")
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_spec_carries_the_modeline(path):
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    assert first == f"{MODELINE_PREFIX}../kvspec.schema.json"


@pytest.mark.skipif(not SHIPPED, reason="no shipped specs under schema/families yet")
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_jsonschema_validates_shipped_spec(path, validator):
    data, diagnostics = parsed(path)
    assert diagnostics == []
    assert [error.message for error in validator.iter_errors(data)] == []


AGREEMENT_CASES = sorted(p for p in CORPUS.glob("*.yaml") if parsed(p)[1] == [])


@pytest.mark.parametrize("path", AGREEMENT_CASES, ids=lambda p: p.name)
def test_pydantic_and_jsonschema_agree(path, validator):
    data, _ = parsed(path)
    pydantic_valid = load_path(path).family is not None
    assert validator.is_valid(data) == pydantic_valid
    # Semantic-rule cases (KV2xx) are structurally valid to both validators.
    if path.read_text(encoding="utf-8").startswith("# expect: KV2"):
        assert pydantic_valid


def test_agreement_corpus_covers_schema_failures():
    invalid = [p for p in AGREEMENT_CASES if load_path(p).family is None]
    assert len(invalid) >= 10
