"""The shipped catalogue works from anywhere (issue 32).

On c2a37ec, from a folder with no project, README's quick start `kvgen plan llama3
llama3_1_70b ... --emit vllm` exited 2 ("generated/llama3/sizing.py not found: run `kvgen
generate`"), `kvgen compare gemma3 gemma3_27b ...` exited 2, a deployment file naming
llama3_1_70b failed the same way, and nothing listed the shipped models. Now every planning
command (and ``kvgen.find_family``) finds a family kvgen ships when the project has none of
that name, says so on stderr, and prints exactly what it prints inside this repository, where
the project's own family is used (and nothing is said). A project's own family of the same
name wins, and the output says which was used. ``kvgen models`` lists families and models and
takes a Hugging Face style name.

The expected outputs are the documents' own regions (tests/doc_examples.py), which
tests/acceptance/test_doc_examples.py checks inside the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doc_examples import REPO, regions

SHIPPED_NOTE = "kvgen: {family}: the family kvgen 0.1.0 ships (this project has no "


def shown(command_start: str) -> tuple[str, str]:
    """(command, output) of the first documented region whose command starts so."""
    for _, command, body in regions():
        if command.startswith(command_start):
            return command, body
    raise AssertionError(f"no region for {command_start!r}")


def kvgen(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GITHUB_BASE_REF")}
    return subprocess.run(
        [sys.executable, "-m", "kvgen", *argv], cwd=cwd, capture_output=True, text=True, env=env
    )


@pytest.fixture
def empty(tmp_path) -> Path:
    """A folder with no project: no kvgen.toml, no pyproject.toml, no specs, no .git above."""
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder


def test_readme_quick_start_runs_from_an_empty_folder_with_readmes_output(empty):
    command, body = shown("kvgen plan llama3 llama3_1_70b --gpu H100-80GB")
    argv = command.split()[1:]
    result = kvgen(*argv, cwd=empty)
    assert (result.returncode, result.stdout) == (0, body)
    assert result.stderr.startswith(SHIPPED_NOTE.format(family="llama3"))
    assert list(empty.iterdir()) == []  # nothing written
    # Inside the clone the project's own llama3 is used, silently, with the same output.
    inside = kvgen(*argv, cwd=REPO)
    assert (inside.returncode, inside.stdout, inside.stderr) == (0, body, "")


def test_compare_and_the_what_if_knobs_use_the_shipped_spec(empty):
    command, body = shown("kvgen compare gemma3 gemma3_27b --gpu-memory 40GiB")
    result = kvgen(*command.split()[1:], cwd=empty)
    assert (result.returncode, result.stdout) == (0, body)
    assert SHIPPED_NOTE.format(family="gemma3") in result.stderr
    # A what-if knob binds the shipped spec's tables in memory (kvgen._engines.whatif): the same
    # answer as in the clone.
    argv = ["plan", "gemma3", "gemma3_27b", "--gpu-memory", "40GiB", "--kv-cache-dtype", "fp8"]
    here, inside = kvgen(*argv, cwd=empty), kvgen(*argv, cwd=REPO)
    assert here.returncode == inside.returncode == 0
    assert here.stdout == inside.stdout


def test_a_deployment_file_names_shipped_models_from_an_empty_folder(empty):
    command, body = shown("kvgen plan --deployment docs/examples/node-8xh100.toml")
    (empty / "docs" / "examples").mkdir(parents=True)
    shutil.copy(REPO / "docs/examples/node-8xh100.toml", empty / "docs/examples")
    result = kvgen(*command.split()[1:], cwd=empty)
    assert (result.returncode, result.stdout) == (0, body)
    for family in ("llama3", "gemma3", "qwen3_moe"):  # each said once
        assert result.stderr.count(SHIPPED_NOTE.format(family=family)) == 1


def test_the_python_api_finds_a_shipped_family(empty, monkeypatch):
    import kvgen as api

    monkeypatch.chdir(empty)
    found = api.find_family("llama3")
    assert found.shipped and found.spec.name == "llama3.yaml"
    # Llama-3.1-8B: 32 layers x 2 (K, V) x 8 KV heads x 128 x 2 B (bf16) = 131,072 B a token.
    costs = found.sizing().cache_costs(
        "llama3_1_8b", max_batch_size=8, max_num_tokens=8192, max_seq_len=32768
    )
    assert costs["target"].slope == 131072
    family = found.family()
    capacity = api.engine_capacity(
        family, "llama3_1_8b", 16 << 30, engine="vllm", max_seq_len=32768, max_num_tokens=8192
    )
    # vLLM pages of 16 tokens x 131,072 B = 2 MiB; 16 GiB / 2 MiB = 8,192 blocks = 131,072 tokens
    assert capacity.kv_tokens == 131072
    # The shipped generated modules import as a package of their own.
    from kvgen.families.llama3 import sizing

    assert sizing.MODELS == found.sizing().MODELS
    with pytest.raises(LookupError, match=r"no family 'gemma9'.*did you mean 'gemma3'"):
        api.find_family("gemma9")


# --- a project's own family wins ----------------------------------------------------------


def _project(root: Path, heads: int) -> Path:
    """A project whose own family is named llama3 (one model, llama3_1_8b with ``heads`` KV
    heads), as an adopter might have written it."""
    (root / "schema/families").mkdir(parents=True)
    (root / "kvgen.toml").write_text('specs = "schema/families"\nout = "generated"\n')
    (root / "schema/families/llama3.yaml").write_text(
        f"""\
