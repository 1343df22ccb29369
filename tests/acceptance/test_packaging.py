"""kvgen as an adopter gets it: a wheel that installs only ``kvgen``, with ranges for
dependencies, its templates, docs and shipped families inside, README's "Size a deployment"
commands run from an empty folder by the installed wheel, and README's "Use kvgen in your
repository" section run as written in an empty git repository.

The wheel is built from this checkout once per module. The rendering check installs it with
``--no-deps`` into a virtual environment that sees the test interpreter's packages (no network).
The catalogue check runs `pip install kvgen` with ``--no-index --find-links`` (the wheel's
folder) in a fresh virtual environment that sees the test interpreter's packages except kvgen,
so its dependencies are already installed (no network), then README's quick start, the model
listing, `kvgen compare` and docs/deploy.md's deployment file from an empty folder, each
printing what the documents show.
The adoption block runs in a bare virtual environment (no system site packages), where its own
``pip install`` line fetches kvgen's dependencies and pre-commit from the package index and finds
kvgen itself as the wheel of this checkout (``PIP_FIND_LINKS``), as README's "Install" says to
do before a release; where the index cannot be reached the test is skipped, saying so.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
FIXTURE_CONFIG = REPO / "tests/fixtures/hf/llama-3.1-8b.json"
tomllib = pytest.importorskip("tomllib")  # stdlib from Python 3.11
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def readme_region(name: str) -> str:
    return README.split(f"<!-- {name}:begin -->\n")[1].split(f"<!-- {name}:end -->")[0]


def readme_commands(name: str) -> list[str]:
    block = readme_region(name).split("```bash\n")[1].split("```")[0]
    return [line for line in block.splitlines() if line.strip()]


def test_every_package_is_listed_in_pyproject():
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join(("kvgen", *p.parent.relative_to(REPO / "generator").parts))
        for p in (REPO / "generator").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    # The shipped catalogue (issue 32): generated/ is kvgen.families, one package per family.
    shipped = {
        ".".join(("kvgen.families", *p.parent.relative_to(REPO / "generated").parts))
        for p in (REPO / "generated").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    data_only = {"kvgen.templates", "kvgen.docs", "kvgen.specs"}
    assert on_disk | shipped | data_only == listed
    dirs = PYPROJECT["tool"]["setuptools"]["package-dir"]
    assert (dirs["kvgen.families"], dirs["kvgen.specs"]) == ("generated", "schema/families")


def test_runtime_dependencies_are_ranges_and_dev_pins_live_in_the_constraints_file():
    for extra, requirements in [
        ("runtime", PYPROJECT["project"]["dependencies"]),
        *PYPROJECT["project"]["optional-dependencies"].items(),
    ]:
        for text in requirements:
            requirement = Requirement(text)
            assert all(spec.operator not in ("==", "===") for spec in requirement.specifier), (
                extra,
                text,
            )
            assert requirement.name != "ruff" or extra == "dev", "no formatter at run time"
    torch = Requirement(PYPROJECT["project"]["optional-dependencies"]["torch"][0])
    pins = {
        Requirement(line).name.lower(): Requirement(line)
        for line in (REPO / "constraints.txt").read_text().splitlines()
        if line and not line.startswith("#")
    }
    assert str(pins["torch"].specifier) == "==2.13.0"
    assert str(pins["ruff"].specifier) == "==0.17.6"
    assert Version("2.13.0") in torch.specifier  # the tested torch is inside the range
    # Every development tool has its exact version there (mypy and the stubs it reads too).
    extras = PYPROJECT["project"]["optional-dependencies"]
    dev = {Requirement(text).name.lower() for text in extras["dev"]}
    assert dev <= set(pins), sorted(dev - set(pins))
    assert str(pins["mypy"].specifier) == "==2.4.1"


def test_ci_runs_the_readme_set_up_commands():
    ci_lines = (REPO / ".ci/run").read_text().splitlines()
    commands = readme_commands("setup")
    assert len(commands) == 2 and "-c constraints.txt" in commands[0]
    for command in commands:
        assert command in ci_lines


# --- the wheel -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheels")
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)]
    # Offline first, with the installed setuptools; an older one without bdist_wheel (no
    # `wheel` package) falls back to pip's isolated build, from the configured index.
    if subprocess.run([*build, "--no-build-isolation"], capture_output=True).returncode:
        subprocess.run(build, check=True, capture_output=True)
    (built,) = out.glob("kvgen-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True)
    # The venv sees the packages of the interpreter running the tests (pydantic, jinja2, ...;
    # no network needed), but not its kvgen: directories a .pth file names are appended to
    # sys.path without running their own .pth files (an editable install's import hook).
    purelib = subprocess.run(
        [str(root / "bin/python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "kvgen_test_shared.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run(
        [str(root / "bin/python"), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    return root


@pytest.mark.slow
def test_the_wheel_holds_only_kvgen_with_its_templates_and_docs(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    version = PYPROJECT["project"]["version"]
    assert top == {"kvgen", f"kvgen-{version}.dist-info"}
    assert "kvgen/templates/sizing.py.j2" in names and "kvgen/py.typed" in names
    # The shipped catalogue (issue 32): every spec and its generated package, with the runtime.
    for spec in (REPO / "schema/families").glob("*.yaml"):
        assert f"kvgen/specs/{spec.name}" in names
        for module in ("__init__.py", "sizing.py", "allocator.py"):
            assert f"kvgen/families/{spec.stem}/{module}" in names
    assert "kvgen/families/_kvgen_runtime/sizing_core.py" in names
    # Every page README links to travels with the package.
    for doc in ("cost-model.md", "spec-reference.md", "cli.md", "security.md", "deploy.md",
                "review.md", "python-api.md", "engines.md", "families.md"):  # fmt: skip
        assert f"kvgen/docs/{doc}" in names
    metadata = zipfile.ZipFile(wheel).read(f"kvgen-{version}.dist-info/METADATA").decode()
    requires = re.findall(r"^Requires-Dist: (.*)$", metadata, re.M)
    pinned = [r for r in map(Requirement, requires) if any(s.operator == "==" for s in r.specifier)]
    assert requires and pinned == []


@pytest.mark.slow
def test_a_wheel_install_renders_exactly_what_the_checkout_renders(venv, tmp_path):
    project = tmp_path / "project"
    (project / "schema" / "families").mkdir(parents=True)
    spec = REPO / "schema" / "families" / "gemma3.yaml"
    (project / "schema" / "families" / "gemma3.yaml").write_bytes(spec.read_bytes())
    python = str(venv / "bin/python")
    # -I: the checkout (and any editable install's path hooks) stay out of sys.path.
    where = subprocess.run(
        [python, "-I", "-c", "import kvgen._generate.render as r; print(r.TEMPLATES_DIR)"],
        cwd=project, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    assert Path(where).parts[-2:] == ("kvgen", "templates") and str(venv) in where
    subprocess.run(
        [python, "-I", "-m", "kvgen", "-q", "generate"], cwd=project, check=True,
        capture_output=True,
    )  # fmt: skip
    for name in ("sizing.py", "allocator.py", "__init__.py"):
        built = (project / "generated" / "gemma3" / name).read_bytes()
        assert built == (REPO / "generated" / "gemma3" / name).read_bytes(), name


# --- the catalogue from an installed wheel, offline, from an empty folder (issue 32) -------


def _dependency_view(root: Path) -> Path:
    """A folder of links to everything the test interpreter has installed except kvgen (its
    packages, dist-infos and .pth files): a fresh virtual environment that names it in a .pth
    sees kvgen's dependencies as installed, offline, and no kvgen at all."""
    view = root / "dependencies"
    view.mkdir()
    for directory in map(Path, site.getsitepackages()):
        for entry in directory.iterdir():
            lowered = entry.name.lower()
            if lowered == "kvgen" or lowered.startswith(("kvgen-", "__editable__")):
                continue
            if entry.suffix == ".pth" or (view / entry.name).exists():
                continue
            (view / entry.name).symlink_to(entry)
    return view


