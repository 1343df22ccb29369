"""docs/security.md, "Commands that run generated code", checked command by command.

A pull request controls ``generated/``. The page sorts kvgen's commands into those that never
import the working tree's generated modules (safe on a pull request's checkout) and those that
do. Here every generated Python file of a committed project gets one planted line that creates a
marker file when the module is imported; each command of the first group runs in its own
process and must leave no marker. ``kvgen plan`` (second group) must create it: that proves the
plant works, so a first-group command that imported the code could not pass unnoticed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.cli_support import REPO
from tests.cli.test_review import repo  # noqa: F401  (the committed toy project)

PLANT = (
    "\nimport os as _kvgen_test_os\n"
    'open(_kvgen_test_os.environ["KVGEN_TEST_MARKER"], "a").close()\n'
)

# A small Llama-shaped config for import-hf (2 layers, 4 query / 2 KV heads of 16).
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "intermediate_size": 128,
    "max_position_embeddings": 4096,
    "vocab_size": 1000,
    "torch_dtype": "bfloat16",
}

# The first group of docs/security.md: never import the working tree's generated modules.
SAFE = {
    "lint": ["lint"],
    "generate --check": ["generate", "--check"],
    "diff": ["diff", "--against", "HEAD"],
    "compare": ["compare", "toy", "toy_a", "--gpu-memory", "40GiB"],
    "explain": ["explain", "KV001"],
    "schema": ["schema"],
    "import-hf": ["import-hf", "config.json", "--family", "imported", "--out", "imported.yaml"],
    "init": ["init"],
    "completion": ["completion", "bash"],
    "engines": ["engines"],
}

# The second group: they import ``generated/<family>/sizing.py`` (run them on reviewed code).
IMPORTING = {
    "plan": ["plan", "toy", "toy_a", "--gpu-memory", "40GiB"],
    "models": ["models"],
}


def _kvgen(args: list[str], marker: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KVGEN_TEST_MARKER": str(marker)}
    return subprocess.run(
        [sys.executable, "-m", "kvgen", "-q", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture
def planted(repo):  # noqa: F811
    files = sorted(Path("generated").rglob("*.py"))
    assert any(p.name == "sizing.py" for p in files)
    for path in files:
        path.write_text(path.read_text() + PLANT)
    Path("config.json").write_text(json.dumps(CONFIG))
    return repo


@pytest.mark.parametrize("name", sorted(SAFE))
def test_a_pull_request_command_imports_no_generated_module(planted, name):
    marker = planted.parent / f"{planted.name}-{name.replace(' ', '_')}-imported"
    done = _kvgen(SAFE[name], marker)
    assert "Traceback" not in done.stderr, done.stderr
    # They ran to the end: generate --check finds the planted lines (exit 1), the rest answer.
    assert done.returncode == (1 if name == "generate --check" else 0), done.stderr
    assert not marker.exists(), f"`kvgen {name}` imported a generated module"


@pytest.mark.parametrize("name", sorted(IMPORTING))
def test_the_importing_commands_run_the_plant_so_it_is_live(planted, name):
    marker = planted.parent / f"{planted.name}-{name}-imported"
    done = _kvgen(IMPORTING[name], marker)
    assert marker.exists(), done.stderr


def _listed(section: str, lead: str) -> set[str]:
    """The commands one bullet of the page's section names (`kvgen NAME` spans)."""
    for line in section.split("\n- "):
        if line.startswith(lead):
            line = line.split("\n\n", 1)[0]
            return set(re.findall(r"`kvgen ([a-z-]+)", line))
    raise AssertionError(f"no bullet starting {lead!r}")


def test_the_page_sorts_every_command_into_exactly_one_group():
    from kvgen._cli.main import build_parser

    page = (REPO / "docs" / "security.md").read_text()
    section = page.split("## Commands that run generated code", 1)[1].split("\n## ", 1)[0]
    safe = _listed(section, "**Never import")
    importing = _listed(section, "**Import `generated")
    commands = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert safe == set(SAFE) - {"generate --check"} | {"generate"}
    assert importing - {"diff"} == set(IMPORTING)  # diff --trust-committed-modules
    assert safe | importing == commands
