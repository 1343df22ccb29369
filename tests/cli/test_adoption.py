"""Adoption before a release (issue 32).

On c2a37ec the CI workflow `kvgen init` writes installed `kvgen>=0.1,<0.2` from the package
index, where no release exists, so it failed at its first step; the pre-commit comment in
`.pre-commit-hooks.yaml` (and docs/review.md) named `https://github.com/<owner>/kvgen` while
`kvgen init` wrote `https://github.com/kvgen-project/kvgen`; and the hooks' `files:` missed
`pyproject.toml` and `kvgen.toml`, which kvgen reads, so a change of `specs =` or of the
deployment defaults ran no hook. Now the workflow installs a pinned git URL (the commit this
kvgen came from, else its release tag) or, with `--install WHEEL`, a wheel the repository
carries; every repository URL is kvgen's one PROJECT_URL; both hooks run on the whole spec
directory when a spec or the configuration changes. The wheel case is run for real in
tests/acceptance/test_packaging.py.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from kvgen._cli.commands.init import ProjectLayout, default_install, pre_commit_config, workflow
from kvgen._cli.main import main
from kvgen._util.exits import Exit
from kvgen._util.meta import PROJECT_URL, version

REPO = Path(__file__).resolve().parents[2]
LAYOUT = ProjectLayout("schema/families", "generated", "schema/kvspec.schema.json")
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def install_line(text: str) -> str:
    steps = yaml.safe_load(text)["jobs"]["specs"]["steps"]
    (line,) = [s["run"] for s in steps if "pip install" in s.get("run", "")]
    return line


def test_the_workflow_installs_a_pinned_git_url_not_the_unreleased_range():
    assert install_line(workflow()) == (
        f'python -m pip install "kvgen @ git+{PROJECT_URL}@v{version()}"'
    )
    assert "kvgen is not on the package index yet" in workflow()
    # kvgen installed from git (pip's PEP 610 record): pinned to that very commit.
    from_git = {"url": "https://example.com/fork/kvgen", "vcs_info": {"vcs": "git",
                "commit_id": COMMIT}}  # fmt: skip
    install = default_install(from_git)
    assert install.requirement == f"kvgen @ git+https://example.com/fork/kvgen@{COMMIT}"
    assert install_line(workflow(install)).endswith(f'@{COMMIT}"')
    # A local clone's commit is not reachable from CI: the release tag instead.
    local = {"url": "file:///home/me/kvgen", "vcs_info": {"vcs": "git", "commit_id": COMMIT}}
    assert default_install(local).requirement == f"kvgen @ git+{PROJECT_URL}@v{version()}"
    assert default_install({"url": "file:///x", "dir_info": {"editable": True}}) == (
        default_install(None)
    )


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    subprocess.run(["git", "init", "-q"], check=True)
    return tmp_path


def test_init_install_wheel_copies_it_into_the_repository_and_says_so(repo, tmp_path, capsys):
    wheel = tmp_path / "dist" / f"kvgen-{version()}-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"PK\x03\x04 a wheel")
    assert main(["init", "--install", str(wheel)]) == Exit.OK
    out = capsys.readouterr().out
    copy = repo / ".kvgen" / wheel.name
    assert copy.read_bytes() == wheel.read_bytes()
    text = (repo / ".github/workflows/kvgen.yml").read_text()
    assert install_line(text) == f'python -m pip install "./.kvgen/{wheel.name}"'
    assert f"created  .kvgen/{wheel.name} (the wheel the CI workflow installs)" in out
    assert f"(CI installs ./.kvgen/{wheel.name}: the wheel this repository carries)" in out


@pytest.mark.parametrize("bad", ['kvgen"; rm -rf /', "kvgen\nimport os", "$(id)", "x`y`"])
def test_init_install_refuses_a_requirement_the_shell_would_read(repo, bad, capsys):
    assert main(["-q", "init", "--install", bad]) == Exit.USAGE
    assert not (repo / ".github").exists()


def test_init_install_takes_a_requirement_as_given(repo):
    requirement = f"kvgen @ git+{PROJECT_URL}@{COMMIT}"
    assert main(["-q", "init", "--install", requirement]) == Exit.OK
    text = (repo / ".github/workflows/kvgen.yml").read_text()
    assert install_line(text) == f'python -m pip install "{requirement}"'


def test_every_repository_url_is_kvgens_one_project_url():
    names = [".pre-commit-hooks.yaml", "README.md", "CONTRIBUTING.md", "pyproject.toml"]
    files = [REPO / n for n in names] + sorted((REPO / "docs").glob("*.md"))
    files += sorted((REPO / "generator").rglob("*.py"))
    urls = set()
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert "<owner>" not in text, path
        urls |= set(re.findall(r"https://github\.com/[^/\s\"')]+/kvgen\b", text))
    urls |= set(re.findall(r"https://github\.com/[^/\s\"')]+/kvgen\b", pre_commit_config(LAYOUT)))
    urls |= set(re.findall(r"https://github\.com/[^/\s\"')]+/kvgen\b", workflow()))
    assert urls == {PROJECT_URL}


def _hooks(text: str) -> dict[str, dict]:
    data = yaml.safe_load(text)
    hooks = data["repos"][0]["hooks"] if isinstance(data, dict) else data
    return {hook["id"]: hook for hook in hooks}


@pytest.mark.parametrize("source", ["shipped", "init"])
def test_both_hooks_run_when_a_file_kvgen_reads_changes(source):
    text = (
        (REPO / ".pre-commit-hooks.yaml").read_text() if source == "shipped"
        else pre_commit_config(LAYOUT)
    )  # fmt: skip
    for hook in _hooks(text).values():
        files = re.compile(hook["files"])
        for path in ("pyproject.toml", "kvgen.toml", "schema/families/llama3.yaml"):
            assert files.search(path), (source, hook["id"], path)
        assert not files.search("README.md")
        assert hook["pass_filenames"] is False, (source, hook["id"])
        assert "types" not in hook  # a types: [yaml] filter would drop the TOML files
    assert re.compile(_hooks(text)["kvgen-generate-check"]["files"]).search(
        "generated/llama3/sizing.py"
    )


def test_init_install_refuses_a_linked_wheel_folder_before_writing_anything(repo, tmp_path):
    wheel = tmp_path / "dist" / f"kvgen-{version()}-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"PK\x03\x04 a wheel")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / ".kvgen").symlink_to(elsewhere)  # a link the pull request controls: never followed
    assert main(["-q", "init", "--install", str(wheel)]) != Exit.OK
    assert list(elsewhere.iterdir()) == []
    assert not (repo / "kvgen.toml").exists() and not (repo / ".github").exists()
