"""The lint corpus: every bad spec under tests/lint_corpus reports exactly the codes and
positions its header line promises (``# expect: CODE line:col, ...``), writes nothing, and
never produces a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kvgen._cli.main import main
from kvgen._lint.linter import lint_paths
from kvgen._lint.rules import find_code
from kvgen._util.exits import UsageError

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parents[1] / "lint_corpus"
BAD = sorted(p for p in CORPUS.glob("*.yaml") if not p.name.startswith("valid_"))
VALID = sorted(CORPUS.glob("valid_*.yaml"))
SHIPPED = sorted((ROOT / "schema" / "families").glob("*.yaml"))
# A few go through a real `kvgen` process; the rest through kvgen._cli.main.main.
SUBPROCESS_CASES = {
    "kv002_latin1.yaml",
    "kv005_alias_bomb.yaml",
    "kv006_python_tag.yaml",
    "multi_findings.yaml",
}


def expected(path: Path) -> list[str]:
    header = path.read_bytes().split(b"\n", 1)[0].decode("ascii")
    assert header.startswith("# expect: "), f"{path.name}: first line must be '# expect: ...'"
    return sorted(header.removeprefix("# expect: ").split(", "))


def listing(root: Path) -> list[tuple[str, int, int]]:
    return sorted(
        (str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
    )


def test_corpus_has_at_least_thirty_bad_specs():
    assert len(BAD) >= 30


def test_corpus_covers_every_lint_rule():
    covered = {entry.split()[0] for path in BAD for entry in expected(path)}
    from kvgen._lint.rules import lint_rules

    assert {rule.code for rule in lint_rules()} <= covered


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_spec_reports_exact_codes_and_positions(path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    before = listing(CORPUS)
    if path.name in SUBPROCESS_CASES:
        proc = subprocess.run(
            [sys.executable, "-m", "kvgen", "lint", "--format", "json", str(path)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=60,
        )
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    else:
        rc = main(["lint", "--format", "json", str(path)])
        out, err = capsys.readouterr()
    found = json.loads(out)
    assert sorted(f"{d['code']} {d['line']}:{d['col']}" for d in found) == expected(path)
    has_error = any(find_code(e.split()[0]).severity == "error" for e in expected(path))
    assert rc == (1 if has_error else 0)
    assert "Traceback" not in err
    assert all(d["path"] == path.as_posix() for d in found)
    assert list(tmp_path.iterdir()) == []
    assert listing(CORPUS) == before


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_baseline_lints_clean(path):
    assert lint_paths([path]) == []


@pytest.mark.skipif(not SHIPPED, reason="no shipped specs under schema/families yet")
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_spec_lints_clean(path):
    assert [d.render() for d in lint_paths([path])] == []


def test_strict_turns_warnings_into_findings(capsys):
    warning_only = CORPUS / "kv206_unused_kind.yaml"
    assert main(["lint", str(warning_only)]) == 0
    assert main(["lint", "--strict", str(warning_only)]) == 1


def test_directory_is_expanded_to_yaml_files(capsys):
    assert main(["lint", "--format", "json", str(CORPUS)]) == 1
    found = json.loads(capsys.readouterr().out)
    # One folder is one set of specs, as `kvgen generate` reads it: the corpus's specs share
    # family names ('tiny'), so beside each file's own findings, every clean spec after the
    # first of its family is KV010 (issue 32: lint runs generate's checks).
    own = {d["path"] for d in found if d["code"] != "KV010"}
    assert own == {p.as_posix() for p in BAD}
    repeated = {d["path"] for d in found if d["code"] == "KV010"}
    assert repeated and {p.as_posix() for p in VALID} & repeated


def test_missing_path_is_a_usage_error(tmp_path, capsys):
    assert main(["lint", str(tmp_path / "nope.yaml")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "no such file or directory" in err


def test_a_dangling_link_is_kv020_never_followed(tmp_path):
    dangling = tmp_path / "dangling.yaml"
    dangling.symlink_to(tmp_path / "gone.yaml")  # listed by the expander, never followed
    (diagnostic,) = lint_paths([dangling])
    assert (diagnostic.code, diagnostic.line, diagnostic.col) == ("KV020", 1, 1)


def test_lint_paths_refuses_a_missing_path_as_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no such file or directory"):
        lint_paths([tmp_path / "missing.yaml"])


def test_oversized_file_is_kv008(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"# padding\n" * 500_000)
    (diagnostic,) = lint_paths([big])
    assert diagnostic.code == "KV008"


def test_summary_goes_to_stderr_and_findings_to_stdout(capsys):
    assert main(["lint", str(CORPUS / "kv201_tokens_per_block.yaml")]) == 1
    out, err = capsys.readouterr()
    assert out.startswith(str(CORPUS / "kv201_tokens_per_block.yaml"))
    assert "1 error, 0 warnings in 1 file" in err


def test_quiet_silences_the_summary(capsys):
    main(["-q", "lint", str(CORPUS / "valid_gemma.yaml")])
    assert capsys.readouterr() == ("", "")
