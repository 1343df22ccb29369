"""``kvgen completion SHELL`` (issue 23): scripts that the shells accept and that complete
commands, flags and choices as the parser defines them. Each shell runs the script for real
when it is installed (bash always is where the tests run; zsh and fish are skipped without)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from kvgen._cli.completion import SHELLS
from kvgen._cli.main import main


def _script(capsys, shell: str) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def _run(shell: str, *args: str, timeout: float = 60) -> str:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    result = subprocess.run([shell, *args], capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr
    return result.stdout


BASH_CASES = [
    # words typed so far (the last is being completed) -> what TAB offers
    (["kvgen", "pl"], "plan"),
    (["kvgen", "-q", "li"], "lint"),
    (["kvgen", "co"], "compare completion"),
    (["kvgen", "lint", "--se"], "--select"),
    (["kvgen", "lint", "--ext"], "--extend-select"),
    (["kvgen", "lint", "--format", ""], "text json github sarif"),
    (["kvgen", "plan", "f", "m", "--semantics", "e"], "exact"),
    (["kvgen", "completion", "z"], "zsh"),
    (["kvgen", "diff", "--trust"], "--trust-committed-modules"),
]


def test_bash_completes_commands_flags_and_choices(tmp_path, capsys):
    script = tmp_path / "kvgen.bash"
    script.write_text(_script(capsys, "bash"))
    lines = [f"source {script}", "c() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1));"
             ' COMPREPLY=(); _kvgen; echo "${COMPREPLY[*]}"; }']  # fmt: skip
    lines += ["c " + " ".join(f"'{word}'" for word in words) for words, _ in BASH_CASES]
    lines.append("complete -p kvgen")
    out = _run("bash", "--norc", "-c", "\n".join(lines)).splitlines()
    assert out[: len(BASH_CASES)] == [expected for _, expected in BASH_CASES]
    assert out[-1] == "complete -o default -F _kvgen kvgen"  # files where nothing else fits


def test_zsh_accepts_the_script_and_registers_the_completion(tmp_path, capsys):
    script = tmp_path / "_kvgen"
    script.write_text(_script(capsys, "zsh"))
    _run("zsh", "-n", str(script))
    out = _run(
        "zsh", "-f", "-c",
        f"autoload -U compinit; compinit -u -d {tmp_path}/zcd; source {script};"
        " print -r -- ${_comps[kvgen]}",
    )  # fmt: skip
    assert out == "_kvgen\n"


ZSH_DRIVER = """\
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z 'PS1="> "; fpath=(FPATH $fpath); autoload -U compinit; compinit -u -d FPATH/zcd'
zpty -w z 'kvgen() {}'
zpty -n -w z TYPED$'\\t'
zpty -r z out '*EXPECTED*' && print -r -- matched
zpty -d z
"""


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("kvgen pl", "kvgen plan"),
        ("kvgen lint --form", "kvgen lint --format"),
        ("kvgen lint --format s", "kvgen lint --format sarif"),
        ("kvgen completion f", "kvgen completion fish"),
    ],
)
def test_zsh_completes_commands_flags_and_choices(tmp_path, capsys, typed, expected):
    """TAB pressed in an interactive zsh on a pseudo-terminal (zsh/zpty)."""
    (tmp_path / "_kvgen").write_text(_script(capsys, "zsh"))
    driver = tmp_path / "driver.zsh"
    text = ZSH_DRIVER.replace("FPATH", str(tmp_path)).replace("EXPECTED", expected)
    driver.write_text(text.replace("TYPED", repr(typed)))
    assert _run("zsh", "-f", str(driver), timeout=30) == "matched\n"  # the line, completed


def test_fish_completes_commands_flags_and_choices(tmp_path, capsys):
    script = tmp_path / "kvgen.fish"
    script.write_text(_script(capsys, "fish"))
    _run("fish", "--no-execute", str(script))
    out = _run(
        "fish", "--no-config", "-c",
        f"source {script}; complete -C 'kvgen pl'; complete -C 'kvgen lint --format s';"
        " complete -C 'kvgen completion '",
    )  # fmt: skip
    assert out.splitlines() == [
        "plan\tplan KV-cache capacity for one model and GPU budget",
        "sarif\toutput format",
        "bash",
        "fish",
        "zsh",
    ]


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_every_command_and_flag_is_in_every_script(capsys, shell):
    from kvgen._cli.main import COMMANDS, build_parser

    text = _script(capsys, shell)
    parser = build_parser(project=False)
    subparsers = next(a for a in parser._actions if a.dest == "command")
    for name in COMMANDS:
        assert name in text
        for action in subparsers.choices[name]._actions:
            for flag in action.option_strings:
                bare = flag.lstrip("-")
                assert bare in text, (shell, name, flag)
