"""CLI conventions and the project configuration ([tool.kvgen] / kvgen.toml)."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kvgen._cli.main import build_parser, main
from kvgen._generate import config
from kvgen._util.console import colour_findings, use_colour
from kvgen._util.exits import Exit, UsageError

REPO = Path(__file__).resolve().parents[2]
GEMMA3 = REPO / "schema/families/gemma3.yaml"
LLAMA3 = REPO / "schema/families/llama3.yaml"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty git repository as the current directory."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- finding and reading the configuration ------------------------------------------------


def test_config_is_found_by_walking_up_and_paths_are_relative_to_its_directory(project):
    write(project / "pyproject.toml", '[project]\nname = "x"\n\n[tool.kvgen]\nspecs = "specs"\n')
    deep = project / "a" / "b"
    deep.mkdir(parents=True)
    found = config.current(deep)
    assert found.source == project / "pyproject.toml"
    assert found.root == project.resolve()
    assert (found.root / found.specs) == project / "specs"


def test_walk_stops_at_the_repository_root(tmp_path):
    write(tmp_path / "kvgen.toml", 'specs = "outside"\n')
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    assert config.find_config(tmp_path / "repo") is None


def test_pyproject_without_the_table_falls_back_to_kvgen_toml(project):
    write(project / "pyproject.toml", '[project]\nname = "x"\n')
    write(project / "kvgen.toml", 'out = "build/gen"\n[deployment]\ntp_size = 2\n')
    found = config.current(project)
    assert found.source == project / "kvgen.toml"
    assert found.out == Path("build/gen") and found.deployment == {"tp_size": 2}


def test_unknown_key_is_positioned_with_did_you_mean(project):
    write(project / "pyproject.toml", '[project]\nname = "x"\n\n[tool.kvgen]\n  spec = "s"\n')
    with pytest.raises(UsageError) as caught:
        config.current(project)
    assert str(caught.value) == (
        "pyproject.toml:5:3: unknown key 'spec' in [tool.kvgen] (did you mean 'specs'?)"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[deployment]\ntp_size = true\n", "kvgen.toml:2:1: tp_size must be an integer"),
        ("[deployment]\ntp_size = 0\n", "kvgen.toml:2:1: tp_size must be a positive integer"),
        (
            "[deployment]\nmax_batch_size = 9223372036854775808\n",  # 2**63, as the flags refuse
            "kvgen.toml:2:1: max_batch_size must be a positive integer up to 2**63 - 1",
        ),
        ('[deployment]\nsemantics = "exakt"\n', "(did you mean 'exact'?)"),
        ('[deployment]\ngpu_memory = "80 gigs"\n', "kvgen.toml:2:1: gpu_memory: invalid size"),
        # issue 20: a size needs its unit, in the file as on the command line
        ('[deployment]\ngpu_memory = "80"\n', "gpu_memory: size '80' has no unit: did you mean"),
        ('[deployment]\nengine = "vllmm"\n', "kvgen.toml:2:1: engine must be one of trtllm, vllm"),
        ('[deployment]\nengine = "vllm==9"\n', "engine vllm release '9' is not modelled"),
        ('out = "../elsewhere"\n', "kvgen.toml:1:1: out must be a path inside the project"),
        # tomllib stops where the second value ends: line 2, column 12 (`specs = "b"` is 11 wide)
        ('specs = "a"\nspecs = "b"\n', "kvgen.toml:2:12: invalid TOML: Cannot overwrite a value"),
        # issue 18 #14: the root as output would make generate swap the whole project
        ('specs = "s"\nout = "."\n', "kvgen.toml:2:1: out = '.' is the project root"),
        ('out = ""\n', "kvgen.toml:1:1: out = '' is the project root"),
        ('out = "a/.."\n', "kvgen.toml:1:1: out must be a path inside the project"),
    ],
)
def test_bad_values_are_usage_errors(project, capsys, text, message):
    write(project / "kvgen.toml", text)
    assert main(["lint"]) == Exit.USAGE
    assert message in capsys.readouterr().err


# --- every command honours it; flags override it -------------------------------------------


def test_generate_lint_and_plan_follow_the_config_from_a_subdirectory(project, monkeypatch, capsys):
    write(project / "kvgen.toml", 'specs = "specs"\nout = "pkg/kv"\n[deployment]\n'
          'gpu_memory = "16GiB"\nmax_batch_size = 8\n')  # fmt: skip
    shutil.copy(LLAMA3, write(project / "specs" / "llama3.yaml", ""))
    (project / "sub").mkdir()
    monkeypatch.chdir(project / "sub")
    assert main(["generate", "-q"]) == Exit.OK
    assert (project / "pkg/kv/llama3/sizing.py").is_file()
    assert not (project / "generated").exists() and not (project / "sub/generated").exists()
    # The header names the spec relative to the project root, wherever kvgen ran from.
    header = (project / "pkg/kv/llama3/sizing.py").read_text().splitlines()[0]
    assert header == "# Code generated by kvgen from 'specs/llama3.yaml'. DO NOT EDIT."
    assert main(["generate", "--check", "-q"]) == Exit.OK
    assert main(["lint", "-q"]) == Exit.OK
    capsys.readouterr()
    # gpu_memory from the config makes --gpu-memory optional. Llama-3.1-8B: 32 layers x 2 x 8
    # KV heads x 128 x 2 B = 131072 B/token, no window: 16 GiB / 131072 B = 131072 tokens.
    assert main(["-q", "plan", "llama3", "llama3_1_8b", "--format", "json"]) == Exit.OK
    out = capsys.readouterr().out
    assert '"gpu_memory": 17179869184' in out and '"max_tokens": 131072' in out
    # A flag beats the config: 8 GiB hold half as many tokens.
    assert main(["-q", "plan", "llama3", "llama3_1_8b", "--gpu-memory", "8GiB",
                 "--format", "json"]) == Exit.OK  # fmt: skip
    assert '"max_tokens": 65536' in capsys.readouterr().out


def test_flags_override_the_config_defaults(project):
    write(project / "kvgen.toml", 'out = "pkg"\n[deployment]\ntp_size = 4\nsemantics = "exact"\n')
    parser = build_parser(config.current(project))
    assert parser.parse_args(["generate"]).out == Path("pkg")
    args = parser.parse_args(["plan", "f", "m", "--gpu-memory", "1GiB"])
    assert (args.generated, args.tp_size, args.semantics) == (Path("pkg"), 4, "exact")
    args = parser.parse_args(["plan", "f", "m", "--gpu-memory", "1GiB", "--tp-size", "2"])
    assert args.tp_size == 2
    # kvgen diff takes no default from the working tree's configuration (a pull request owns
    # it): it reads the ref's as well (tests/cli/test_gate_config.py); only flags are given.
    args = parser.parse_args(["diff"])
    assert (args.generated, args.tp_size, args.semantics, args.paths) == (None, None, None, [])
    args = parser.parse_args(["diff", "--tp-size", "2", "--generated", "other", "x.yaml"])
    assert (args.generated, args.tp_size, args.paths) == (Path("other"), 2, ["x.yaml"])


# --- conventions -------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["-q", "lint"], ["lint", "-q"], ["lint", "--quiet"]])
def test_quiet_is_accepted_before_or_after_the_command(argv):
    assert build_parser(config.Config(root=REPO)).parse_args(argv).quiet is True


def test_quiet_before_the_command_is_not_undone_after_it():
    args = build_parser(config.Config(root=REPO)).parse_args(["-q", "lint", "--strict"])
    assert args.quiet is True and args.verbose is False


def test_version_comes_from_the_package_metadata():
    from importlib.metadata import version

    result = subprocess.run(
        [sys.executable, "-m", "kvgen", "--version"], capture_output=True, text=True, check=True
    )
    assert result.stdout == f"kvgen {version('kvgen')}\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["lint", "missing.yaml"],
        ["generate", "missing.yaml"],
        ["generate"],  # the default spec directory does not exist in an empty repository
        ["diff", "missing.yaml"],
        ["plan", "nofamily", "m", "--gpu-memory", "1GiB"],
    ],
)
def test_missing_paths_are_usage_errors_in_every_command(project, capsys, argv):
    assert main(argv) == Exit.USAGE
    err = capsys.readouterr().err
    assert err.count("kvgen: error:") == 1, err  # printed once, by cli.main


def test_missing_spec_directory_points_at_init(project, capsys):
    assert main(["generate"]) == Exit.USAGE
    assert "run `kvgen init`" in capsys.readouterr().err


def test_findings_are_exit_1_in_lint_and_generate(project, capsys):
    bad = write(project / "schema/families/bad.yaml", GEMMA3.read_text().replace("64", "48", 1))
    assert main(["-q", "lint", str(bad)]) == Exit.FINDINGS
    assert main(["-q", "generate"]) == Exit.FINDINGS
    assert not (project / "generated").exists()


def test_colour_only_on_a_terminal_without_no_color(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_colour(Tty()) and not use_colour(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_colour(Tty())
    line = "s.yaml:3:5: KV205 bad (fix: x)\ns.yaml:4:1: KV220 [warning] odd\n"
    painted = colour_findings(line)
    assert re.sub(r"\033\[[0-9;]*m", "", painted) == line
    assert "\033[31;1mKV205" in painted and "\033[33;1mKV220 [warning]" in painted


def test_lint_output_to_a_pipe_has_no_escape_codes(capsys):
    assert main(["-q", "lint", str(REPO / "tests/lint_corpus")]) == Exit.FINDINGS
    assert "\033" not in capsys.readouterr().out


def test_cli_reference_lists_every_command_and_flag():
    reference = (REPO / "docs/cli.md").read_text()
    # The engines' own spellings of a flag are listed once, in the conventions' alias table
    # above the first command's section (one row per kvgen flag and engine).
    conventions = reference.split("## `kvgen ")[0]
    parser = build_parser(config.Config(root=REPO))
    subparsers = next(a for a in parser._actions if a.dest == "command")
    for name, sub in subparsers.choices.items():
        section = reference.split(f"## `kvgen {name}")[1].split("\n## ")[0]
        for action in sub._actions:
            flags = [f for f in action.option_strings if f.startswith("--")]
            for flag in flags:
                if flag in ("--help", "--quiet", "--verbose"):
                    continue
                alias = flag != flags[0] and f"`{flag}" in conventions
                assert f"`{flag}" in section or alias, (name, flag)


def test_version_works_with_a_broken_config_and_commands_report_it(project, capsys):
    write(project / "kvgen.toml", "bogus = 1\n")
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0 and capsys.readouterr().out.startswith("kvgen ")
    assert main(["lint"]) == Exit.USAGE
    assert "kvgen.toml:1:1: unknown key 'bogus'" in capsys.readouterr().err