OFFLINE_PIP = {"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1",
               "PIP_NO_INDEX": "1"}  # fmt: skip


def _offline_env() -> dict[str, str]:
    env = {**os.environ, **OFFLINE_PIP}
    for name in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PYTHONPATH"):
        env.pop(name, None)
    return env


def _fresh_venv(root: Path) -> Path:
    """A fresh virtual environment that sees kvgen's dependencies as installed and no kvgen."""
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True,
                   capture_output=True)  # fmt: skip
    python = root / "venv/bin/python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "kvgen_test_dependencies.pth").write_text(f"{_dependency_view(root)}\n")
    before = subprocess.run([str(python), "-c", "import kvgen"], capture_output=True,
                            env=_offline_env())  # fmt: skip
    assert before.returncode != 0  # nothing of kvgen is there before the install
    return root / "venv"


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment where `pip install kvgen` found kvgen as the built wheel
    (--no-index, --find-links) and its dependencies already installed: no network."""
    venv = _fresh_venv(tmp_path_factory.mktemp("installed"))
    result = subprocess.run(
        [str(venv / "bin/python"), "-m", "pip", "install", "--no-index", "--find-links",
         str(wheel.parent), "kvgen"], capture_output=True, text=True, env=_offline_env(),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Successfully installed kvgen-" in result.stdout
    return venv


@pytest.mark.slow
def test_the_ci_workflow_installs_the_wheel_the_repository_carries(installed, wheel, tmp_path):
    # `kvgen init --install WHEEL` (issue 32): the workflow's own install line, run as CI runs
    # it (offline here: the dependencies are already installed), installs a working kvgen.
    repo = tmp_path / "adopter"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    env = {**_offline_env(), "PATH": f"{installed / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    init = subprocess.run(["kvgen", "init", "--install", str(wheel)], cwd=repo, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert init.returncode == 0, init.stderr
    assert (repo / ".kvgen" / wheel.name).read_bytes() == wheel.read_bytes()
    import yaml

    steps = yaml.safe_load((repo / ".github/workflows/kvgen.yml").read_text())["jobs"]["specs"]
    (line,) = [s["run"] for s in steps["steps"] if "pip install" in s.get("run", "")]
    assert line == f'python -m pip install "./.kvgen/{wheel.name}"'
    ci = _fresh_venv(tmp_path / "ci")
    ci_env = {**_offline_env(), "PATH": f"{ci / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(["bash", "-c", line], cwd=repo, env=ci_env, capture_output=True,
                            text=True)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    version = subprocess.run(["kvgen", "--version"], cwd=repo, env=ci_env, capture_output=True,
                             text=True)  # fmt: skip
    assert version.stdout == f"kvgen {PYPROJECT['project']['version']}\n"
    assert shutil.which("kvgen", path=ci_env["PATH"]) == str(ci / "bin" / "kvgen")


def _documented(command_start: str) -> tuple[str, str]:
    from tests.doc_examples import regions

    for _, command, body in regions():
        if command.startswith(command_start):
            return command, body
    raise AssertionError(f"no documented output for {command_start!r}")


@pytest.mark.slow
def test_an_installed_wheel_runs_the_documented_commands_from_an_empty_folder(installed, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GITHUB_BASE_REF")}
    env["PATH"] = f"{installed / 'bin'}{os.pathsep}{env['PATH']}"
    where = subprocess.run(
        ["python", "-I", "-c", "import kvgen._generate.shipped as s; print(s.shipped_generated())"],
        cwd=empty, env=env, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    assert where.startswith(str(installed)) and where.endswith("kvgen/families")
    (empty / "docs/examples").mkdir(parents=True)  # the deployment file, as a user writes it
    shutil.copy(REPO / "docs/examples/node-8xh100.toml", empty / "docs/examples")
    readme = [command for document, command, _ in _regions() if document == "README.md"]
    commands = [
        *[c for c in readme if c.startswith("kvgen plan ")],  # the quick start, all three
        _documented("kvgen models meta-llama/Llama-3.1-70B-Instruct")[0],
        _documented("kvgen compare gemma3 gemma3_27b --gpu-memory 40GiB --max-seq-len 32768")[0],
        _documented("kvgen plan --deployment docs/examples/node-8xh100.toml")[0],
    ]
    assert len(commands) == 6
    for command in commands:
        shown = _documented(command)[1]
        # The console entry point `kvgen` of the virtual environment, as a user runs it.
        result = subprocess.run(
            shlex.split(command), cwd=empty, env=env, capture_output=True, text=True
        )
        assert (result.returncode, result.stdout) == (0, shown), (command, result.stderr)
        assert "Traceback" not in result.stderr
        if "models" not in command:  # said on stderr: the shipped family was used
            assert "the family kvgen 0.1.0 ships (this project has no" in result.stderr, command
    assert sorted(p.name for p in empty.iterdir()) == ["docs"]  # nothing written


def _regions():
    from tests.doc_examples import regions

    return regions()


# --- adoption, exactly as README says ------------------------------------------------------

# What pip prints when the package index cannot be reached (an offline machine): the adoption
# block installs from the index, so there it cannot run, and the test says so.
OFFLINE = ("NewConnectionError", "Network is unreachable", "Temporary failure in name resolution",
           "No matching distribution found for")  # fmt: skip


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory) -> Path:
    """A virtual environment with nothing but Python and pip: no system site packages, no
    kvgen, no pre-commit; the adoption block installs what it uses."""
    root = tmp_path_factory.mktemp("bare-venv")
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True)
    return root


@pytest.mark.slow
def test_adopting_kvgen_in_an_empty_repository_as_the_readme_says(bare_venv, wheel, tmp_path):
    commands = readme_commands("adopt")
    repo = tmp_path / "your-repo"
    repo.mkdir()
    (tmp_path / "llama-3.1-8b").mkdir()
    shutil.copy(FIXTURE_CONFIG, tmp_path / "llama-3.1-8b" / "config.json")
    env = {
        **os.environ,
        "PATH": f"{bare_venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(bare_venv),
        "GIT_AUTHOR_NAME": "adopter", "GIT_AUTHOR_EMAIL": "adopter@example.com",
        "GIT_COMMITTER_NAME": "adopter", "GIT_COMMITTER_EMAIL": "adopter@example.com",
        # Until a release is on the index, pip finds the wheel of this checkout (README,
        # "Install"); everything else comes from the index.
        "PIP_FIND_LINKS": f"{wheel.parent} {os.environ.get('PIP_FIND_LINKS', '')}".strip(),
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),  # not the user's cache
    }  # fmt: skip
    for name in ("GITHUB_BASE_REF", "PYTHONPATH", "PYTHONHOME", "PIP_REQUIRE_VIRTUALENV"):
        env.pop(name, None)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)

    install, *steps = commands
    # The release is replaced by the wheel of this checkout; the README's range must admit it,
    # and the block installs pre-commit itself but never torch (an optional, separate step).
    argv = shlex.split(install)
    assert argv[:2] == ["pip", "install"] and "pre-commit" in argv
    (requirement,) = [Requirement(a) for a in argv[2:] if a.startswith("kvgen")]
    assert Version(PYPROJECT["project"]["version"]) in requirement.specifier
    assert requirement.extras == set() and "torch" not in install

    result = subprocess.run(["bash", "-c", install], cwd=repo, env=env, capture_output=True,
                            text=True)  # fmt: skip
    if result.returncode and any(marker in result.stderr for marker in OFFLINE):
        assert "for kvgen" not in result.stderr, result.stderr  # the wheel itself was not found
        pytest.skip(f"the package index is not reachable: {result.stderr.splitlines()[-1]}")
    assert result.returncode == 0, (install, result.stdout, result.stderr)
    for tool in ("kvgen", "pre-commit"):
        assert shutil.which(tool, path=env["PATH"]) == str(bare_venv / "bin" / tool), tool
    where = subprocess.run(
        ["kvgen", "--version"], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    assert where.stdout == f"kvgen {PYPROJECT['project']['version']}\n"

    outputs = {}
    for command in steps:
        result = subprocess.run(
            ["bash", "-c", command], cwd=repo, env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, (command, result.stdout, result.stderr)
        outputs[command.split()[0] + " " + command.split()[1]] = result.stdout

    # The generated module answers from the adopter's code. Llama-3.1-8B: 32 layers x 2 x 8
    # KV heads x 128 x 2 B (bf16) = 131072 B per token and no sliding window, so a 16 GiB
    # quota holds 16 GiB / 131072 B = 131072 tokens.
    assert outputs["python -c"] == "131072\n"
    assert (repo / "generated/llama/sizing.py").is_file()
    assert "1 unchanged" in outputs["kvgen diff"]
    # pre-commit itself ran both hooks that `kvgen init` wrote, and they passed.
    hooks = re.findall(r"^(kvgen lint|kvgen generate --check)\.+Passed$", outputs["pre-commit run"],
                       re.M)  # fmt: skip
    assert hooks == ["kvgen lint", "kvgen generate --check"], outputs["pre-commit run"]
    committed = subprocess.run(
        ["git", "ls-files"], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout.split()
    for path in ("kvgen.toml", ".pre-commit-config.yaml", ".github/workflows/kvgen.yml",
                 "schema/families/llama.yaml", "generated/llama/sizing.py"):  # fmt: skip
        assert path in committed
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, env=env, check=True, capture_output=True,
        text=True,
    ).stdout  # fmt: skip
    assert status == ""  # nothing kvgen ran after the commit changed the tree
    # Nothing in the block pulled torch in: it stays the allocator shim's optional extra.
    torch = subprocess.run([str(bare_venv / "bin/python"), "-c", "import torch"], env=env,
                           capture_output=True)  # fmt: skip
    assert torch.returncode != 0
