"""Issue 18, the file-access findings: what a pull request can commit (links, FIFOs, devices,
a full disk, ``out = "."``) never makes `kvgen lint` / `kvgen generate` read or write outside
the checkout, crash, hang, or pass. Each test failed on 54a882f (the finding is named)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kvgen._cli.main import main

from tests.generated.test_generate import SPEC, snapshot

SECRET = "extraheader = AUTHORIZATION: basic c2VjcmV0"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A checkout: .git (holding a CI token, as actions/checkout leaves it), one spec, its
    generated tree, as the cwd."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text(f'[http "https://github.com/"]\n\t{SECRET}\n')
    families = tmp_path / "schema" / "families"
    families.mkdir(parents=True)
    (families / "toy.yaml").write_text(SPEC)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'adopter'\n")
    monkeypatch.chdir(tmp_path)
    assert main(["-q", "generate"]) == 0
    return tmp_path


def run(*args: str) -> tuple[int, str, str]:
    """kvgen in a child process with a time limit: a hang or an OOM is a failure, not a stall."""
    done = subprocess.run(
        [sys.executable, "-m", "kvgen", *args], capture_output=True, text=True, timeout=60
    )
    return done.returncode, done.stdout, done.stderr


def no_crash(err: str) -> None:
    assert "internal error" not in err and "Traceback" not in err, err


# --- #1: a spec replaced by a link, its generated folder deleted ------------------------------


@pytest.mark.parametrize("target", ["/dev/null", "../elsewhere.yaml"])
def test_a_spec_replaced_by_a_link_fails_lint_and_generate_check(project, target):
    spec = project / "schema/families/toy.yaml"
    if not target.startswith("/"):
        (project / "schema/elsewhere.yaml").write_text(SPEC)
    spec.unlink()
    spec.symlink_to(target)
    subprocess.run(["rm", "-r", str(project / "generated/toy")], check=True)
    for command in (["lint"], ["generate", "--check"]):
        code, out, err = run(*command)
        no_crash(err)
        # A plain delete exits 1 (the orphaned __init__ entry / the missing family); a link
        # must not look cleaner than that.
        assert code == 1, (command, out, err)
        assert "schema/families/toy.yaml:1:1: KV020 is a symbolic link" in out, command


def test_a_linked_spec_directory_is_refused(project):
    real = project / "specs-real"
    (project / "schema/families").rename(real)
    (project / "schema/families").symlink_to(real)
    code, out, err = run("lint")
    no_crash(err)
    assert code == 1 and "schema/families:1:1: KV020" in out


# --- #3: generate --check follows a committed link in generated/ ------------------------------


def test_check_never_prints_a_file_a_generated_link_points_at(project):
    sizing = project / "generated/toy/sizing.py"
    sizing.unlink()
    sizing.symlink_to("../../.git/config")
    code, out, err = run("generate", "--check")
    no_crash(err)
    assert code == 1
    assert SECRET not in out and SECRET not in err
    assert "generated/toy/sizing.py:1:1: KV020" in out


def test_a_generated_link_to_dev_zero_is_refused_not_read(project):
    sizing = project / "generated/toy/sizing.py"
    sizing.unlink()
    sizing.symlink_to("/dev/zero")
    code, out, err = run("generate", "--check")
    no_crash(err)
    assert code == 1 and "KV020" in out


def test_a_fifo_in_generated_never_blocks_check(project):
    sizing = project / "generated/toy/sizing.py"
    sizing.unlink()
    os.mkfifo(sizing)
    code, out, err = run("generate", "--check")
    no_crash(err)
    assert code == 1 and "generated/toy/sizing.py:1:1: KV021" in out


# --- #4: generate writes outside the project through links -----------------------------------


def test_a_linked_family_folder_is_refused_and_its_target_untouched(project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "sizing.py").write_text("# the owner's file\n")
    subprocess.run(["rm", "-r", str(project / "generated/toy")], check=True)
    (project / "generated/toy").symlink_to(outside)
    before = snapshot(outside)
    code, out, err = run("generate")
    no_crash(err)
    assert code == 1 and "generated/toy:1:1: KV020" in out
    assert snapshot(outside) == before
    assert (project / "generated/toy").is_symlink()  # generated/ is unchanged too


def test_a_linked_output_directory_is_refused_and_nothing_written_beside_it(
    project, tmp_path_factory
):
    outside = tmp_path_factory.mktemp("outside")
    subprocess.run(["rm", "-r", str(project / "generated")], check=True)
    (project / "generated").symlink_to(outside / "tree")
    code, out, err = run("generate")
    no_crash(err)
    assert code == 1 and "generated:1:1: KV020" in out
    assert list(outside.iterdir()) == []  # no tree, no lock beside the target


# --- #12: a full disk or a read-only generated/ ------------------------------------------------


def _drift(project: Path) -> dict[str, bytes]:
    before = snapshot(project / "generated")
    (project / "schema/families/toy.yaml").write_text(SPEC.replace("window: 256", "window: 512"))
    return before


def test_disk_full_is_kv023_and_leaves_no_staging_directory(project, monkeypatch, capsys):
    from kvgen._generate import writer

    before = _drift(project)
    real_open = open

    class Full:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    # The writer's one call that creates a staged file; every other open is the real one.
    monkeypatch.setattr(writer, "open", lambda *a, **k: Full(real_open(*a, **k)), raising=False)
    assert main(["generate"]) == 2
    out, err = capsys.readouterr()
    assert "generated:1:1: KV023 cannot write" in out and "No space left on device" in out
    assert "internal error" not in err
    assert snapshot(project / "generated") == before
    assert sorted(p.name for p in project.iterdir() if ".kvgen" in p.name) == [
        ".generated.kvgen.lock"
    ]  # no .generated.kvgen-stage left for the next run


def test_a_read_only_output_is_kv023_not_an_internal_error(project, monkeypatch, capsys):
    from kvgen._generate import writer

    before = _drift(project)

    def read_only(*args):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(project / "generated"))

    monkeypatch.setattr(writer, "_exchange", read_only)
    monkeypatch.setattr(writer.os, "rename", read_only)
    assert main(["generate"]) == 2
    out, err = capsys.readouterr()
    assert "KV023" in out and "Read-only file system" in out and "internal error" not in err
    assert snapshot(project / "generated") == before
    assert not (project / ".generated.kvgen-stage").exists()


# --- #14: the project root as the output ----------------------------------------------------


@pytest.mark.parametrize("out", [".", ""])
def test_out_at_the_project_root_is_refused_with_its_position(project, out):
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "a"\n\n[tool.kvgen]\nout = "{out}"\n'
    )
    before = snapshot(project / "schema")
    code, _out, err = run("generate")
    no_crash(err)
    assert code == 2 and f"pyproject.toml:5:1: out = '{out}' is the project root" in err
    assert snapshot(project / "schema") == before
    assert not (project.parent / f".{project.name}.kvgen-stage").exists()


@pytest.mark.parametrize("out", [".", ".."])
def test_generate_out_flag_at_or_above_the_root_is_refused(project, out):
    code, stdout, err = run("generate", "--out", out)
    no_crash(err)
    assert code == 1 and "KV022" in stdout
    assert not any(p.name.endswith(".kvgen-stage") for p in project.parent.iterdir())


# --- #9: read whole before the size check ---------------------------------------------------


def test_lint_of_a_link_to_dev_zero_is_refused_at_once(project):
    (project / "schema/families/zero.yaml").symlink_to("/dev/zero")
    code, out, err = run("lint")
    no_crash(err)
    assert code == 1 and "schema/families/zero.yaml:1:1: KV020" in out


def test_lint_of_a_fifo_spec_never_blocks(project):
    os.mkfifo(project / "schema/families/pipe.yaml")
    code, out, err = run("lint")
    no_crash(err)
    assert code == 1 and "schema/families/pipe.yaml:1:1: KV021" in out


# --- the same rules for the lock and `kvgen schema --check` -----------------------------------


def test_a_committed_link_in_the_locks_place_creates_nothing_outside(project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (project / ".generated.kvgen.lock").unlink()
    (project / ".generated.kvgen.lock").symlink_to(outside / "created-by-kvgen")
    _drift(project)
    code, out, err = run("generate")
    no_crash(err)
    assert code == 1 and ".generated.kvgen.lock:1:1: KV020" in out
    assert list(outside.iterdir()) == []  # O_CREAT through the link would have made the file


def test_schema_check_never_prints_a_file_the_schema_link_points_at(project):
    schema = project / "schema/kvspec.schema.json"
    schema.symlink_to("../.git/config")
    code, out, err = run("schema", "--check")
    no_crash(err)
    assert code == 1 and SECRET not in out and "schema/kvspec.schema.json:1:1: KV020" in out


def test_plan_never_loads_a_generated_module_through_a_link(project):
    sizing = project / "generated/toy/sizing.py"
    sizing.unlink()
    sizing.symlink_to("/dev/zero")  # 54a882f: the import read /dev/zero until memory ran out
    code, _out, err = run("plan", "toy", "toy_small", "--gpu-memory", "1GiB")
    no_crash(err)
    assert code == 2 and "generated/toy/sizing.py:1:1: KV020" in err
