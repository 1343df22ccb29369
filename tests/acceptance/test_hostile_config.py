"""Hostile configuration and deployment files (issue 29: D1, D2, C1, C5, W3).

In pull-request CI ``pyproject.toml`` and ``kvgen.toml`` are pull-request content, and a
deployment file is whatever the user was handed. Every command reads the configuration first,
so whatever it holds (up to its 1 MiB read bound, ``MAX_CONFIG_BYTES``) kvgen answers quickly
with a positioned usage error or goes on: never a hang, a traceback or an internal error.

Each regex or scanner over these files is fed its adversarial input at the read bound under a
time limit of 1 s (``within``): a linear pass over 1 MiB takes milliseconds, where the regexes
of c2a37ec took minutes to hours (issue 29 measured 1.7 h for D1 and a cubic D2).
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kvgen._cli import main
from kvgen._config import MAX_CONFIG_BYTES, has_kvgen_table
from kvgen._deploy.deployment import MAX_DEPLOYMENT_BYTES
from kvgen._exits import Exit, UsageError

LIMIT_S = 1.0
BOUND = MAX_CONFIG_BYTES  # 1 MiB: the largest configuration kvgen reads
assert MAX_DEPLOYMENT_BYTES == BOUND


class TooSlow(Exception):
    pass


@contextlib.contextmanager
def within(seconds: float = LIMIT_S) -> Iterator[None]:
    """Fail a block that runs past ``seconds`` (SIGALRM interrupts a running regex too)."""

    def alarm(signum, frame):
        raise TooSlow(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.perf_counter()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.perf_counter() - started < seconds


def at_bound(head: str, filler: str, tail: str) -> str:
    """``head`` + ``filler`` repeated + ``tail``: exactly ``BOUND`` bytes (ASCII)."""
    room = BOUND - len(head) - len(tail)
    text = head + (filler * (room // len(filler) + 1))[:room] + tail
    assert len(text.encode()) == BOUND, len(text.encode())
    return text


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty project (a repository root) as cwd: the configuration is all there is."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "schema" / "families").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    with within():
        code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_within_catches_a_slow_block():
    with pytest.raises(TooSlow), within(0.05):
        time.sleep(1)


# --- D1: the [tool.kvgen] search over pyproject.toml ---------------------------------------


@pytest.mark.parametrize(
    "filler",
    [
        "\n",  # c2a37ec: `^\s*` crossed newlines from every line start (1.7 h at this size)
        " \n",
        "[ tool . \n",  # a header that never closes, on every line
        "\t",
    ],
)
def test_the_kvgen_table_search_is_linear_at_the_bound(filler):
    raw = at_bound("", filler, "\n").encode()
    with within():
        assert has_kvgen_table(raw) is False


def test_every_command_reads_a_pyproject_of_newlines_quickly(project, capsys):
    Path("pyproject.toml").write_text(at_bound("", "\n", ""))
    code, _, err = run(capsys, "lint")
    assert code == Exit.OK, err  # no kvgen table: the built-in defaults, an empty spec dir


# --- D2: the error position in a configuration or deployment file --------------------------


def test_an_unknown_key_after_a_line_of_spaces_is_positioned_quickly(project, capsys):
    # c2a37ec: (\s*)([... ]+?)\s*= on the blank line was cubic (4,000 spaces: 123 s).
    Path("kvgen.toml").write_text(at_bound('specs = "s"\n', " ", "\nspecz = 1\n"))
    code, _, err = run(capsys, "lint")
    assert code == Exit.USAGE
    assert err.startswith("kvgen: error: kvgen.toml:3:1: unknown key 'specz' in the top level")


def test_a_header_that_never_closes_inside_a_string_is_positioned_quickly(project, capsys):
    # Line 2, inside a multi-line string, looks like an unclosed header `[` + blanks to a
    # scanner that reads lines without TOML's strings; the unknown key is on line 4.
    head = 'schema = """\n['
    Path("kvgen.toml").write_text(at_bound(head, " ", '\n"""\nspecz = 1\n'))
    code, _, err = run(capsys, "lint")
    assert code == Exit.USAGE
    assert err.startswith("kvgen: error: kvgen.toml:4:1: unknown key 'specz'")


def test_a_deployment_error_after_a_line_of_spaces_is_positioned_quickly(tmp_path):
    from kvgen._deploy.deployment import read

    path = tmp_path / "deploy.toml"
    head = 'gpu = "H100-80GB"\n[models.a]\nfamily = "llama3"\nmodel = "m"\nengine = "vllm"\n'
    path.write_text(at_bound(head, " ", "\ntp_sise = 2\n"))
    with within(), pytest.raises(UsageError) as caught:
        read(path)
    assert str(caught.value).endswith(
        ":7:1: unknown key 'tp_sise' in [models.a] (did you mean 'tp_size'?)"
    )


@pytest.mark.parametrize("filler", [" ", "1", "1_", "a", " \t"])
def test_a_gpu_memory_value_at_the_bound_is_refused_quickly(project, capsys, filler):
    # c2a37ec: `\s*([a-zA-Z]*)\s*$` of the size pattern was quadratic in a blank run.
    head = '[deployment]\ngpu_memory = "1'
    Path("kvgen.toml").write_text(at_bound(head, filler, '!"\n'))
    code, _, err = run(capsys, "lint")
    assert code == Exit.USAGE
    assert err.startswith("kvgen: error: kvgen.toml:2:1: gpu_memory: invalid size '1")
    assert len(err) < 400  # the value is shown shortened, not 1 MiB of it


def test_invalid_toml_at_the_end_of_the_bound_is_positioned_quickly(project, capsys):
    Path("kvgen.toml").write_text(at_bound("", "# a comment\n", "\nx = =\n"))
    code, _, err = run(capsys, "lint")
    assert code == Exit.USAGE
    assert ": invalid TOML: Invalid value" in err
