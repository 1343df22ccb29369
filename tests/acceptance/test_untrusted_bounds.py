"""Issue 29's hostile review, the input side: every finding on reading untrusted files is a test
here, with its adversarial input at the read bound.

- D3: import-hf's nesting scan is linear (a config of ``"`` + ``\\"`` x N at the 4 MiB bound).
- D4: generation is bounded from the spec before anything is rendered (lint refuses it too).
- D5 / W4 / R1 / issue 32: ``--weights`` bounds header bytes across shards, validates headers
  as safetensors does, stays inside the named folder, checks the checkpoint against the spec.
- C2 / C3: nesting depth is a positioned usage error in every TOML and JSON reader.
- C4: lint refuses the cross-attention byte shapes that generate cannot render.

Time limits are on CPU time measured in a child process (the machine is shared: wall time
says little), and the child is killed after a generous wall limit so that a quadratic reader
fails the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def cpu_seconds(setup: str, timed: str, *, wall_limit: float = 60) -> tuple[float, str]:
    """Run ``setup`` then ``timed`` in a fresh interpreter; the CPU seconds ``timed`` took and
    what it printed. Fails when the child outlives ``wall_limit``."""
    program = (
        "import time\n"
        + textwrap.dedent(setup)
        + "\n_started = time.process_time()\n"
        + textwrap.dedent(timed)
        + "\nprint('CPU', time.process_time() - _started)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", program],
            capture_output=True,
            text=True,
            timeout=wall_limit,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running after {wall_limit} s of wall time") from None
    assert done.returncode == 0, done.stderr[-2000:]
    *printed, last = done.stdout.splitlines()
    assert last.startswith("CPU ")
    return float(last.split()[1]), "\n".join(printed)


# ------------------------------------------------------------------ D3: import-hf nesting scan


def test_an_unterminated_string_of_escaped_quotes_at_the_4_mib_bound_is_refused_in_a_second():
    # `"` + `\"` x N: no closing quote. The old string pattern retried at each of the N quotes
    # and scanned to the end each time (N = 40,000 took 87.8 s); the bound admits N = 2 Mi.
    seconds, printed = cpu_seconds(
        """
        from kvgen._importhf import import_config
        from kvgen._importhf._import import MAX_CONFIG_BYTES
        text = '"' + '\\\\"' * ((MAX_CONFIG_BYTES - 1) // 2)
        assert len(text) == MAX_CONFIG_BYTES - 1, len(text)
        """,
        """
        result = import_config("config.json", text)
        print(result.diagnostics[0].code, result.diagnostics[0].message)
        """,
    )
    assert printed.startswith("KV301 invalid JSON: Unterminated string")
    assert seconds < 1.0


def test_the_nesting_scan_is_linear_on_every_string_shape_at_the_bound():
    # Quotes only (2 Mi empty strings), bracket pairs (4 Mi tokens at depth 1), a backslash
    # after each quote: the scan visits each character a bounded number of times.
    seconds, printed = cpu_seconds(
        """
        from kvgen._importhf._json import nesting_too_deep
        from kvgen._importhf._import import MAX_CONFIG_BYTES as B
        texts = ['"' * B, '[]' * (B // 2), '"\\\\' * (B // 2), '"' + 'a' * (B - 1)]
        """,
        """
        for text in texts:
            print(nesting_too_deep(text))
        """,
    )
    assert printed.split() == ["None"] * 4
    assert seconds < 4 * 1.0


def test_a_string_that_closes_still_hides_its_brackets_and_an_open_one_counts_nothing():
    from kvgen._importhf._json import nesting_too_deep

    assert nesting_too_deep('{"a": "' + "[" * 100 + '\\" {{{"}') is None
    # `{"a": "\\"` is 10 characters; the 32nd "[" after it opens depth 33
    assert nesting_too_deep('{"a": "\\\\"' + "[" * 40 + "]" * 40 + "}") == 10 + 31
    assert nesting_too_deep('{"a": "' + "[" * 100) is None  # json.loads refuses it


def test_the_import_hf_command_refuses_the_escaped_quotes_file_with_a_position(tmp_path):
    config = tmp_path / "config.json"
    config.write_text('"' + '\\"' * ((4 << 20) // 2 - 1), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "kvgen", "import-hf", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith(f"{config.as_posix()}:1:1: KV301 invalid JSON: Unterminated")
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    json.dumps(done.stdout)  # text, not bytes


# ------------------------------------------------------------------ C2: deployment TOML nesting


def _deployment(tmp_path: Path, value: str) -> Path:
    path = tmp_path / "node.toml"
    path.write_text(f'gpu = "H100-80GB"\nx = {value}\n', encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("value", "at"),
    [
        ("[" * 2000 + "]" * 2000, (2, 5 + 32)),  # the 33rd "[" (column 5 + 32) opens depth 33
        ("{a = " * 2000 + "1" + "}" * 2000, (2, 5 + 32 * 5)),  # each level is `{a = `
        # strings hide brackets; line 3 is `]]]""", ` (8 characters) and the deep array, one
        # level inside the outer one: its 32nd "[" (column 9 + 31) opens depth 33
        ('["[[[", """\n]]]""", ' + "[" * 2000 + "]" * 2000 + "]", (3, 9 + 31)),
    ],
    ids=["arrays", "inline-tables", "after-strings"],
)
def test_a_deeply_nested_deployment_file_is_a_positioned_usage_error(tmp_path, capsys, value, at):
    from kvgen._cli import main

    path = _deployment(tmp_path, value)
    code = main(["plan", "--deployment", str(path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "internal error" not in err and "RecursionError" not in err
    line, col = at
    assert f"node.toml:{line}:{col}: arrays and inline tables nest deeper than 32 levels" in err


def test_a_deployment_nested_to_the_bound_reaches_the_key_checks(tmp_path, capsys):
    from kvgen._cli import main

    path = _deployment(tmp_path, "[" * 32 + "]" * 32)
    assert main(["plan", "--deployment", str(path)]) == 2
    assert "unknown key 'x' in the top level" in capsys.readouterr().err


def _toml_string(rng) -> str:
    """A TOML string of any of the four kinds, holding brackets, quotes, `#` and escapes."""
    body = "".join(rng.choice(["[", "]", "{", "}", "#", "a", " ", "'", '"']) for _ in range(6))
    kind = rng.randrange(4)
    if kind == 0:
        return '"' + body.replace('"', '\\"') + '"'
    if kind == 1:
        return "'" + body.replace("'", "") + "'"
    if kind == 2:
        return '"""' + body.replace('"', '\\"') + '\n"""'
    return "'''" + body.replace("'", "") + "\n'''"


def _toml_array(rng, depth: int) -> str:
    if depth == 0:
        return _toml_string(rng)
    items = [_toml_array(rng, depth - 1)] + [_toml_string(rng) for _ in range(rng.randrange(2))]
    rng.shuffle(items)
    return "[" + ", ".join(items) + ("  # ]]] {{\n" if rng.random() < 0.3 else "") + "]"


def test_the_toml_scan_agrees_with_tomllib_on_strings_comments_and_depth():
    # Random documents of known depth whose strings and comments hold brackets: tomllib reads
    # each, and the scan finds exactly that depth (too deep at depth - 1, fine at depth).
    import random

    from kvgen._config import tomllib
    from kvgen._nesting import toml_too_deep

    rng = random.Random(29)
    for _ in range(300):
        depth = rng.randrange(1, 8)
        text = f"x = {_toml_array(rng, depth)}\n"
        tomllib.loads(text)  # valid TOML
        assert toml_too_deep(text, depth) is None, text
        assert toml_too_deep(text, depth - 1) is not None, text


def test_the_toml_scan_is_linear_at_the_1_mib_bound():
    # The configuration and deployment bound: unterminated strings of every kind, runs of
    # quotes, brackets at depth 1. (In process: the scan is new, there is no old one to hang.)
    import time

    from kvgen._nesting import toml_too_deep

    size = 1 << 20
    texts = [
        'x = """' + '\\"' * (size // 2),
        'x = """' + '""a' * (size // 3),
        "x = '''" + "''a" * (size // 3),
        'x = "' + '\\"' * (size // 2),
        '"' * size,
        "'" * size,
        "[]" * (size // 2),
        'x = "a\n' * (size // 7),
    ]
    started = time.process_time()
    assert [toml_too_deep(text) for text in texts] == [None] * len(texts)
    assert time.process_time() - started < 1.0
