"""Hostile configuration and deployment files (issue 29: D1, D2, C1, C5, W3).

In pull-request CI ``pyproject.toml`` and ``kvgen.toml`` are pull-request content, and a
deployment file is whatever the user was handed. Every command reads the configuration first,
so whatever it holds (up to its 1 MiB read bound, ``MAX_CONFIG_BYTES``) kvgen answers quickly
with a positioned usage error or goes on: never a hang, a traceback or an internal error.

Each regex or scanner over these files is fed its adversarial input at the read bound under a
time limit of 1 s (``within``): a linear pass over 1 MiB takes milliseconds, where the regexes
of c2a37ec took minutes to hours (issue 29 measured 1.7 h for D1 and a cubic D2). Whole commands
on the same inputs run under ``HANG_S`` instead: they also import their modules and let tomllib
parse the file (linear, but a Python loop per character of a string: 0.3 s per MiB).
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kvgen._cli.main import main
from kvgen._deploy.deployment import MAX_DEPLOYMENT_BYTES
from kvgen._generate.config import MAX_CONFIG_BYTES, has_kvgen_table
from kvgen._util.exits import Exit, UsageError

LIMIT_S = 1.0  # a regex or scanner over a file at its read bound
HANG_S = 10.0  # a whole command on such a file (imports and tomllib included)
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
    """``kvgen ARGV`` under ``HANG_S``."""
    with within(HANG_S):
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


@pytest.mark.parametrize(
    ("head", "filler", "tail", "expected"),
    [
        ("[tool.kvgen]\n", " ", "\nspecz = 1\n", (3, 1)),  # c2a37ec: cubic in the blanks
        ("[tool.kvgen]\n", "\t ", "=\nspecz = 1\n", (3, 1)),
        ("[", " ", "\n[tool.kvgen]\nspecz = 1\n", (3, 1)),  # a header that never closes
        ("[tool.kvgen]\n", "a ", "\nspecz = 1\n", (3, 1)),  # a key that never gets its "="
        # 1 MiB of lines: the header line, then BOUND - 13 - 10 newlines (the header is 13
        # characters with its newline, the key line 10), so the key is on line BOUND - 21.
        ("[tool.kvgen]\n", "\n", "specz = 1\n", (BOUND - 21, 1)),
    ],
)
def test_the_error_position_scan_is_linear_at_the_bound(head, filler, tail, expected):
    from kvgen._util.toml import header_line, position

    text = at_bound(head, filler, tail)
    with within():
        assert position(text, "specz", "tool.kvgen") == expected
    with within():
        assert header_line(text, "nothing") == 1


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


@pytest.mark.parametrize("filler", [" ", "1", "1_", "a", " \t", "_1"])
def test_the_size_parser_is_linear_at_the_bound(filler):
    from kvgen._util.units import parse_size_with_unit

    with within(), pytest.raises(ValueError, match=r"^invalid size '1"):
        parse_size_with_unit(at_bound("1", filler, "!"))


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


# --- C1: nesting in pyproject.toml / kvgen.toml --------------------------------------------

# Every command that reads the configuration, with arguments that parse (the configuration is
# read before the command runs, and its error is reported once, exit 2).
COMMANDS = [
    ["lint"],
    ["generate"],
    ["generate", "--check"],
    ["diff", "--against", "HEAD"],
    ["plan", "llama3", "llama3_1_8b", "--gpu-memory", "40GiB"],
    ["compare", "llama3", "llama3_1_8b", "--gpu-memory", "40GiB"],
    ["import-hf", "config.json"],
    ["schema", "--check"],
    ["init"],
]
# The 33rd "[" of `x = [[[...` crosses MAX_TOML_DEPTH (32): "x = " is 4 characters, so the
# brackets start at column 5 and the 33rd is at column 5 + 32 = 37.
DEEP_ARRAY = (
    "kvgen.toml",
    at_bound("x = ", "[", ""),
    "kvgen.toml:1:37: arrays or inline tables nest deeper than 32 levels",
)
# Inline tables in another tool's table of a pyproject.toml that has [tool.kvgen]: `x = ` and
# 32 times `{a=` (3 characters) lead to the 33rd "{" at column 5 + 32 * 3 = 101, line 4.
DEEP_INLINE = (
    "pyproject.toml",
    at_bound('[tool.kvgen]\nspecs = "s"\n[tool.other]\nx = ', "{a=", ""),
    "pyproject.toml:4:101: arrays or inline tables nest deeper than 32 levels",
)
# A dotted key of 500,000 parts (tomllib walks it quadratically: 16,000 parts took 6 s).
LONG_KEY = (
    "pyproject.toml",
    at_bound("[tool.kvgen]\n", "a.", "a = 1\n"),
    "pyproject.toml:2:1: a dotted key has more than 32 parts",
)
# The same in a table header, and without "[tool.kvgen]" on any line: only the dotted form
# `kvgen.specs` says the file configures kvgen, and that needs a full parse.
LONG_HEADER = (
    "pyproject.toml",
    at_bound("[tool]\nkvgen.specs = 's'\n[", "b.", "b]\n"),
    "pyproject.toml:3:2: a dotted key has more than 32 parts",
)


@pytest.mark.parametrize(
    "case",
    [DEEP_ARRAY, DEEP_INLINE, LONG_KEY, LONG_HEADER],
    ids=["deep-array", "deep-inline", "long-key", "long-header"],
)
@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_deep_nesting_in_the_configuration_is_a_positioned_usage_error(project, capsys, argv, case):
    name, text, expected = case
    Path(name).write_text(text)
    code, out, err = run(capsys, *argv)
    assert code == Exit.USAGE
    assert err.startswith(f"kvgen: error: {expected}"), err[:300]
    assert "Traceback" not in out + err and "internal error" not in err
    assert sorted(p.name for p in project.iterdir()) == [".git", name, "schema"]  # nothing written


def test_nesting_up_to_the_bound_is_read(project, capsys):
    # 32 levels of arrays and a 32-part dotted key (31 dots) are TOML kvgen reads as before.
    Path("pyproject.toml").write_text(
        "[tool.kvgen]\nspecs = 'schema/families'\n"
        f"[tool.other]\nx = {'[' * 32}{']' * 32}\n{'.'.join(['a'] * 32)} = 1\n"
    )
    code, _, err = run(capsys, "lint")
    assert code == Exit.OK, err


def test_brackets_dots_and_quotes_inside_strings_and_comments_do_not_count(project, capsys):
    many = "[" * 40 + "." * 40 + "{" * 40
    Path("pyproject.toml").write_text(
        f"[tool.kvgen]\nspecs = 'schema/families'  # {many}\n"
        f'[tool.other]\na = "{many}\\"{many}"\nb = \'{many}\'\n'
        f"c = \"\"\"\n{many}\n\"\"{many}\"\"\"\"\"\nd = '''\n{many}\n''{many}'''''\n"
        f'"{many}"."x" = 1\n'
    )
    code, _, err = run(capsys, "lint")
    assert code == Exit.OK, err


@pytest.mark.parametrize(
    "filler",
    [
        '"",',  # strings between brackets: many tokens
        "'',",
        '"""""",',
        "#\n",  # comments
        '"\n',  # strings never closed (invalid TOML: tomllib reports the first)
        "[],",  # brackets that close
        "1.5,",  # floats: one dot each
        "a.",  # one dotted key
        '\\"',  # escapes of a basic string never closed
    ],
)
def test_the_nesting_scan_is_linear_at_the_bound(filler):
    from kvgen._util.toml import nesting

    # Enough brackets and dots before the filler that the fast path cannot answer.
    head = "x = [" + "[1.5]," * 40 + "]\ny = ["
    text = at_bound(head, filler, "")
    with within():
        found = nesting(text)
    assert found is None or found[1].startswith("a dotted key")


@pytest.mark.parametrize(
    ("text", "at"),
    [
        # No "kvgen" anywhere: not kvgen's configuration, but `kvgen init` edits this file.
        (at_bound("[project]\nx = ", "[", ""), "2:37"),
        (at_bound("[project]\n", "a.", "a = 1\n"), "2:1"),
    ],
    ids=["deep-array", "long-key"],
)
def test_init_refuses_a_pyproject_it_cannot_edit_safely_at_its_position(project, capsys, text, at):
    Path("pyproject.toml").write_text(text)
    code, _, err = run(capsys, "init")
    assert code == Exit.USAGE
    assert err.startswith(f"kvgen: error: pyproject.toml:{at}: "), err[:300]
    assert Path("pyproject.toml").read_text() == text
    assert sorted(p.name for p in project.iterdir()) == [".git", "pyproject.toml", "schema"]


# --- W3: deployment files follow the line rule ---------------------------------------------

LS = "\u2028"  # LINE SEPARATOR: TOML allows it in a comment; git does not end a line there
DEPLOYMENT = f"""\
gpu = "H100-80GB"
# node A{LS}reviewed{LS}by{LS}ops

