"""``kvgen init``: what it scaffolds, idempotence, --force, and the copies of its files that
docs/review.md shows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from kvgen._cli.commands.init import ProjectLayout, pre_commit_config, requirement, workflow
from kvgen._cli.main import main
from kvgen._generate import config
from kvgen._spec.schema_export import export_schema
from kvgen._util.exits import Exit

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
    layout = ProjectLayout("schema/families", "generated", "schema/kvspec.schema.json")
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
    # Pinned, never the unreleased range (issue 32; tests/cli/test_adoption.py).
    assert 'pip install "kvgen @ git+' in runs and "-e ." not in runs
    assert f'pip install "{requirement()}"' not in runs
    assert "kvgen lint --format sarif > kvgen.sarif" in runs
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload"))
    assert upload["with"]["sarif_file"] == "kvgen.sarif" and upload["if"] == "always()"
    assert "kvgen generate --check" in runs and "gh pr comment" in runs


def test_the_workflow_pins_exactly_the_installed_release():
    # docs/security.md, "What CI must pin": a range would let a new release (or the pull
    # request's own dependency files) change the rules the gate applies.
    from kvgen._cli.main import version

    assert requirement() == f"kvgen=={version()}"


def _documented_block(after: str) -> str:
    readme = (REPO / "docs" / "review.md").read_text()
    return readme.split(after, 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]


def _without_leading_comments(text: str) -> str:
    return re.sub(r"\A(#[^\n]*\n)+", "", text)


def test_the_docs_show_exactly_what_init_writes():
    layout = ProjectLayout("schema/families", "generated", "schema/kvspec.schema.json")
    hooks = _without_leading_comments(pre_commit_config(layout))
    assert _documented_block("\n## pre-commit\n") == hooks
    assert _documented_block("\n## GitHub Actions\n") == _without_leading_comments(workflow())


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


# --- issue 18 #13: existing pyproject.toml, links; issue 23: defaults, .gitignore ----------------

SETTINGS = '[tool.kvgen]\nspecs = "schema/families"\n'


@pytest.mark.parametrize(
    "pyproject",
    [
        '[project]\nname = "a"\n\n[tool]\nkvgen.specs = "schema/families"\n',  # dotted key
        '[project]\nname = "a"\n\n[tool]\nkvgen = {specs = "schema/families"}\n',  # inline
        'tool.kvgen.specs = "schema/families"\n',  # dotted from the top
    ],
)
def test_init_keeps_a_tool_kvgen_written_in_any_form(repo, capsys, pyproject):
    import tomllib

    (repo / "pyproject.toml").write_text(pyproject)
    assert main(["-q", "init"]) == Exit.OK
    text = (repo / "pyproject.toml").read_text()
    assert text == pyproject  # 54a882f appended a second [tool.kvgen]: invalid TOML
    tomllib.loads(text)
    assert "kept     pyproject.toml" in capsys.readouterr().out


def test_init_refuses_an_invalid_pyproject_at_its_position(repo, capsys):
    broken = '[project]\nname = "a"\nversion = \n'  # line 3: the value is missing at col 11
    (repo / "pyproject.toml").write_text(broken)
    assert main(["-q", "init"]) == Exit.USAGE
    assert "pyproject.toml:3:11: invalid TOML" in capsys.readouterr().err
    assert (repo / "pyproject.toml").read_text() == broken
    assert sorted(tree(repo)) == ["pyproject.toml"]


def test_init_refuses_a_pyproject_that_is_not_utf8(repo, capsys):
    raw = b'[project]\nname = "caf\xe9"\n'  # Latin-1 e-acute: line 2, col 12 (`name = "caf` is 11)
    (repo / "pyproject.toml").write_bytes(raw)
    assert main(["-q", "init"]) == Exit.USAGE
    _out, err = capsys.readouterr()
    assert "pyproject.toml:2:12: not valid UTF-8" in err and "internal error" not in err
    assert (repo / "pyproject.toml").read_bytes() == raw


def test_init_adds_the_table_keeping_the_rest_of_pyproject(repo):
    import tomllib

    original = '# adopter\n[project]\nname = "a"  # the name\n\n[tool.black]\nline-length = 99\n'
    (repo / "pyproject.toml").write_text(original)
    assert main(["-q", "init"]) == Exit.OK
    text = (repo / "pyproject.toml").read_text()
    assert text.startswith(original) and "\n[tool.kvgen]\n" in text
    assert tomllib.loads(text)["tool"]["black"] == {"line-length": 99}


@pytest.mark.parametrize("linked", ["schema", ".github"])
def test_init_never_writes_through_a_linked_folder(repo, tmp_path_factory, capsys, linked):
    outside = tmp_path_factory.mktemp("outside")
    (repo / linked).symlink_to(outside)
    assert main(["-q", "init"]) != Exit.OK
    assert list(outside.iterdir()) == []  # 54a882f wrote the schema / the workflow there
    assert "KV020" in capsys.readouterr().out
    assert sorted(tree(repo)) == []  # every target is checked before the first write


def test_init_writes_no_max_seq_len_and_prints_what_it_wrote(repo, capsys):
    assert main(["-q", "init"]) == Exit.OK
    out = capsys.readouterr().out
    assert "max_seq_len" not in config.current(repo).deployment
    assert 'gpu_memory = "40GiB"' in out and "max_batch_size = 8" in out


def test_plan_of_a_short_context_model_works_in_an_initialised_repository(repo):
    """Issue 23: `kvgen plan olmo2 olmo2_7b --gpu-memory 40GiB` exited 2 ("max_seq_len must be
    <= 4096") after `kvgen init` wrote max_seq_len = 32768 into the deployment defaults."""
    import subprocess
    import sys

    assert main(["-q", "init"]) == Exit.OK
    # OLMo-2-1124-7B config.json: 32 layers, 32 KV heads, 4096 / 32 = 128, native 4096.
    (repo / "schema/families/olmo2.yaml").write_text(
        "schema_version: 1\nfamily: olmo2\ntokens_per_block: 32\nkv_cache_dtype: bf16\n"
        "models:\n  - name: olmo2_7b\n    max_seq_len: 4096\n    layer_kinds:\n"
        "      full: {attention: full, kv_heads: 32, head_dim: 128}\n"
        "    layers: {count: 32, pattern: [full]}\n"
    )
    kvgen = [sys.executable, "-m", "kvgen"]
    subprocess.run([*kvgen, "-q", "generate"], cwd=repo, check=True, timeout=120)
    done = subprocess.run(
        [*kvgen, "plan", "olmo2", "olmo2_7b", "--gpu-memory", "40GiB"],
        cwd=repo, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "max_seq_len 4096 (native 4096)" in done.stdout


def test_init_ignores_the_lock_and_staging_folders_of_generate(repo):
    import shutil
    import subprocess
    import sys

    if shutil.which("git") is None:
        pytest.skip("needs git")
    shutil.rmtree(repo / ".git")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / ".gitignore").write_text("*.pyc")  # kept, and no newline at its end
    assert main(["-q", "init"]) == Exit.OK
    assert (repo / ".gitignore").read_text().startswith("*.pyc\n")
    subprocess.run([sys.executable, "-m", "kvgen", "-q", "generate"], cwd=repo, check=True)
    (repo / ".generated.kvgen-stage").mkdir()  # what a killed run leaves
    (repo / ".generated.kvgen-stage/x.py").write_text("")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repo, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert ".kvgen" not in status, status  # README's `git add -A` commits none of them
    assert main(["-q", "init"]) == Exit.OK  # idempotent: the lines are added once
    assert (repo / ".gitignore").read_text().count(".generated.kvgen.lock") == 1


def test_a_config_that_is_not_utf8_is_refused_at_the_bad_byte(repo, capsys):
    # "kvgen" in the file makes it a candidate config. The bad byte: line 2, col 13
    # (`specs = "caf` is 12 characters).
    (repo / "pyproject.toml").write_bytes(b'[tool.kvgen]\nspecs = "caf\xe9"\n')
    assert main(["-q", "lint"]) == Exit.USAGE
    assert "pyproject.toml:2:13: not valid UTF-8" in capsys.readouterr().err