schema_version: 1
family: llama3
tokens_per_block: 32
kv_cache_dtype: bf16
models:
  - name: llama3_1_8b
    max_seq_len: 131072
    layer_kinds:
      full: {{attention: full, kv_heads: {heads}, head_dim: 128}}
    layers: {{count: 32, pattern: [full]}}
"""
    )
    return root


def test_a_projects_own_family_of_a_shipped_name_wins_and_is_named(tmp_path):
    project = _project(tmp_path / "project", heads=4)
    argv = ["plan", "llama3", "llama3_1_8b", "--gpu-memory", "16GiB", "--format", "json"]
    # Its spec alone already wins: kvgen never falls back to the shipped llama3 behind it.
    stale = kvgen(*argv, cwd=project)
    assert stale.returncode == 2
    assert "generated/llama3/sizing.py not found" in stale.stderr
    assert kvgen("-q", "generate", cwd=project).returncode == 0
    result = kvgen(*argv, cwd=project)
    assert result.returncode == 0, result.stderr
    # 4 KV heads: 32 x 2 x 4 x 128 x 2 B = 65,536 B a token, half the shipped model's 131,072.
    managers = json.loads(result.stdout)["batches"][0]["managers"]
    assert managers[0]["slope"] == 65536
    assert result.stderr == (
        "kvgen: llama3: this project's family (generated/llama3/sizing.py), "
        "not the llama3 kvgen ships\n"
    )
    listing = kvgen("models", "llama3", cwd=project)
    assert listing.stdout.splitlines()[1].split() == [
        "llama3", "llama3_1_8b", "131,072", "65,536", "8", "GiB", "project", "-",
    ]  # fmt: skip
    # A family the project does not have still comes from the catalogue.
    other = kvgen("plan", "gemma3", "gemma3_1b", "--gpu-memory", "16GiB", cwd=project)
    assert other.returncode == 0 and SHIPPED_NOTE.format(family="gemma3") in other.stderr


def test_an_unknown_family_names_the_closest_shipped_one(empty):
    result = kvgen("plan", "gemma9", "x", "--gpu-memory", "40GiB", cwd=empty)
    assert result.returncode == 2
    assert "(did you mean 'gemma3'?)" in result.stderr
    assert "`kvgen models` lists them" in result.stderr


def test_diff_compares_a_copy_of_a_shipped_family_with_it_from_an_empty_folder(empty):
    spec = empty / "my-gemma3.yaml"
    shutil.copy(REPO / "schema/families/gemma3.yaml", spec)
    same = kvgen("-q", "diff", "--shipped", spec.name, cwd=empty)
    assert same.returncode == 0, same.stderr
    assert same.stdout.startswith("kvgen diff kvgen 0.1.0 (shipped) -> working tree\n")
    assert "families: 0 changed, 0 added, 0 removed, 0 cosmetic, 1 unchanged" in same.stdout
    # docs/review.md's story: gemma3_27b's window raised from 1024 to 1280 tokens; 52 sliding
    # layers x 16 KV heads x 128 x 2 (K, V) x 2 B = 425,984 B a token, 256 tokens more per
    # request x 8 requests = 872,415,232 B more intercept.
    text = spec.read_text()
    start = text.index("  - name: gemma3_27b")
    window = text.index("window: 1024", start)
    spec.write_text(text[:window] + "window: 1280" + text[window + len("window: 1024") :])
    changed = kvgen("-q", "diff", "--shipped", spec.name, cwd=empty)
    assert changed.returncode == 1
    assert "gemma3/gemma3_27b/none/target: capacity-reducing (NOT ACKNOWLEDGED)" in changed.stdout
    assert "intercept   7197425664 -> 8069840896 B  (+872415232 B, +832 MiB)" in changed.stdout
    # A spec of a family kvgen does not ship has nothing to compare with.
    other = empty / "toy.yaml"
    other.write_text(text.replace("family: gemma3", "family: toy"))
    refused = kvgen("diff", "--shipped", other.name, cwd=empty)
    assert refused.returncode == 2
    assert "no spec under toy.yaml names a family kvgen ships" in refused.stderr


# --- kvgen models ---------------------------------------------------------------------------


def test_models_lists_every_shipped_model_from_an_empty_folder(empty):
    result = kvgen("models", "--format", "json", cwd=empty)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    shipped = sorted(p.stem for p in (REPO / "schema/families").glob("*.yaml"))
    assert sorted({r["family"] for r in rows}) == shipped
    assert {r["source"] for r in rows} == {"shipped"}
    by_model = {r["model"]: r for r in rows}
    assert len(by_model) == len(rows) == 63  # every model once
    # gemma3_27b: 10 full-attention layers x 2 x 16 KV heads x 128 x 2 B = 81,920 B a token
    # of history (its 52 sliding layers are bounded by the 1024-token window).
    gemma = by_model["gemma3_27b"]
    assert (gemma["max_seq_len"], gemma["kv_bytes_per_token"]) == (131072, 81920)
    assert gemma["profiles"] == ["draft_1b", "ngram4"]
    # Llama-3.1-70B: 80 x 2 x 8 x 128 x 2 B = 327,680 B; a request of 131,072 tokens holds
    # 327,680 x 131,072 B = 40 GiB (full attention only: nothing fixed besides).
    llama = by_model["llama3_1_70b"]
    assert llama["kv_bytes_per_token"] == 327680
    assert llama["kv_bytes_per_request"] == 40 << 30
    # The text form is what README shows (inside the clone: the same).
    command, body = shown("kvgen models meta-llama/Llama-3.1-70B-Instruct")
    text = kvgen(*command.split()[1:], cwd=empty)
    assert (text.returncode, text.stdout, text.stderr) == (0, body, "")


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("meta-llama/Llama-3.1-70B-Instruct", "llama3_1_70b"),
        ("google/gemma-3-27b-it", "gemma3_27b"),
        ("Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3_30b_a3b"),  # a release date is ignored
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral_7b_v0_3"),
        ("moonshotai/Kimi-K2-Instruct", "kimi_k2_instruct"),
        ("deepseek-ai/DeepSeek-R1", "deepseek_r1"),
        ("qwen3_8b", "qwen3_8b"),
    ],
)
def test_models_takes_a_hugging_face_name(name, model, empty):
    result = kvgen("models", name, "--format", "json", cwd=empty)
    assert result.returncode == 0, result.stderr
    assert [r["model"] for r in json.loads(result.stdout)] == [model]


def test_models_names_the_closest_model_for_an_unknown_name(empty):
    result = kvgen("models", "meta-llama/Llama-3.1-71B-Instruct", cwd=empty)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "kvgen: error: no family or model 'meta-llama/Llama-3.1-71B-Instruct' here or shipped "
        "with kvgen (did you mean 'llama3_1_70b'?); `kvgen models` lists them all\n"
    )
    family = kvgen("models", "gemma3", "--format", "json", cwd=empty)
    assert [r["model"] for r in json.loads(family.stdout)] == [
        "gemma3_1b", "gemma3_4b", "gemma3_12b", "gemma3_27b",
    ]  # fmt: skip


def test_plan_names_the_model_a_hugging_face_name_means(empty):
    result = kvgen("plan", "llama3", "Llama-3.1-70B-Instruct", "--gpu-memory", "40GiB", cwd=empty)
    assert result.returncode == 2
    assert result.stderr.endswith("got 'Llama-3.1-70B-Instruct' (did you mean 'llama3_1_70b'?)\n")
