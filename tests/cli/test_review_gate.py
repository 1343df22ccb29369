"""The review gate against a hostile pull request (issue 18): line separators and output escaping.

Same toy family and repository as ``test_review.py`` (its fixture and helpers); the numbers of
the window change are derived there (``WINDOW_UP``): window 1024 -> 2048 makes toy_a's plain
profile and both pard4 managers capacity-reducing, so the diff blocks unless acknowledged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kvgen.cli import main
from kvgen.exits import Exit

from tests.cli.test_review import SPEC, TOY, diff, edit, repo  # noqa: F401 (a fixture)

LS = "\u2028"
HIDDEN_ACK = f"# reviewed{LS}acknowledge:{LS}  - {{change: capacity-reducing, reason: x}}\n"


# --- #2: only \n ends a line --------------------------------------------------------------


@pytest.mark.usefixtures("repo")
def test_acknowledgement_hidden_in_a_comment_line_is_refused_at_its_real_position(capsys):
    # git sees one comment line; YAML would see `acknowledge:` and its entry on lines 2 and 3.
    assert len((HIDDEN_ACK + TOY).encode().split(b"\n")) == len(TOY.encode().split(b"\n")) + 1
    SPEC.write_text(HIDDEN_ACK + TOY)
    edit("window: 1024", "window: 2048")
    code, out, err = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    # "# reviewed" is 10 characters: the first U+2028 is column 11; "acknowledge:" is 12 more
    # plus the separator itself, so the second is column 11 + 1 + 12 = 24. Both on line 1.
    fix = "delete the character; a value that needs it writes its escape in a double-quoted string"
    assert out == "".join(
        f"schema/families/toy.yaml:1:{col}: KV020 U+2028 LINE SEPARATOR ends a line for YAML "
        f"but not for git, diff views or editors; lines end only at \\n (fix: {fix})\n"
        for col in (11, 24)
    )
    assert "not comparing: fix the lint errors above" in err


@pytest.mark.parametrize(
    ("char", "name"),
    [
        ("\u2029", "U+2029 PARAGRAPH SEPARATOR"),
        ("\x85", "U+0085 NEXT LINE"),
        ("\r", "U+000D CARRIAGE RETURN without a line feed"),
    ],
)
def test_every_foreign_line_break_is_refused_by_lint_after_crlf_lines(tmp_path, capsys, char, name):
    # CR LF ends a line like LF (lines 1-3); the foreign break sits after "family: a" (9
    # characters) on line 4, even in a comment-free value.
    spec = tmp_path / "s.yaml"
    spec.write_bytes(f"# a\r\n# b\r\n# c\r\nfamily: a{char}b\n".encode())
    assert main(["lint", str(spec)]) == Exit.FINDINGS
    out = capsys.readouterr().out
    assert out.startswith(f"{spec.as_posix()}:4:10: KV020 {name}")
    assert out.count("KV020") == 1


def test_a_crlf_spec_is_still_a_spec(tmp_path, capsys):
    spec = tmp_path / "toy.yaml"
    spec.write_bytes(TOY.replace("\n", "\r\n").encode())
    assert main(["lint", str(spec)]) == Exit.OK


def test_config_with_a_line_separator_is_refused_at_its_real_position(
    tmp_path, monkeypatch, capsys
):
    # Without the rule the unknown key below was reported on line 3 (splitlines saw 3 lines).
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    Path("kvgen.toml").write_text(f'# a{LS}b\nspec = "s"\n')
    assert main(["lint"]) == Exit.USAGE
    err = capsys.readouterr().err
    assert err.startswith("kvgen: error: kvgen.toml:1:4: KV020 U+2028 LINE SEPARATOR")


def test_hf_config_with_a_line_separator_is_refused_at_its_real_position(tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text('{\n  "model_type": "llama",\n  "x": "a\u2028b"\n}\n')
    assert main(["import-hf", str(config)]) == Exit.FINDINGS
    # Line 3 is `  "x": "a` + U+2028: 2 blanks, "x" (3), ": " (2), '"a' (2) -> column 10.
    assert capsys.readouterr().out.startswith(
        f"{config.as_posix()}:3:10: KV020 U+2028 LINE SEPARATOR"
    )


# --- #8: every author-controlled text is escaped for its format ------------------------------

INJECTED = "ok\\n::error file=x,line=1::INJECTED | <!-- hidden"  # YAML escapes: a real newline


def _acknowledged_window_change() -> None:
    edit("window: 1024", "window: 2048")
    SPEC.write_text(
        SPEC.read_text()
        + f'acknowledge:\n  - {{change: capacity-reducing, reason: "{INJECTED}"}}\n'
    )


@pytest.mark.usefixtures("repo")
def test_text_output_shows_the_reason_escaped_and_forges_no_workflow_command(capsys):
    _acknowledged_window_change()
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == Exit.OK
    assert not [line for line in out.splitlines() if line.lstrip().startswith("::")]
    assert out.splitlines()[2] == (
        "toy/toy_a/none/target: capacity-reducing (acknowledged: ok\\n::error file=x,line=1::"
        "INJECTED | <!-- hidden)"
    )


@pytest.mark.usefixtures("repo")
def test_markdown_output_keeps_the_table_and_hides_nothing(capsys):
    _acknowledged_window_change()
    code, out, _ = diff(capsys, "--against", "HEAD", "--format", "markdown")
    assert code == Exit.OK
    assert "<!--" not in out
    rows = [line for line in out.splitlines() if line.startswith("| toy |")]
    assert len(rows) == 3  # the three managers of WINDOW_UP, each one row
    assert rows[0].endswith("| yes: ok\\\\n::error file=x,line=1::INJECTED \\| &lt;\\!-- hidden |")
    assert out.endswith("families: 1 changed, 0 added, 0 removed, 0 cosmetic, 0 unchanged</sub>\n")


@pytest.mark.usefixtures("repo")
def test_github_and_json_outputs_carry_the_reason_as_data(capsys):
    _acknowledged_window_change()
    code, out, _ = diff(capsys, "--against", "HEAD", "--format", "github")
    assert code == Exit.OK
    assert len(out.splitlines()) == 3  # one notice per acknowledged change, nothing forged
    assert "(acknowledged: ok%0A::error file=x,line=1::INJECTED | <!-- hidden)" in out
    code, out, _ = diff(capsys, "--against", "HEAD", "--format", "json")
    reason = "ok\n::error file=x,line=1::INJECTED | <!-- hidden"
    assert [c["acknowledged"] for c in json.loads(out)["changes"]] == [reason] * 3
