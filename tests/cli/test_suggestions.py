"""Every name a user types gets a "did you mean" when it is close to a real one (issue 11):
spec keys (tests/rules/test_schema_wording.py), rule codes (tests/rules/test_lint_rules.py),
and here the family, model and profile of ``kvgen plan`` and the spec paths of ``kvgen diff``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kvgen._util.suggest import closest, did_you_mean

REPO = Path(__file__).resolve().parents[2]


def _kvgen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kvgen", "-q", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )


def test_closest_is_case_insensitive_and_returns_the_choice_as_spelled():
    assert closest("LLAMA3", ["llama3", "mistral"]) == "llama3"
    assert closest("zzz", ["llama3", "mistral"]) is None
    assert did_you_mean("tokens_per_blok", ["tokens_per_block"]) == (
        " (did you mean 'tokens_per_block'?)"
    )
    assert did_you_mean("zzz", ["tokens_per_block"]) == ""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("llama33", "llama3_1_8b"), "(did you mean 'llama3'?)"),
        (("llama3", "llama3_1_8bb"), "(did you mean 'llama3_1_8b'?)"),
        (("llama3", "llama3_1_8b", "--speculative", "eagle4"), "(did you mean 'eagle3'?)"),
    ],
)
def test_plan_suggests_the_family_model_or_profile_meant(args, expected):
    result = _kvgen("plan", *args, "--gpu-memory", "80GiB")
    assert result.returncode == 2
    assert expected in result.stderr


def test_diff_suggests_the_spec_file_meant():
    result = _kvgen("diff", "--against", "HEAD", "schema/families/llama4.yaml")
    assert result.returncode == 2
    assert "(did you mean 'schema/families/llama3.yaml'?)" in result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # issue 23: a misspelt command, flag or choice names the one meant (argparse alone
        # printed the whole list of choices, or nothing, for these).
        (("plna",), "invalid choice: 'plna' (did you mean 'plan'?)"),
        (("lnit",), "(did you mean 'lint'?)"),
        (("lint", "--strcit"), "unrecognized arguments: --strcit (did you mean '--strict'?)"),
        (("lint", "--format", "jsno"), "invalid choice: 'jsno' (did you mean 'json'?)"),
        (("plan", "llama3", "llama3_1_8b", "--gpu-memroy=80GiB"), "(did you mean '--gpu-memory'?)"),
        (("completion", "bsh"), "(did you mean 'bash'?)"),
    ],
)
def test_a_misspelt_command_flag_or_choice_names_the_one_meant(args, expected):
    result = _kvgen(*args)
    assert result.returncode == 2
    assert expected in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unrecognised_word_with_nothing_near_lists_the_choices():
    result = _kvgen("zzzzzz")
    assert result.returncode == 2
    assert "invalid choice: 'zzzzzz' (choose from compare, completion, diff," in result.stderr
