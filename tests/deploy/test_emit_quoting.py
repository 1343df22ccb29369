"""``plan --emit``'s three forms carry any value unchanged (issue 29, L1): ``--format args``
quotes with a real shell quoter, ``yaml`` and ``json`` are data.

On c2a37ec ``args`` wrapped a value in single quotes without escaping a quote inside it, and
left ``$(...)``, backticks, ``;`` and a newline unquoted: ``'{"model":"x'$(id)'"}'`` ran ``id``.
Today's launches hold no such value (kvgen writes them from its own tables), so these tests
build a launch with them directly. The shell is the judge: the rendered flags go to ``sh`` and
come back byte for byte, nothing in them runs.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess

import pytest
import yaml
from kvgen._deploy.emit import Launch, render

HOSTILE = [
    "it's", "'", "''", "$(echo INJECTED)", "`echo INJECTED`", "a; echo INJECTED", "a && b",
    "line\nbreak", "tab\there", "back\\slash", "\\", '"', "$HOME", "${HOME}", "*", "?", "~",
    "#comment", "a|b", "a>b", "<x", "!", "-", "--flag", " lead", "trail ", "", "a\\\nb",
    "é ü 漢", "\u2028", "{}", "[1, 2]", "x=y", "%s",
]  # fmt: skip


def launch(fields: dict) -> Launch:
    return Launch("vllm", "0.33.0", "vllm.engine.arg_utils.EngineArgs", fields, {}, [])


def fields() -> dict:
    out: dict = {f"field_{i}": value for i, value in enumerate(HOSTILE)}
    out["nested_config"] = {"model": "x'$(echo INJECTED)`echo INJECTED`;\n", "n": 3}
    out["number"] = 7
    out["fraction"] = 0.9
    out["flag"] = True
    return out


def expected_argv(data: dict) -> list[str]:
    """What the engine's argument parser must receive: each flag, then its value as text (a
    table as compact JSON), a true field as the flag alone."""
    argv: list[str] = []
    for name, value in data.items():
        argv.append(f"--{name.replace('_', '-')}")
        if value is True:
            continue
        if isinstance(value, dict):
            value = json.dumps(value, separators=(",", ":"), sort_keys=True)
        argv.append(str(value))
    return argv


@pytest.mark.parametrize("value", HOSTILE)
def test_one_value_round_trips_through_shlex(value):
    text = render(launch({"x": value}), "args")
    assert text.startswith("  --x ")
    assert shlex.split(text) == ["--x", value]


@pytest.mark.skipif(shutil.which("sh") is None, reason="no POSIX shell")
def test_every_value_round_trips_through_the_shell_and_nothing_runs():
    data = fields()
    text = render(launch(data), "args")
    # sh reads the flags as the launch command would (the line continuations join them into
    # one command) and prints each word it got, NUL-separated.
    done = subprocess.run(["sh", "-c", "printf '%s\\0' \\\n" + text], capture_output=True)
    assert done.returncode == 0, done.stderr
    words = done.stdout.decode("utf-8").split("\0")[:-1]
    assert words == expected_argv(data)
    assert b"INJECTED" not in done.stdout.replace(b"echo INJECTED", b"")  # nothing ran


def test_every_value_round_trips_through_yaml():
    data = fields()
    assert yaml.safe_load(render(launch(data), "yaml")) == data


def test_every_value_round_trips_through_strict_json():
    data = fields()

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    loaded = json.loads(render(launch(data), "json"), parse_constant=refuse)
    assert loaded["fields"] == data


def test_plain_values_stay_unquoted():
    # What today's launches hold: numbers, names, a JSON table (quoted for its braces).
    text = render(launch({"block_size": 16, "kv_cache_dtype": "fp8_e4m3",
                          "speculative_config": {"method": "eagle3", "n": 3}}), "args")  # fmt: skip
    assert text == (
        "  --block-size 16 \\\n  --kv-cache-dtype fp8_e4m3 \\\n"
        '  --speculative-config \'{"method":"eagle3","n":3}\'\n'
    )
