"""`kvgen lint` runs every check `kvgen generate` runs on the same files (issue 32).

On c2a37ec two spec files of one family linted clean (exit 0) while `kvgen generate` refused
them with KV010: the duplicate check lived only in generate's loader. Both commands now take
their findings from one function (``kvgen._lint.linter.check_paths``), and the property below holds
over the lint corpus, the shipped families and the multi-file cases: a set of files lints
without an error exactly when generate accepts it (and writes it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kvgen._cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "lint_corpus"
SHIPPED = ROOT / "schema" / "families"
TOY = """\
schema_version: 1
family: toy
tokens_per_block: 64
kv_cache_dtype: bf16
models:
  - name: {model}
    max_seq_len: 4096
    layer_kinds:
      full: {{attention: full, kv_heads: 8, head_dim: 128}}
    layers: {{count: 4, pattern: [full]}}
"""


def _lint_and_generate(paths: list[Path], out: Path, capsys) -> tuple[int, list, int]:
    """(lint's exit, lint's findings as JSON, generate's exit) for the same files."""
    capsys.readouterr()
    lint = main(["lint", "--format", "json", *map(str, paths)])
    findings = json.loads(capsys.readouterr().out)
    generate = main(["-q", "generate", "--out", str(out), *map(str, paths)])
    capsys.readouterr()
    return lint, findings, generate


def test_two_spec_files_of_one_family_are_kv010_for_lint_as_for_generate(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "a.yaml").write_text(TOY.format(model="toy_a"))
    (folder / "b.yaml").write_text(TOY.format(model="toy_b"))
    lint, findings, generate = _lint_and_generate([Path("specs")], tmp_path / "generated", capsys)
    # family: toy is on line 2 of b.yaml, its value at column 9 ("family: " is 8 characters).
    assert [(f["path"], f["line"], f["col"], f["code"]) for f in findings] == [
        ("specs/b.yaml", 2, 9, "KV010")
    ]
    assert findings[0]["message"] == "family 'toy' is also defined in specs/a.yaml"
    assert (lint, generate) == (1, 1)
    assert not (tmp_path / "generated").exists()
    # The Python API agrees with the command.
    from kvgen import lint_paths

    assert [d.code for d in lint_paths([folder])] == ["KV010"]


def _cases() -> list[tuple[str, list[Path]]]:
    cases = [(p.name, [p]) for p in sorted(CORPUS.glob("*.yaml"))]
    cases += [(p.name, [p]) for p in sorted(SHIPPED.glob("*.yaml"))]
    cases.append(("every shipped family", [SHIPPED]))
    cases.append(("gemma3 twice, by two names", [SHIPPED / "gemma3.yaml", CORPUS]))
    return cases


@pytest.mark.parametrize(("name", "paths"), _cases(), ids=[c[0] for c in _cases()])
def test_lint_clean_is_generate_accepted(name, paths, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    if name == "gemma3 twice, by two names":  # a copy of a shipped spec beside the original
        copy = tmp_path / "copy"
        copy.mkdir()
        shutil.copy(SHIPPED / "gemma3.yaml", copy / "gemma3_again.yaml")
        paths = [SHIPPED / "gemma3.yaml", copy]
    out = tmp_path / "generated"
    lint, findings, generate = _lint_and_generate(paths, out, capsys)
    errors = [f for f in findings if f["severity"] == "error"]
    assert (lint == 0) == (not errors)
    assert (lint == 0) == (generate == 0), (name, findings)
    assert out.exists() == (generate == 0)