[models.a]
family = "llama3"
model = "llama3_1_8b"
engine = "vllm"
tp_sise = 2
"""


def test_a_line_separator_in_a_deployment_file_is_refused_at_its_real_position(project, capsys):
    # c2a37ec read the file and reported the misspelt key on line 8 as line 11 (splitlines saw
    # the three separators of line 2 as line ends). Now the first separator is refused where
    # git shows it: line 2, after "# node A" (8 characters), column 9.
    Path("deploy.toml").write_text(DEPLOYMENT, encoding="utf-8")
    assert DEPLOYMENT.split("\n")[7] == "tp_sise = 2"  # line 8 as git counts
    code, out, err = run(capsys, "plan", "--deployment", "deploy.toml")
    assert code == Exit.USAGE
    assert out == ""
    assert err.startswith("kvgen: error: deploy.toml:2:9: KV015 U+2028 LINE SEPARATOR")


def test_positions_in_toml_count_lines_by_newline_only():
    # The position helpers of the configuration and deployment readers never split at U+2028,
    # U+2029, U+0085 or a form feed: "b" is on line 2 and [models.a] on line 3 as git counts.
    from kvgen._deploy.deployment import _header_line
    from kvgen._generate.config import _position

    text = f"a = 1 # x{LS}y\u2029z\x85w\x0c\nb = 2\n[models.a]\n"
    assert _position(text, "b", "") == (2, 1)
    assert _header_line(text, "models.a") == 3


# --- C5: kvgen init with a `tool` that is not a table ----------------------------------------


@pytest.mark.parametrize(
    ("text", "what", "at"),
    [
        ("tool = 5\n", "an integer", "1:1"),  # c2a37ec: internal error: TypeError
        ("tool = true\n", "a boolean", "1:1"),
        ("tool = 1979-05-27\n", "a date", "1:1"),
        ("tool = 07:32:00\n", "a time", "1:1"),
        ("tool = 1979-05-27T07:32:00\n", "a date-time", "1:1"),
        ("tool = 1.5\n", "a float", "1:1"),
        ('tool = "x"\n', "a string", "1:1"),
        ('tool = "kvgen"\n', "a string", "1:1"),  # c2a37ec: exit 0, nothing configured
        ('# adopter\n\n  tool = ["kvgen"]\n[project]\nname = "a"\n', "an array", "3:3"),  # same
        ("[[tool]]\nx = 1\n", "an array of tables", "1:1"),
        ("tool = {}\n", "an inline table", "1:1"),
    ],
)
def test_init_refuses_a_tool_that_is_not_a_table_at_its_position(project, capsys, text, what, at):
    Path("pyproject.toml").write_text(text)
    code, out, err = run(capsys, "init")
    assert code == Exit.USAGE
    assert out == ""
    assert err == (
        f"kvgen: error: pyproject.toml:{at}: `tool` is {what}, not a table: kvgen init adds "
        "[tool.kvgen] to the [tool] table (make `tool` a table, or add [tool.kvgen] by hand)\n"
    )
    assert Path("pyproject.toml").read_text() == text  # nothing written, nothing else created
    assert sorted(p.name for p in project.iterdir()) == [".git", "pyproject.toml", "schema"]


def test_init_checks_a_configured_path_at_the_bound_quickly_and_shows_it_shortened(project, capsys):
    # kvgen init checks the configured `specs` with a regex before quoting it into YAML and
    # regexes (the pre-commit hooks): linear, and the refusal does not echo 1 MiB.
    Path("kvgen.toml").write_text(at_bound('specs = "', "a/", '!"\n'))
    from kvgen._cli.commands.init import _RELATIVE

    with within():
        assert _RELATIVE.match(at_bound("", "a/", "!")) is None
    code, out, err = run(capsys, "init")
    assert code == Exit.USAGE and out == ""
    assert err.startswith("kvgen: error: --specs 'a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/'... (")
    assert len(err) < 200
