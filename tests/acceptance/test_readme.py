"""The README's examples are real: its ``>>>`` sessions run against the committed generated
modules, and its `kvgen plan` and `kvgen compare` outputs are what the commands print."""

from __future__ import annotations

import doctest
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def test_readme_python_sessions_run_as_written(monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.syspath_prepend(str(REPO))
    sessions = re.findall(r"```python\n(>>> .*?)```", README.read_text(), re.S)
    assert sessions
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for number, session in enumerate(sessions):
        test = doctest.DocTestParser().get_doctest(session, {}, f"README[{number}]", None, 0)
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_readme_plan_example_is_the_commands_output():
    text = README.read_text()
    block = re.search(
        r"```console\n\$ (kvgen plan llama3 llama3_1_8b [^\n]*)\n(.*?)```", text, re.S
    )
    assert block is not None
    command, shown = block.group(1), block.group(2)
    args = command.split()[1:]
    result = subprocess.run(
        [sys.executable, "-m", "kvgen", "-q", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout == shown


def test_readme_compare_tables_are_the_commands_output():
    # Each region names its command; the region is exactly what the command prints.
    regions = re.findall(
        r"<!-- compare:begin (kvgen compare [^\n]*?) -->\n(.*?)<!-- compare:end -->",
        README.read_text(),
        re.S,
    )
    assert len(regions) >= 2
    for command, shown in regions:
        result = subprocess.run(
            [sys.executable, "-m", "kvgen", "-q", *command.split()[1:]],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        assert result.stdout == shown, command
