"""A Hugging Face cache repository, by repository id or as a folder (issue 32).

On c2a37ec ``HF_HUB_CACHE=... kvgen import-hf microsoft/phi-4`` named the model after the
snapshot's blob hash and its header named the blob's path; a ``models--ORG--NAME`` folder was
"a directory without a config.json", and ``plan --weights`` found no safetensors in it. The
hub's layout: ``models--ORG--NAME/{refs/main, snapshots/REV/, blobs/}``, each snapshot file a
link to ``../../blobs/HASH`` (huggingface_hub's cache).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kvgen._cli.main import main

from tests.cli.test_import_hf_sources import LLAMA

REVISION = "0123456789abcdef0123456789abcdef01234567"


def fake_cache(root: Path, repo: str, *, ref: bool = True, target: Path | None = None) -> Path:
    """``root/models--ORG--NAME`` holding LLAMA's config.json as the hub lays it out (its
    link to ``target`` instead of its blob where given)."""
    repository = root / ("models--" + repo.replace("/", "--"))
    snapshot = repository / "snapshots" / REVISION
    snapshot.mkdir(parents=True)
    if ref:
        (repository / "refs").mkdir()
        (repository / "refs" / "main").write_text(REVISION)
    (repository / "blobs").mkdir()
    blob = repository / "blobs" / "5f1e0c3a"
    blob.write_bytes(LLAMA.read_bytes())
    link = Path("..", "..", "blobs", blob.name) if target is None else target
    (snapshot / "config.json").symlink_to(link)
    return repository


def imported(capsys, *argv) -> tuple[int, str, str]:
    try:
        code = main(["-q", "import-hf", *argv])
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def assert_named_from_the_repository(spec: str) -> None:
    assert "  - name: phi_4\n" in spec  # c2a37ec: the blob's hash
    assert f"# Imported by kvgen import-hf from microsoft/phi-4@{REVISION};" in spec


def test_a_repository_id_names_the_model_and_its_revision(tmp_path):
    pytest.importorskip("huggingface_hub")
    fake_cache(tmp_path, "microsoft/phi-4")
    done = subprocess.run(
        [sys.executable, "-m", "kvgen", "import-hf", "microsoft/phi-4", "--family", "phi4b"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
        env={**os.environ, "HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert_named_from_the_repository(done.stdout)
    assert "blobs" not in done.stdout


def test_a_cache_repository_folder_is_a_path(tmp_path, capsys):
    repository = fake_cache(tmp_path, "microsoft/phi-4")
    code, out, err = imported(capsys, str(repository), "--family", "phi4b")
    assert code == 0, err
    assert_named_from_the_repository(out)
    # one of its snapshot folders reads the same
    code, out, err = imported(capsys, str(repository / "snapshots" / REVISION), "--family", "p")
    assert code == 0, err
    assert_named_from_the_repository(out)
    # --model still wins
    code, out, _ = imported(capsys, str(repository), "--family", "phi4b", "--model", "mine")
    assert code == 0 and "  - name: mine\n" in out


def test_without_refs_main_the_only_snapshot_is_read_and_two_are_refused(tmp_path, capsys):
    repository = fake_cache(tmp_path, "microsoft/phi-4", ref=False)
    code, out, err = imported(capsys, str(repository), "--family", "phi4b")
    assert code == 0, err
    assert_named_from_the_repository(out)
    (repository / "snapshots" / ("f" * 40)).mkdir()
    code, out, err = imported(capsys, str(repository), "--family", "phi4b")
    assert code == 2 and out == ""
    assert "no refs/main and 2 snapshots" in err and "give the snapshot folder" in err


def test_a_folders_link_out_of_the_cache_is_never_read(tmp_path, capsys):
    secret = tmp_path / "secret.json"
    secret.write_text('{"token": "abc"}')
    repository = fake_cache(tmp_path / "hub", "org/name", target=secret)
    code, out, err = imported(capsys, str(repository))
    assert code == 2 and out == ""
    assert "links outside its repository" in err and "token" not in err


def _plan(capsys, weights: Path) -> tuple[int, str, str]:
    code = main(["-q", "plan", "llama3", "llama3_1_8b", "--gpu", "1GiB", "--weights", str(weights),
                 "--reserve", "0B", "--gpu-memory-utilization", "0.5", "--max-seq-len", "2048",
                 "--emit", "vllm", "--format", "json"])  # fmt: skip
    out = capsys.readouterr()
    return code, out.out, out.err


def test_plan_weights_takes_a_cache_repository_folder(tmp_path, capsys, monkeypatch):
    from tests.unit.test_weights import LAYER, write_safetensors

    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # the shipped llama3
    # Llama-3.1-8B's decoder shape as tests/deploy/test_emit.py's llama_8b_shaped: 32 layers,
    # k_proj/v_proj of 8 KV heads x 128 = 1,024 rows (the spec's check), tiny elsewhere.
    shapes = {
        f"model.layers.{i}.{name}": (1024, 64) if "k_proj" in name or "v_proj" in name else shape
        for i in range(32)
        for name, shape in LAYER.items()
    }
    shapes.update({"model.embed_tokens.weight": (100, 64), "model.norm.weight": (64,),
                   "lm_head.weight": (100, 64)})  # fmt: skip
    repository = tmp_path / "hub" / "models--meta-llama--Llama-3.1-8B"
    snapshot = repository / "snapshots" / REVISION
    snapshot.mkdir(parents=True)
    (repository / "blobs").mkdir()
    write_safetensors(repository / "blobs" / "5f1e0c3a", shapes)
    (snapshot / "model.safetensors").symlink_to(Path("..", "..", "blobs", "5f1e0c3a"))
    (repository / "refs").mkdir()
    (repository / "refs" / "main").write_text(REVISION)
    code, by_snapshot, err = _plan(capsys, snapshot)
    assert code == 0, err
    code, by_repository, err = _plan(capsys, repository)
    assert code == 0, err  # c2a37ec: "no *.safetensors file"
    assert json.loads(by_repository)["fields"] == json.loads(by_snapshot)["fields"]
    # 1 GiB x 0.5 - 10,519,680 B of weights (llama_8b_shaped's sum) = 526,351,232 B of KV
    assert json.loads(by_repository)["fields"]["kv_cache_memory_bytes"] == 526_351_232
