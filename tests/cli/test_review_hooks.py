"""The pre-commit hooks and the CI example in docs/review.md call commands that exist."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml
from kvgen._cli.main import build_parser

REPO = Path(__file__).resolve().parents[2]


def hooks() -> dict[str, dict]:
    data = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    return {hook["id"]: hook for hook in data}


def test_lint_hook_runs_on_the_spec_directory_when_a_spec_or_the_config_changes():
    hook = hooks()["kvgen-lint"]
    assert hook["entry"] == "kvgen lint"
    assert hook["language"] == "python"
    # The whole directory, never one file: two specs of one family are KV010 (issue 32).
    assert hook["pass_filenames"] is False and "types" not in hook
    files = re.compile(hook["files"])
    assert files.search("schema/families/gemma3.yaml")
    assert files.search("schema/families/llama3.yml")
    assert files.search("pyproject.toml") and files.search("kvgen.toml")
    assert not files.search("README.md")
    assert not files.search("tests/fixtures/specs/gemma3.yaml")
    assert not files.search("sub/pyproject.toml")


def test_generate_check_hook_runs_once_without_file_names():
    hook = hooks()["kvgen-generate-check"]
    assert hook["entry"] == "kvgen generate --check"
    assert hook["pass_filenames"] is False


def test_hook_entries_parse_as_kvgen_commands():
    parser = build_parser()
    for hook in hooks().values():
        argv = shlex.split(hook["entry"])
        assert argv[0] == "kvgen"
        assert parser.parse_args(argv[1:]).func is not None


def test_documented_ci_example_uses_existing_commands_and_flags():
    review = (REPO / "docs" / "review.md").read_text()
    region = review.split("<!-- review:begin -->")[1].split("<!-- review:end -->")[0]
    workflow = yaml.safe_load(
        region.split("\n## GitHub Actions\n")[1].split("```yaml\n")[1].split("```")[0]
    )
    runs = [step["run"] for step in workflow["jobs"]["specs"]["steps"] if "run" in step]
    commands = [
        shlex.split(line, comments=True)
        for run in runs
        for line in run.splitlines()
        if line.startswith("kvgen ")
    ]
    commands = [argv[: next((i for i, a in enumerate(argv) if a in (">", "||")), len(argv))]
                for argv in commands]  # fmt: skip
    assert ["kvgen", "lint", "--format", "github"] in commands
    assert ["kvgen", "diff", "--format", "github"] in commands
    parser = build_parser()
    for argv in commands:
        assert parser.parse_args(argv[1:]).func is not None
