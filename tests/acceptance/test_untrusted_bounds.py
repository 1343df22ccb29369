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
