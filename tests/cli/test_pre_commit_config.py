"""The hooks `kvgen init` writes work before kvgen is released (issue 23).

On 54a882f they were `language: python` hooks with `additional_dependencies:
["kvgen>=0.1,<0.2"]`, which pre-commit installs from the package index: with no release
there, `pre-commit run` exits 3 ("No matching distribution found"). Now they run the kvgen
installed beside pre-commit (`language: system`), and the remote form for after the release
is in the file's comment, pinned to the installed version's tag.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kvgen._cli.commands.init import ProjectLayout, pre_commit_config
from kvgen._util.meta import PROJECT_URL, version

REPO = Path(__file__).resolve().parents[2]
LAYOUT = ProjectLayout("schema/families", "generated", "schema/kvspec.schema.json")
SHIPPED_HOOKS = {
    hook["id"]: hook for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
}


def test_the_hooks_need_no_package_index():
    (repo,) = yaml.safe_load(pre_commit_config(LAYOUT))["repos"]
    assert repo["repo"] == "local"
    for hook in repo["hooks"]:
        assert hook["language"] == "system", hook["id"]
        assert "additional_dependencies" not in hook, hook["id"]


def test_the_local_hooks_run_what_the_shipped_hook_repository_runs():
    (repo,) = yaml.safe_load(pre_commit_config(LAYOUT))["repos"]
    for hook in repo["hooks"]:
        shipped = SHIPPED_HOOKS[hook["id"]]
        assert (hook["name"], hook["entry"]) == (shipped["name"], shipped["entry"])
        assert hook.get("pass_filenames", True) == shipped.get("pass_filenames", True)


def test_the_comment_gives_the_remote_form_pinned_to_this_version():
    text = pre_commit_config(LAYOUT)
    block = re.search(r"^#   (- repo: .*?)\n# [^ ]", text, re.S | re.M).group(1)
    (remote,) = yaml.safe_load(re.sub(r"^#   ", "", block, flags=re.M))
    assert remote["repo"] == PROJECT_URL
    assert remote["rev"] == f"v{version()}"
    assert [hook["id"] for hook in remote["hooks"]] == list(SHIPPED_HOOKS)
    assert "pre-commit try-repo /path/to/kvgen" in text


def _pre_commit() -> list[str]:
    try:
        import pre_commit  # noqa: F401  (not a dependency of kvgen: skipped without it)
    except ImportError:
        pytest.skip("pre-commit is not installed")
    return [sys.executable, "-m", "pre_commit"]


@pytest.mark.slow
def test_pre_commit_runs_the_hooks_offline_in_a_fresh_repository(tmp_path):
    pre_commit = _pre_commit()
    repo = tmp_path / "adopter"
    repo.mkdir()
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PRE_COMMIT_HOME": str(tmp_path / "cache"),
        "PIP_NO_INDEX": "1",  # nothing may come from the package index
    }
    env.pop("PYTHONPATH", None)
    if shutil.which("kvgen", path=env["PATH"]) is None:
        pytest.skip("no kvgen script beside this interpreter")

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)

    assert run("git", "init", "-q").returncode == 0
    assert run("kvgen", "-q", "init").returncode == 0
    shutil.copy(REPO / "schema/families/llama3.yaml", repo / "schema/families/llama3.yaml")
    assert run("kvgen", "-q", "generate").returncode == 0
    assert run("git", "add", "-A").returncode == 0
    result = run(*pre_commit, "run", "--all-files")
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"kvgen lint\.+Passed", result.stdout)
    assert re.search(r"kvgen generate --check\.+Passed", result.stdout)
    spec = repo / "schema/families/llama3.yaml"  # 48 is not a power of two: KV201
    spec.write_text(re.sub(r"(?m)^tokens_per_block: .*$", "tokens_per_block: 48", spec.read_text()))
    result = run(*pre_commit, "run", "--all-files")
    assert result.returncode == 1 and "KV201" in result.stdout
