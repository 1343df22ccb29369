"""The review gate when the pull request owns the configuration (issue 29: G1, G2, G3).

In pull-request CI, ``pyproject.toml`` / ``kvgen.toml`` are PR content like the specs. The
review commands therefore read the locations from the base side as well as the PR side: moving
the specs or re-pointing ``[tool.kvgen] specs`` / ``out`` cannot hide a capacity cut or a
hand-edited generated module, and an empty ``--against`` is a usage error, never ``HEAD``.

Same toy family and repository as ``test_review.py`` (its fixture and helpers). The capacity cut
is its ``WINDOW_UP``: window 1024 -> 2048 makes toy_a's plain profile and both pard4 managers
capacity-reducing (derived there), so an honest diff exits 1 with 3 blocking changes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kvgen._cli.main import main
from kvgen._util.exits import Exit

from tests.cli.test_review import HEAD, SPEC, TOY, WINDOW_UP, diff, git, repo  # noqa: F401

CUT = TOY.replace("window: 1024", "window: 2048")


# --- G3: an empty ref is a usage error -----------------------------------------------------


@pytest.mark.usefixtures("repo")
@pytest.mark.parametrize("ref", ["", " ", "\t", "\n"])
def test_an_empty_or_blank_against_is_a_usage_error_not_head(capsys, ref):
    # Committed cut: against HEAD (the PR's own commit) it would compare the cut with itself.
    SPEC.write_text(CUT)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "cut")
    code, out, err = diff(capsys, "--against", ref)
    assert code == Exit.USAGE
    assert out == ""
    assert "--against is empty" in err


def commit(message: str) -> None:
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)


def blocking_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if "(NOT ACKNOWLEDGED)" in line]


# The three unacknowledged changes of WINDOW_UP (test_review.py derives their numbers).
CUT_LINES = blocking_lines(WINDOW_UP)
assert len(CUT_LINES) == 3


# --- G1: moving the specs and re-pointing `specs` cannot hide a capacity cut ------------------


@pytest.mark.usefixtures("repo")
@pytest.mark.parametrize(
    ("config", "text"),
    [
        ("kvgen.toml", 'specs = "schema/fam2"\n'),
        ("pyproject.toml", '[project]\nname = "x"\n\n[tool.kvgen]\nspecs = "schema/fam2"\n'),
    ],
)
def test_a_moved_spec_is_compared_with_its_old_self(capsys, config, text):
    # c2a37ec compared only schema/fam2 (the pull request's `specs`): "1 added", exit 0.
    Path("schema/fam2").mkdir()
    Path("schema/fam2/toy.yaml").write_text(CUT)
    SPEC.unlink()
    Path(config).write_text(text)
    code, out, err = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    # The same report as the cut in place, the acknowledgement hint naming the new file.
    assert out == HEAD + WINDOW_UP.replace("schema/families/toy.yaml", "schema/fam2/toy.yaml")
    assert "the spec directory moved: schema/families at HEAD, schema/fam2" in err


@pytest.mark.usefixtures("repo")
def test_a_moved_spec_is_compared_when_the_ref_configured_the_specs_too(capsys):
    Path("kvgen.toml").write_text('specs = "schema/families"\n')
    commit("configured")
    Path("schema/fam2").mkdir()
    shutil.move(SPEC, "schema/fam2/toy.yaml")
    Path("schema/fam2/toy.yaml").write_text(CUT)
    Path("kvgen.toml").write_text('specs = "schema/fam2"\n')
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    assert blocking_lines(out) == CUT_LINES


@pytest.mark.usefixtures("repo")
def test_a_copy_beside_the_unchanged_old_spec_is_a_duplicate_family(capsys):
    Path("schema/fam2").mkdir()
    Path("schema/fam2/toy.yaml").write_text(CUT)
    Path("kvgen.toml").write_text('specs = "schema/fam2"\n')
    code, out, err = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    assert out == (
        "schema/families/toy.yaml:1:1: KV010 family 'toy' is also defined in "
        "schema/fam2/toy.yaml (fix: give each spec file its own family name)\n"
    )
    assert "not comparing: fix the lint errors above" in err


@pytest.mark.usefixtures("repo")
def test_the_reference_deployment_is_the_refs(capsys):
    # At max_seq_len 512 both windows (1024, 2048) exceed every request, so their pages are
    # equal and the cut disappears: c2a37ec took max_seq_len from the pull request's
    # kvgen.toml and exited 0. The ref has no configuration: the built-in 32768 applies.
    SPEC.write_text(CUT)
    Path("kvgen.toml").write_text("[deployment]\nmax_seq_len = 512\n")
    code, out, err = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    assert out == HEAD + WINDOW_UP
    assert (
        "[tool.kvgen.deployment] max_seq_len is 512 in the working tree and unset at HEAD: the "
        "review uses the ref's" in err
    )
    # A flag is the reviewer's own choice, and wins.
    code, out, _ = diff(capsys, "--against", "HEAD", "--max-seq-len", "512")
    assert code == Exit.OK and not blocking_lines(out)


@pytest.mark.usefixtures("repo")
def test_an_honest_move_of_specs_and_output_passes(capsys):
    # git mv of both folders and a configuration naming them: nothing to review.
    Path("schema/fam2").mkdir()
    shutil.move(SPEC, "schema/fam2/toy.yaml")
    shutil.move("generated", "gen2")
    Path("kvgen.toml").write_text('specs = "schema/fam2"\nout = "gen2"\n')
    assert main(["-q", "generate"]) == Exit.OK  # the headers name the new spec path
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == Exit.OK, out
    assert out.splitlines()[-1].endswith("0 removed, 1 cosmetic, 0 unchanged")
    assert main(["-q", "generate", "--check"]) == Exit.OK
    assert main(["-q", "lint"]) == Exit.OK


# --- G2: re-pointing `out` cannot hide a hand-edited generated module ----------------------

HOSTILE = '\nimport os\nos.system("echo pwned")  # runs when a consumer imports the module\n'
MODULE = Path("generated/toy/sizing.py")


def _hand_edit_and_repoint(out: str) -> None:
    """The attack: edit the committed module, generate a clean copy elsewhere, point `out` at
    it (the spec is unchanged, so a diff of the specs alone has nothing to say)."""
    MODULE.write_text(MODULE.read_text() + HOSTILE)
    assert main(["-q", "generate", "--out", out]) == Exit.OK
    Path("kvgen.toml").write_text(f'out = "{out}"\n')


@pytest.mark.usefixtures("repo")
def test_generate_check_always_checks_the_default_output(capsys):
    # c2a37ec checked only gen2 (the pull request's `out`): exit 0.
    _hand_edit_and_repoint("gen2")
    capsys.readouterr()
    assert main(["generate", "--check"]) == Exit.FINDINGS
    out, err = capsys.readouterr()
    assert "out of date: generated/toy/sizing.py\n" in out
    assert '-os.system("echo pwned")' in out  # the diff from disk to what kvgen writes
    assert "kvgen: gen2 is up to date" in err


@pytest.mark.usefixtures("repo")
def test_diff_checks_the_output_folder_the_ref_configured(capsys):
    # c2a37ec compared the specs only: no change, exit 0.
    _hand_edit_and_repoint("gen2")
    capsys.readouterr()
    code, out, err = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    assert out.startswith(
        "generated/toy/sizing.py:1:1: KV403 this file differs from what kvgen generates from "
        "the specs, and the working tree's [tool.kvgen] out no longer names this folder"
    )
    assert "the old output folder generated is not what kvgen generates" in err


@pytest.mark.usefixtures("repo")
def test_diff_checks_a_configured_output_folder_that_generate_check_cannot_know(capsys):
    # The ref keeps its output in src/gen (configured). The pull request points `out` at a
    # fresh folder and edits src/gen: generate --check sees gen2 and no generated/, so only
    # the review, which reads the ref's configuration, can find it.
    Path("kvgen.toml").write_text('out = "src/gen"\n')
    shutil.rmtree("generated")
    assert main(["-q", "generate"]) == Exit.OK
    commit("output in src/gen")
    MODULE_ = Path("src/gen/toy/sizing.py")
    MODULE_.write_text(MODULE_.read_text() + HOSTILE)
    assert main(["-q", "generate", "--out", "gen2"]) == Exit.OK
    Path("kvgen.toml").write_text('out = "gen2"\n')
    assert main(["-q", "generate", "--check"]) == Exit.OK
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    assert out.startswith("src/gen/toy/sizing.py:1:1: KV403 ")


@pytest.mark.usefixtures("repo")
def test_lint_also_lints_the_default_spec_directory(capsys):
    # A broken spec stays in schema/families while `specs` points at an empty folder.
    SPEC.write_text(TOY.replace("tokens_per_block: 32", "tokens_per_block: 0"))
    Path("schema/empty").mkdir()
    Path("kvgen.toml").write_text('specs = "schema/empty"\n')
    capsys.readouterr()
    assert main(["lint"]) == Exit.FINDINGS
    assert capsys.readouterr().out.startswith("schema/families/toy.yaml:3:")


@pytest.mark.usefixtures("repo")
def test_the_old_output_folder_replaced_by_a_link_is_a_finding(capsys):
    # generated/ -> gen2 would make the old place look up to date; it is never followed.
    assert main(["-q", "generate", "--out", "gen2"]) == Exit.OK
    shutil.rmtree("generated")
    Path("generated").symlink_to("gen2")
    Path("kvgen.toml").write_text('out = "gen2"\n')
    capsys.readouterr()
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == Exit.FINDINGS
    assert out.startswith("generated:1:1: KV020 ")
    assert main(["generate", "--check"]) == Exit.FINDINGS
    assert capsys.readouterr().out.startswith("generated:1:1: KV020 ")
