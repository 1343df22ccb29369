"""`# kvgen: noqa` and `kvgen lint --select/--ignore/--extend-select` (issue 23), as ruff's.

The specs are two lint-corpus files whose headers state their finding by hand:
kv202_window_covers_seq.yaml (KV202 warning at 10:43: a window of 8192 is not below
max_seq_len 8192) and kv201_tokens_per_block.yaml (KV201 error at 4:19: 48 is not a power of
two). Each test writes a copy with a comment added at the end of the finding's line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kvgen._cli.main import main
from kvgen._lint.linter import lint_report
from kvgen._lint.noqa import Directive, Selection, directives

CORPUS = Path(__file__).resolve().parents[1] / "lint_corpus"
KV202 = CORPUS / "kv202_window_covers_seq.yaml"  # warning at 10:43
KV201 = CORPUS / "kv201_tokens_per_block.yaml"  # error at 4:19
KV101 = CORPUS / "kv101_misspelt_window.yaml"  # a schema error: never suppressed


def with_comment(tmp_path: Path, source: Path, line: int, comment: str) -> Path:
    lines = source.read_text(encoding="utf-8").splitlines()
    lines[line - 1] += f"  {comment}"
    path = tmp_path / source.name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def lint(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["lint", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_directives_are_comments_with_codes_a_reason_may_follow():
    raw = (
        b"a: 1  # kvgen: noqa: KV216, kv202 the window is in pages on purpose\n"
        b"b: 2 # kvgen: noqa\n"
        b'c: "# kvgen: noqa inside a string"\n'
        b"# KVGEN: NOQA:KV201 KV203\n"
        b"d: 3  # noqa: KV201\n"  # not kvgen's
    )
    assert directives(raw) == [
        Directive(1, 7, ("KV216", "KV202")),
        Directive(2, 6, ()),
        Directive(4, 1, ("KV201", "KV203")),
    ]
    assert directives(b"family: x\n") == []


@pytest.mark.parametrize("comment", ["# kvgen: noqa: KV202", "# kvgen: noqa", "#kvgen:noqa:kv202"])
def test_a_noqa_on_the_line_suppresses_the_finding_and_the_summary_counts_it(
    tmp_path, capsys, comment
):
    spec = with_comment(tmp_path, KV202, 10, comment)
    code, out, err = lint(capsys, "--strict", str(spec))
    assert (code, out) == (0, "")
    assert "0 errors, 0 warnings, 1 suppressed in 1 file" in err


def test_a_suppressed_error_no_longer_fails_lint_or_generate(tmp_path, capsys):
    spec = with_comment(tmp_path, KV201, 4, "# kvgen: noqa: KV201")
    assert lint(capsys, str(spec))[0] == 0
    out_dir = tmp_path / "out"
    assert main(["-q", "generate", str(spec), "--out", str(out_dir)]) == 0
    assert (out_dir / "tiny" / "sizing.py").is_file()


def test_sarif_reports_the_suppressed_finding_as_suppressed_in_source(tmp_path, capsys):
    spec = with_comment(tmp_path, KV202, 10, "# kvgen: noqa: KV202")
    code, out, _ = lint(capsys, "--format", "sarif", str(spec))
    assert code == 0
    (result,) = json.loads(out)["runs"][0]["results"]
    assert result["ruleId"] == "KV202"
    assert result["suppressions"] == [{"kind": "inSource"}]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (10, 43)
    # json and github have no place for it: not there
    assert json.loads(lint(capsys, "--format", "json", str(spec))[1]) == []


@pytest.mark.parametrize(
    ("comment", "message"),
    [
        ("# kvgen: noqa: KV216", "KV216 is not reported on this line"),
        ("# kvgen: noqa: KV261", "KV261 in '# kvgen: noqa' is an unknown code"),
        ("# kvgen: noqa: KV101", "KV101 in '# kvgen: noqa' is not a lint rule (KV2xx)"),
    ],
)
def test_a_noqa_that_suppresses_nothing_is_a_kv014_warning(tmp_path, capsys, comment, message):
    spec = with_comment(tmp_path, KV202, 10, comment)
    code, out, _ = lint(capsys, str(spec))
    assert code == 0  # warnings
    assert f"{spec.as_posix()}:10:43: KV202 [warning]" in out  # not suppressed
    col = len("      local: {attention: sliding, window: 8192, kv_heads: 8, head_dim: 128}  ") + 1
    assert f"{spec.as_posix()}:10:{col}: KV014 [warning] {message}" in out


def test_a_bare_noqa_on_a_clean_line_is_a_kv014_warning(tmp_path, capsys):
    spec = with_comment(tmp_path, KV202, 3, "# kvgen: noqa")
    _, out, _ = lint(capsys, str(spec))
    col = len("family: tiny  ") + 1  # line 3, then the two spaces before the comment
    assert f"{spec.as_posix()}:3:{col}: KV014 [warning] '# kvgen: noqa' suppresses nothing" in out


def test_schema_errors_are_never_suppressed(tmp_path):
    text = KV101.read_text(encoding="utf-8")
    expected = [d.code for d in lint_report([KV101]).diagnostics]
    assert expected and all(code.startswith("KV1") for code in expected)
    spec = tmp_path / KV101.name
    spec.write_text("\n".join(f"{line}  # kvgen: noqa" for line in text.splitlines()) + "\n")
    assert [d.code for d in lint_report([spec]).diagnostics] == expected


@pytest.mark.parametrize(
    ("flags", "codes"),
    [
        ((), {"KV201", "KV202"}),
        (("--select", "KV2"), {"KV201", "KV202"}),
        (("--select", "KV201"), {"KV201"}),
        (("--select", "kv201,KV202"), {"KV201", "KV202"}),
        (("--select", "KV201", "--extend-select", "KV202"), {"KV201", "KV202"}),
        (("--ignore", "KV20"), set()),
        (("--ignore", "KV202"), {"KV201"}),
        (("--select", "KV20", "--ignore", "KV202"), {"KV201"}),
        (("--ignore", "KV2", "--select", "KV202"), {"KV202"}),  # the longer prefix wins
        (("--select", "KV202", "--ignore", "KV202"), set()),  # a tie: ignored
        (("--select", "KV3"), set()),
    ],
)
def test_select_and_ignore_take_code_prefixes(capsys, flags, codes):
    code, out, _ = lint(capsys, *flags, "--format", "json", str(KV201), str(KV202))
    assert {item["code"] for item in json.loads(out)} == codes
    assert code == (1 if "KV201" in codes else 0)


def test_selection_never_hides_a_spec_that_does_not_load(capsys):
    code, out, _ = lint(capsys, "--select", "KV2", "--format", "json", str(KV101))
    assert code == 1
    assert {item["code"][:3] for item in json.loads(out)} == {"KV1"}


def test_an_unknown_prefix_is_a_usage_error_naming_the_code_meant(capsys):
    code, _, err = lint(capsys, "--select", "KB202", str(KV202))
    assert code == 2
    assert "unknown code or prefix 'KB202' (did you mean 'KV202'?)" in err


def test_selection_is_longest_prefix_and_loader_codes_are_always_on():
    selection = Selection(["KV2"], ["KV21"], ["KV216"])
    assert selection("KV201") and selection("KV216") and not selection("KV215")
    assert selection("KV001") and selection("KV101")  # reading and schema: always reported
