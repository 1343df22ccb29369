"""Start-up (issue 23): `kvgen --version`, `--help` and `explain CODE` import neither the spec
models nor the rules nor their heavy dependencies, so that they cost a few milliseconds over
the bare interpreter (measured by bench/bench_startup.py, not here: CPU time on a shared
machine is no test). What is tested is what makes them fast: which modules they import."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import kvgen._cli.commands
import pytest
from kvgen._cli.main import COMMANDS, build_parser
from kvgen._generate.config import Config
from kvgen._util import meta as _meta

REPO = Path(__file__).resolve().parents[2]
# What a spec, a rule or a render needs, and the quick commands never do.
HEAVY = (
    "pydantic",
    "jinja2",
    "yaml",
    "jsonschema",
    "kvgen._spec.models",
    "kvgen._lint.rules",
    "kvgen._spec.loader",
)
# What the parser-building path of every command module may not import at module level.
NOT_AT_REGISTER = (
    *HEAVY,
    "kvgen._generate.render",
    "kvgen._review",
    "kvgen._engines.planner",
    "kvgen._engines.capacity",
)


def _modules_after(*argv: str) -> set[str]:
    """The modules loaded once ``kvgen ARGV`` has run, in a fresh interpreter."""
    code = (
        "import json, sys\n"
        "from kvgen._cli.main import main\n"
        "try:\n"
        f"    main({list(argv)!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.__stderr__.write('\\n' + json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    return set(json.loads(result.stderr.rsplit("\n", 1)[1]))


@pytest.mark.parametrize(
    "argv", [("--version",), ("--help",), ("explain", "KV205"), ("explain", "KV014"), ()]
)
def test_quick_commands_import_no_spec_model_rule_or_template_engine(argv):
    loaded = _modules_after(*argv)
    assert {name for name in loaded if name.split(".")[0] in HEAVY or name in HEAVY} == set()
    assert not any(name.startswith(("kvgen._spec.models", "kvgen._lint.rules")) for name in loaded)


def test_version_and_help_import_no_command_module_and_no_config_reader():
    for argv in (("--version",), ("--help",)):
        loaded = _modules_after(*argv)
        assert not [m for m in loaded if m.startswith("kvgen._cli.commands.")], argv
        assert "tomllib" not in loaded and "importlib.metadata" not in loaded, argv


def test_explain_imports_only_its_own_command():
    loaded = _modules_after("explain", "KV205")
    assert {m for m in loaded if m.startswith("kvgen._cli.commands.")} == {
        "kvgen._cli.commands.explain"
    }


# Issue 28: `kvgen plan` answers from a generated module, so it validates no spec: no spec
# models (pydantic), no rules, no renderer and no writer (at c2a37ec it imported the spec
# models through kvgen._generate.project and the writer for one constant, MAX_GENERATED_BYTES).
PLAN = ("-q", "plan", "llama3", "llama3_1_8b")
NOT_FOR_PLAN = (
    *HEAVY,
    "kvgen._lint.linter",
    "kvgen._generate.render",
    "kvgen._generate.writer",
    "kvgen._generate.project",
)


@pytest.mark.parametrize(
    "argv",
    [
        ("--gpu-memory", "20GiB"),
        ("--gpu-memory", "20GiB", "--engine", "vllm"),
        ("--gpu-memory", "20GiB", "--engine", "sglang"),
        ("--requests", "4"),
        ("--gpu", "H100-80GB", "--weights", "16GiB", "--emit", "trtllm"),
        ("--gpu", "H100-80GB", "--weights", "16GiB", "--emit", "vllm"),
    ],
    ids=["trtllm", "vllm", "sglang", "requests", "emit-trtllm", "emit-vllm"],
)
def test_plan_imports_no_spec_model_rule_renderer_or_writer(argv):
    loaded = _modules_after(*PLAN, *argv)
    heavy = {name for name in loaded if name.split(".")[0] in HEAVY}
    assert heavy | {name for name in loaded if name.startswith(NOT_FOR_PLAN)} == set()


def test_lint_of_one_spec_does_not_import_the_renderer():
    loaded = _modules_after("-q", "lint", "schema/families/llama3.yaml")
    assert "pydantic" in loaded  # it validates
    assert not {"jinja2", "jsonschema", "kvgen._generate.render"} & loaded


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_module_is_light_to_import(name):
    """The full parser (completion, the docs check) imports every command module: each keeps
    its heavy imports inside run()."""
    module = f"kvgen._cli.commands.{name.replace('-', '_')}"
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    loaded = set(eval(result.stdout))  # a list literal printed by the child
    assert not {
        m for m in loaded for heavy in NOT_AT_REGISTER if m == heavy or m.startswith(heavy + ".")
    }


def test_the_command_table_names_every_command_module_with_its_help():
    modules = {
        info.name.replace("_", "-")
        for info in pkgutil.iter_modules(kvgen._cli.commands.__path__)
        if not info.name.startswith("_")
    }
    assert set(COMMANDS) == modules
    parser = build_parser(Config(root=REPO))
    subparsers = next(a for a in parser._actions if a.dest == "command")
    helps = {action.dest: action.help for action in subparsers._choices_actions}
    assert helps == COMMANDS
    for name in COMMANDS:  # each module registers the parser of its own name
        module = importlib.import_module(f"kvgen._cli.commands.{name.replace('-', '_')}")
        assert module.run is subparsers.choices[name].get_default("func")


def test_the_version_constant_is_the_packaged_version():
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    project = {"version": re.search(r'^version = "([^"]+)"$', pyproject, re.M).group(1)}
    assert _meta.__version__ == project["version"]
    result = subprocess.run(
        [sys.executable, "-m", "kvgen", "--version"], cwd=REPO, capture_output=True, text=True
    )
    assert result.stdout == f"kvgen {project['version']}\n"


def test_dash_capital_v_prints_the_version_as_long_option_does():
    # `kvgen -V` (the short form python, pip and most CLIs take) was refused with
    # "did you mean '-v'" on c2a37ec; `-v` stays --verbose.
    for argv in (("-V",), ("-V", "-q")):
        result = subprocess.run(
            [sys.executable, "-m", "kvgen", *argv], cwd=REPO, capture_output=True, text=True
        )
        assert (result.returncode, result.stdout) == (0, f"kvgen {_meta.__version__}\n"), argv
    assert "kvgen._cli.commands.plan" not in _modules_after("-V")


def test_bench_startup_lists_the_quick_commands():
    text = (REPO / "bench" / "bench_startup.py").read_text(encoding="utf-8")
    for label in ("kvgen --version", "kvgen --help", "kvgen explain KV205", "kvgen lint ONE_SPEC"):
        assert f'"{label}"' in text
