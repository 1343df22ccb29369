"""The review gate against a hostile pull request (issue 18): line separators and output escaping.

Same toy family and repository as ``test_review.py`` (its fixture and helpers); the numbers of
the window change are derived there (``WINDOW_UP``): window 1024 -> 2048 makes toy_a's plain
profile and both pard4 managers capacity-reducing, so the diff blocks unless acknowledged.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from kvgen._cli.main import main
from kvgen._util.exits import Exit

from tests.cli.test_review import SPEC, TOY, diff, edit, git, repo  # noqa: F401 (a fixture)

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
        f"schema/families/toy.yaml:1:{col}: KV015 U+2028 LINE SEPARATOR ends a line for YAML "
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
    assert out.startswith(f"{spec.as_posix()}:4:10: KV015 {name}")
    assert out.count("KV015") == 1


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
    assert err.startswith("kvgen: error: kvgen.toml:1:4: KV015 U+2028 LINE SEPARATOR")


def test_hf_config_with_a_line_separator_is_refused_at_its_real_position(tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text('{\n  "model_type": "llama",\n  "x": "a\u2028b"\n}\n')
    assert main(["import-hf", str(config)]) == Exit.FINDINGS
    # Line 3 is `  "x": "a` + U+2028: 2 blanks, "x" (3), ": " (2), '"a' (2) -> column 10.
    assert capsys.readouterr().out.startswith(
        f"{config.as_posix()}:3:10: KV015 U+2028 LINE SEPARATOR"
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


# --- #1: both sides compared by path, no link followed -------------------------------------

KV401_FIX = "(fix: commit the spec itself (a regular file) in place of the link)"
KV402_FIX = "(fix: keep only regular spec files under the spec directory)"
REGULAR = "kvgen diff compares regular files only"
LINK = "this path is a symlink; kvgen diff compares files and never follows a link"


def commit(message: str) -> None:
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)


@pytest.mark.usefixtures("repo")
def test_spec_replaced_by_a_symlink_to_a_smaller_copy_is_a_finding_not_an_added_family(capsys):
    # Same family at 1/8 of the capacity: every kind at 8 x 1024 B/token, slope 8 x 2048.
    real = Path("schema/v2/real.yaml")
    real.parent.mkdir()
    real.write_text(TOY.replace("bytes_per_token: 1024", "bytes_per_token: 8192"))
    SPEC.unlink()
    SPEC.symlink_to("../v2/real.yaml")
    code, out, err = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    assert out == f"schema/families/toy.yaml:1:1: KV401 {LINK} {KV401_FIX}\n"
    assert "family added" not in out and "not comparing" in err


@pytest.mark.usefixtures("repo")
def test_spec_replaced_by_a_link_to_dev_null_is_a_finding_not_a_silent_removal(capsys):
    SPEC.unlink()
    SPEC.symlink_to("/dev/null")
    shutil.rmtree("generated/toy")
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    assert out == f"schema/families/toy.yaml:1:1: KV401 {LINK} {KV401_FIX}\n"


@pytest.mark.usefixtures("repo")
def test_symlinked_spec_folder_in_the_working_tree_is_a_finding_at_the_folder(capsys):
    Path("schema/v2").mkdir()
    Path("schema/v2/toy.yaml").write_text(TOY.replace("1024", "8192"))
    shutil.rmtree("schema/families")
    Path("schema/families").symlink_to("v2")
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    assert out == f"schema/families:1:1: KV401 {LINK} {KV401_FIX}\n"


@pytest.mark.usefixtures("repo")
def test_symlink_at_the_base_ref_is_a_finding_at_the_ref(capsys):
    Path("schema/v2").mkdir()
    Path("schema/v2/real.yaml").write_text(TOY)
    SPEC.unlink()
    SPEC.symlink_to("../v2/real.yaml")
    commit("spec as a link")
    assert git("ls-tree", "HEAD", "schema/families/").startswith("120000 blob ")
    SPEC.unlink()
    SPEC.write_text(TOY)
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    assert out == f"HEAD:schema/families/toy.yaml:1:1: KV401 {LINK} {KV401_FIX}\n"


@pytest.mark.usefixtures("repo")
def test_submodule_named_like_a_spec_at_the_base_ref_is_a_finding(capsys):
    head = git("rev-parse", "HEAD").strip()
    git("update-index", "--add", "--cacheinfo", f"160000,{head},schema/families/extra.yaml")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "gitlink")
    assert git("ls-tree", "HEAD", "schema/families/").startswith("160000 commit ")
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    assert out == (
        "HEAD:schema/families/extra.yaml:1:1: KV402 this path is a submodule (git mode 160000); "
        f"{REGULAR} {KV402_FIX}\n"
    )


@pytest.mark.usefixtures("repo")
@pytest.mark.parametrize("make", ["folder", "fifo"])
def test_non_regular_entry_named_like_a_spec_in_the_working_tree_is_a_finding(capsys, make):
    odd = Path("schema/families/odd.yaml")
    odd.mkdir() if make == "folder" else os.mkfifo(odd)  # a FIFO would block a plain read
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    what = "a folder" if make == "folder" else (
        "neither a regular file nor a folder (a device, FIFO or socket)"
    )  # fmt: skip
    assert out == (
        f"schema/families/odd.yaml:1:1: KV402 this path is {what}; {REGULAR} {KV402_FIX}\n"
    )


@pytest.mark.usefixtures("repo")
def test_folder_on_the_path_of_an_explicit_spec_that_is_a_symlink_is_named(capsys):
    os.rename("schema", "real_schema")
    Path("schema").symlink_to("real_schema")
    code, out, _ = diff(capsys, "--against", "HEAD", str(SPEC))
    assert code == Exit.FINDINGS
    assert out == (
        "schema:1:1: KV401 this entry is a symlink on the path of schema/families/toy.yaml; "
        f"kvgen diff compares files and never follows a link {KV401_FIX}\n"
    )


# --- #5: non-ASCII names at the ref ----------------------------------------------------------

NON_ASCII = Path("schema/families/\u00e9.yaml")
# Both kinds at 2048 B/token (twice the toy's), from the derivation in test_review.py:
#   slope      = 2 full layers * 2048                                    = 4096 B/token
#   max tokens = 8192 + (42949672960 - 8 * 2 * 2048 * 32 * 33 - 8192 * 8192) // 4096
#              = 8192 + 10460928                                         = 10469120
# against 20954880 before: 10485760 fewer, about half.


@pytest.fixture
def non_ascii(request):
    request.getfixturevalue("repo")
    os.rename(SPEC, NON_ASCII)
    commit("spec with a non-ASCII name")
    # git quotes the name in its default output (core.quotePath): what diff used to parse.
    assert git("ls-tree", "--name-only", "HEAD", "schema/families/") == (
        '"schema/families/\\303\\251.yaml"\n'
    )


@pytest.mark.usefixtures("non_ascii")
def test_renaming_a_non_ascii_spec_while_halving_its_capacity_blocks(capsys):
    os.rename(NON_ASCII, SPEC)
    edit("bytes_per_token: 1024", "bytes_per_token: 2048")
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    lines = out.splitlines()
    assert lines[2:6] == [
        "toy/toy_a/none/target: capacity-reducing (NOT ACKNOWLEDGED)",
        "    slope       2048 -> 4096 B/token  (+2048 B, +2 KiB)",
        "    intercept   34078720 -> 68157440 B  (+34078720 B, +32.5 MiB)",
        "    max tokens  20954880 -> 10469120  (-10485760)",
    ]
    assert "family added" not in out


@pytest.mark.usefixtures("non_ascii")
def test_deleting_a_non_ascii_spec_is_a_removal(capsys):
    NON_ASCII.unlink()
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    assert out.splitlines()[2] == "toy/*/*/*: api: family removed (NOT ACKNOWLEDGED)"


@pytest.mark.usefixtures("non_ascii")
def test_unchanged_non_ascii_spec_is_seen_at_both_sides(capsys):
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == Exit.OK
    assert "families: 0 changed, 0 added, 0 removed, 0 cosmetic, 1 unchanged" in out


@pytest.mark.usefixtures("repo")
@pytest.mark.parametrize("ref", ["-h", "--output=/tmp/x", "HEAD:schema", "HEAD\nx"])
def test_hostile_refs_stay_usage_errors(capsys, ref):
    code, out, err = diff(capsys, f"--against={ref}")
    assert (code, out) == (Exit.USAGE, "")
    assert f"unknown git ref {ref!r}" in err


@pytest.mark.usefixtures("repo")
def test_symlinked_spec_folder_at_the_base_ref_is_a_finding_at_the_ref(capsys):
    # At the ref, schema/families is a link to schema/v2; the working tree has the folder back.
    os.rename("schema/families", "schema/v2")
    Path("schema/families").symlink_to("v2")
    commit("spec folder as a link")
    Path("schema/families").unlink()
    os.rename("schema/v2", "schema/families")
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    assert out == f"HEAD:schema/families:1:1: KV401 {LINK} {KV401_FIX}\n"


@pytest.mark.usefixtures("repo")
def test_paths_are_shown_relative_to_a_subdirectory(capsys, monkeypatch):
    SPEC.unlink()
    SPEC.symlink_to("/dev/null")
    monkeypatch.chdir("schema")
    code, out, _ = diff(capsys, "--against", "HEAD", "families")
    assert code == Exit.FINDINGS
    assert out == f"families/toy.yaml:1:1: KV401 {LINK} {KV401_FIX}\n"


@pytest.mark.parametrize("code", ["KV015", "KV401", "KV402"])
def test_new_codes_are_explained(capsys, code):
    assert main(["explain", code]) == Exit.OK
    out = capsys.readouterr().out
    assert out.startswith(f"{code} (")
    for heading in ("## What it does", "## Why it matters", "## Example", "## Fix"):
        assert heading in out
