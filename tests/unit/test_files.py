"""``kvgen._util.files``, the one file-access layer (issue 18 "one file-access layer"): no link is
followed, only regular files are read or replaced, reads stop at the bound, writes stay where
they are told to and leave nothing behind when they fail."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest
from kvgen._util import files
from kvgen._util.codes import reader as reader_codes


def refusal(call) -> tuple[str, int, int]:
    with pytest.raises(files.Refused) as caught:
        call()
    found = caught.value.diagnostic
    return found.code, found.line, found.col


def test_a_regular_file_is_read(tmp_path):
    (tmp_path / "a.yaml").write_bytes(b"family: x\n")
    assert files.read_bytes(tmp_path / "a.yaml", limit=10, root=tmp_path) == b"family: x\n"


def test_a_link_to_a_file_is_refused_and_never_opened(tmp_path):
    (tmp_path / "secret").write_text("extraheader = AUTHORIZATION: basic abc\n")
    (tmp_path / "a.yaml").symlink_to(tmp_path / "secret")
    assert refusal(lambda: files.read_bytes(tmp_path / "a.yaml", limit=1 << 20)) == (
        "KV020",
        1,
        1,
    )


def test_a_linked_folder_on_the_way_is_refused(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.yaml").write_text("x: 1\n")
    (tmp_path / "schema").symlink_to(tmp_path / "real")
    with pytest.raises(files.Refused) as caught:
        files.read_bytes(tmp_path / "schema" / "a.yaml", limit=100, root=tmp_path)
    assert caught.value.diagnostic.code == "KV020"
    assert "passes through a symbolic link" in caught.value.diagnostic.message
    # Above the root nothing is checked: the user chose where the project lives.
    assert files.read_bytes(tmp_path / "schema" / "a.yaml", limit=100, root=tmp_path / "schema")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_are_not_regular_files(device):
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    assert refusal(lambda: files.read_bytes(device, limit=100)) == ("KV021", 1, 1)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)  # nobody writes: a blocking open would hang forever
    assert refusal(lambda: files.read_bytes(fifo, limit=100)) == ("KV021", 1, 1)


def test_a_directory_is_not_a_regular_file(tmp_path):
    assert refusal(lambda: files.read_bytes(tmp_path, limit=100)) == ("KV021", 1, 1)


def test_reads_stop_at_the_bound(tmp_path, monkeypatch):
    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:
        handle.truncate(1 << 30)  # 1 GiB, sparse: nothing may read it whole
    read: list[int] = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: read.append(n) or real_read(fd, n))
    code = reader_codes.FILE_TOO_LARGE
    assert refusal(lambda: files.read_bytes(big, limit=4 << 20, too_large=code)) == (
        "KV008",
        1,
        1,
    )
    assert read == []  # st_size said it all: not one byte read


def test_a_file_growing_past_the_bound_is_read_only_to_bound_plus_one(tmp_path, monkeypatch):
    path = tmp_path / "a.yaml"
    path.write_bytes(b"x" * 10)
    real_fstat = os.fstat

    class Small:  # st_size as a file that grows after fstat would report it
        def __init__(self, result):
            self._result = result

        def __getattr__(self, name):
            return 0 if name == "st_size" else getattr(self._result, name)

    monkeypatch.setattr(os, "fstat", lambda fd: Small(real_fstat(fd)))
    read: list[int] = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: read.append(n) or real_read(fd, n))
    assert refusal(lambda: files.read_bytes(path, limit=4)) == ("KV024", 1, 1)
    assert sum(read) <= 5  # limit 4 + the one byte that proves there is more


def test_a_write_replaces_a_regular_file_and_creates_folders(tmp_path):
    target = tmp_path / "a" / "b" / "spec.yaml"
    files.write_bytes(target, b"one\n", root=tmp_path)
    files.write_bytes(target, b"two\n", root=tmp_path)
    assert target.read_bytes() == b"two\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["spec.yaml"]


def test_a_write_never_goes_through_a_link(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    (project / "schema").symlink_to(outside)
    with pytest.raises(files.Refused) as caught:
        files.write_bytes(project / "schema" / "x.json", b"{}", root=project)
    assert caught.value.diagnostic.code == "KV020"
    assert list(outside.iterdir()) == []
    (project / "spec.yaml").symlink_to(outside / "target.yaml")
    assert refusal(lambda: files.write_bytes(project / "spec.yaml", b"x", root=project))[0] == (
        "KV020"
    )
    assert list(outside.iterdir()) == []


def test_a_write_never_replaces_a_fifo_or_a_folder(tmp_path):
    fifo = tmp_path / "out.yaml"
    os.mkfifo(fifo)
    assert refusal(lambda: files.write_bytes(fifo, b"x"))[0] == "KV021"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a FIFO, not turned into a file
    assert refusal(lambda: files.write_bytes(tmp_path, b"x"))[0] == "KV021"


def test_a_write_outside_its_folder_is_refused(tmp_path):
    inside = tmp_path / "repo"
    inside.mkdir()
    assert refusal(lambda: files.write_bytes(tmp_path / "x", b"", inside=inside))[0] == "KV022"
    assert refusal(lambda: files.write_bytes(inside, b"", inside=inside))[0] == "KV022"
    assert not (tmp_path / "x").exists()


def test_a_failed_write_is_kv023_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "spec.yaml"
    target.write_bytes(b"old\n")

    def full(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(files.Refused) as caught:
        files.write_bytes(target, b"new\n")
    assert caught.value.diagnostic.code == "KV023"
    assert "No space left on device" in caught.value.diagnostic.message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml"]
    assert target.read_bytes() == b"old\n"


@pytest.mark.parametrize("out", [".", "", "..", "/"])
def test_the_project_root_or_above_is_never_an_output(tmp_path, monkeypatch, out):
    monkeypatch.chdir(tmp_path)
    assert refusal(lambda: files.check_output_dir(Path(out), tmp_path))[0] == "KV022"
    files.check_output_dir(Path("generated"), tmp_path)  # a proper sub-directory is fine
