"""What the CLI tests of ``kvgen plan`` share: the repository as the working directory (the
shipped specs and generated modules) and one way to run the CLI and read its exit code."""

from __future__ import annotations

from pathlib import Path

import pytest
from kvgen._cli.main import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch):
    monkeypatch.chdir(REPO)


def run(capsys, *argv):
    """(exit code, stdout, stderr) of ``kvgen -q ARGV``; argparse's usage errors included."""
    try:
        code = main(["-q", *argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err
