"""``kvgen init``: what it scaffolds, idempotence, --force, and README's copies of its files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from kvgen import config
from kvgen.cli import main
from kvgen.commands.init import Layout, pre_commit_config, requirement, workflow
from kvgen.exits import Exit
from kvgen.schema_export import export_schema

REPO = Path(__file__).resolve().parents[2]
SCAFFOLD = [
    "kvgen.toml",
    "schema/families/.gitkeep",
    "schema/kvspec.schema.json",
    ".pre-commit-config.yaml",
    ".github/workflows/kvgen.yml",
    ".gitignore",
]


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts[:1]
    }


def test_init_scaffolds_an_empty_repository_and_prints_next_steps(repo, capsys):
    assert main(["-q", "init"]) == Exit.OK
    out = capsys.readouterr().out
    assert sorted(tree(repo)) == sorted(SCAFFOLD)
    assert "Next steps:" in out and "kvgen import-hf" in out
    assert (repo / "schema/kvspec.schema.json").read_text() == export_schema()
    found = config.current(repo)
    assert found.source == repo / "kvgen.toml"
    assert (found.specs, found.out, found.deployment["gpu_memory"]) == (
        Path("schema/families"), Path("generated"), 40 << 30,
    )  # fmt: skip


def test_init_is_idempotent_and_overwrites_only_with_force(repo, capsys):
    assert main(["-q", "init"]) == Exit.OK
    (repo / ".pre-commit-config.yaml").write_text("repos: []  # mine\n")
    before = tree(repo)
    assert main(["-q", "init"]) == Exit.OK
    assert tree(repo) == before
    assert "kept     .pre-commit-config.yaml (exists; --force overwrites it)" in (
        capsys.readouterr().out
    )
    assert main(["-q", "init", "--force"]) == Exit.OK
    layout = Layout("schema/families", "generated", "schema/kvspec.schema.json")
    assert (repo / ".pre-commit-config.yaml").read_text() == pre_commit_config(layout)


def test_init_appends_the_table_to_an_existing_pyproject_once(repo):
    original = '[project]\nname = "adopter"\n'
    (repo / "pyproject.toml").write_text(original)
    assert main(["-q", "init", "--specs", "kv/specs", "--out", "src/adopter/kv"]) == Exit.OK
    text = (repo / "pyproject.toml").read_text()
    assert text.startswith(original + "\n[tool.kvgen]\n")
    assert not (repo / "kvgen.toml").exists()
    assert (repo / "kv/specs").is_dir() and (repo / "kv/kvspec.schema.json").is_file()
    found = config.current(repo)
    assert (found.specs, found.out) == (Path("kv/specs"), Path("src/adopter/kv"))
    hooks = yaml.safe_load((repo / ".pre-commit-config.yaml").read_text())["repos"][0]["hooks"]
    lint = re.compile(hooks[0]["files"])
    assert lint.search("kv/specs/llama.yaml") and not lint.search("schema/families/x.yaml")
    assert main(["-q", "init", "--force"]) == Exit.OK
    assert (repo / "pyproject.toml").read_text() == text  # [tool.kvgen] is never rewritten


@pytest.mark.parametrize("bad", ["../outside", "/abs", "a b", "x\nimport os"])
def test_init_refuses_paths_outside_or_odd(repo, capsys, bad):
    assert main(["-q", "init", "--specs", bad]) == Exit.USAGE
    assert tree(repo) == {}


def test_workflow_installs_kvgen_itself_uploads_sarif_and_comments_the_diff():
    steps = yaml.safe_load(workflow())["jobs"]["specs"]["steps"]
    runs = "\n".join(step.get("run", "") for step in steps)
    assert f'pip install "{requirement()}"' in runs and "-e ." not in runs
    assert "kvgen lint --format sarif > kvgen.sarif" in runs
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload"))
    assert upload["with"]["sarif_file"] == "kvgen.sarif" and upload["if"] == "always()"
    assert "kvgen generate --check" in runs and "gh pr comment" in runs


def test_requirement_is_a_range_around_the_installed_version():
    from kvgen.cli import version

    major, minor = map(int, version().split(".")[:2])
    upper = f"{major}.{minor + 1}" if major == 0 else str(major + 1)
    assert requirement() == f"kvgen>={major}.{minor},<{upper}"


def _readme_block(after: str) -> str:
    readme = (REPO / "README.md").read_text()
    return readme.split(after, 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]


def _without_leading_comments(text: str) -> str:
    return re.sub(r"\A(#[^\n]*\n)+", "", text)


def test_readme_shows_exactly_what_init_writes():
    layout = Layout("schema/families", "generated", "schema/kvspec.schema.json")
    assert _readme_block("### pre-commit\n") == _without_leading_comments(pre_commit_config(layout))
    assert _readme_block("### GitHub Actions\n") == _without_leading_comments(workflow())


def test_schema_copy_is_valid_json_schema():
    schema = json.loads(export_schema())
    assert schema["title"] == "kvgen model-family spec v1"


def test_init_in_a_subdirectory_of_a_set_up_project_is_refused(repo, monkeypatch, capsys):
    assert main(["-q", "init"]) == Exit.OK
    (repo / "sub").mkdir()
    monkeypatch.chdir(repo / "sub")
    assert main(["-q", "init"]) == Exit.USAGE
    assert "already set up by ../kvgen.toml" in capsys.readouterr().err
    assert list((repo / "sub").iterdir()) == []
