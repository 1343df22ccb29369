"""Progress on stderr (issue 23): on a terminal only, never under -q, never in a pipe.

`kvgen generate` of the shipped families runs with stderr on a pseudo-terminal (the `pty`
module) and with KVGEN_PROGRESS_AFTER_S=0, so that the line shows however fast the machine is.
"""

from __future__ import annotations

import io
import logging
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from kvgen._util.progress import CLEAR, Progress

REPO = Path(__file__).resolve().parents[2]
FAMILIES = sorted(p.stem for p in (REPO / "schema" / "families").glob("*.yaml"))


def _stderr_on_a_terminal(*argv: str) -> tuple[int, bytes]:
    master, slave = pty.openpty()
    env = {**os.environ, "KVGEN_PROGRESS_AFTER_S": "0", "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kvgen", *argv],
        cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, env=env,
    )  # fmt: skip
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=600), b"".join(chunks)


def test_generate_shows_one_step_per_family_on_a_terminal_then_clears_it():
    code, err = _stderr_on_a_terminal("generate", "--check")
    assert code == 0
    n = len(FAMILIES)
    for i, family in enumerate(FAMILIES, 1):  # families render in name order
        assert f"{CLEAR}kvgen: rendering {i}/{n} {family}".encode() in err
    # The line is cleared before the next log line, which starts at the left margin.
    assert f"{CLEAR}kvgen: generated is up to date".encode() in err


def test_diff_shows_the_specs_read_and_the_families_evaluated():
    code, err = _stderr_on_a_terminal("diff", "--against", "HEAD", "schema/families/llama3.yaml")
    assert code in (0, 1)  # 1 only while the working tree changes llama3's capacity
    assert f"{CLEAR}kvgen: reading specs 1/1 schema/families/llama3.yaml".encode() in err
    assert f"{CLEAR}kvgen: evaluating families 1/1 llama3".encode() in err


def test_plan_plot_shows_one_step_per_curve_then_the_write(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "capacity.png"
    code, err = _stderr_on_a_terminal(
        "plan", "gemma3", "gemma3_27b", "--gpu-memory", "80GiB", "--max-batch-size", "1", "8",
        "--plot", str(png),
    )  # fmt: skip
    assert code == 0 and png.is_file()
    # 2 batch sizes x the profiles of gemma3_27b (at least none), then writing the file.
    steps = err.count(b"kvgen: plotting ")
    assert steps >= 2 + 1
    assert f"plotting {steps}/{steps} writing {png}".encode() in err
    assert b"plotting 1/" in err and b"max_batch_size 1, none" in err


def test_quiet_silences_the_progress_on_a_terminal():
    code, err = _stderr_on_a_terminal("-q", "generate", "--check")
    assert code == 0
    assert err == b""


def test_no_progress_when_stderr_is_not_a_terminal():
    env = {**os.environ, "KVGEN_PROGRESS_AFTER_S": "0"}
    result = subprocess.run(
        [sys.executable, "-m", "kvgen", "generate", "--check"],
        cwd=REPO, capture_output=True, env=env, check=True,
    )  # fmt: skip
    assert b"\r" not in result.stderr and b"rendering 1/" not in result.stderr


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("after", "shown"), [("3600", ""), ("0", "a")])
def test_nothing_shows_before_the_delay(monkeypatch, after, shown):
    monkeypatch.setenv("KVGEN_PROGRESS_AFTER_S", after)
    logger = logging.getLogger("kvgen")
    before = logger.level
    logger.setLevel(logging.INFO)
    try:
        stream = Tty()
        with Progress("rendering", 1, stream=stream) as progress:
            progress.advance("a")
    finally:
        logger.setLevel(before)
    assert stream.getvalue() == (f"{CLEAR}kvgen: rendering 1/1 a{CLEAR}" if shown else "")


@pytest.mark.parametrize(("level", "shown"), [(logging.INFO, True), (logging.ERROR, False)])
def test_progress_follows_the_log_level(monkeypatch, level, shown):
    monkeypatch.setenv("KVGEN_PROGRESS_AFTER_S", "0")
    logger = logging.getLogger("kvgen")
    before = logger.level
    logger.setLevel(level)  # what -q sets (ERROR), or the default (INFO)
    try:
        stream = Tty()
        with Progress("evaluating families", 2, stream=stream) as progress:
            progress.advance("llama3")
    finally:
        logger.setLevel(before)
    expected = f"{CLEAR}kvgen: evaluating families 1/2 llama3{CLEAR}" if shown else ""
    assert stream.getvalue() == expected
