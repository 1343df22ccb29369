"""``kvgen import-hf`` takes a config.json, a model directory, or a repository id already in
the local Hugging Face cache (read with huggingface_hub's offline lookup, never a download)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kvgen._cli.main import main

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "tests" / "fixtures" / "hf" / "llama-3.1-8b.json"


def test_a_model_directory_reads_its_config_json(tmp_path: Path, capsys):
    (tmp_path / "config.json").write_bytes(LLAMA.read_bytes())
    assert main(["import-hf", str(tmp_path)]) == 0
    assert "kv_heads: 8" in capsys.readouterr().out


def test_a_directory_without_config_json_is_a_usage_error(tmp_path: Path, capsys):
    assert main(["import-hf", str(tmp_path)]) == 2
    assert "is a directory without a config.json" in capsys.readouterr().err


def _fake_cache(root: Path, repo: str) -> None:
    """The Hugging Face hub cache layout: models--ORG--NAME/{refs/main, snapshots/REV/,
    blobs/}, the snapshot's file a link to its blob."""
    folder = root / ("models--" + repo.replace("/", "--"))
    revision = "0123456789abcdef0123456789abcdef01234567"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(revision)
    snapshot = folder / "snapshots" / revision
    snapshot.mkdir(parents=True)
    (folder / "blobs").mkdir()
    blob = folder / "blobs" / "5f1e0c3a"
    blob.write_bytes(LLAMA.read_bytes())
    (snapshot / "config.json").symlink_to(Path("..", "..", "blobs", blob.name))  # as the hub


def _run(args: list[str], cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "kvgen", "import-hf", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cache,
        timeout=120,
    )


def test_a_repository_id_is_read_from_the_offline_cache(tmp_path: Path):
    pytest.importorskip("huggingface_hub")
    _fake_cache(tmp_path, "meta-llama/Llama-3.1-8B")
    done = _run(["meta-llama/Llama-3.1-8B"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "kv_heads: 8" in done.stdout


def test_a_repository_id_not_in_the_cache_says_so(tmp_path: Path):
    pytest.importorskip("huggingface_hub")
    done = _run(["org/not-there"], tmp_path)
    assert done.returncode == 2
    assert "no config.json in the local Hugging Face cache" in done.stderr
    assert "never downloads" in done.stderr


def test_without_huggingface_hub_a_repository_id_is_a_clear_message(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import fails
    assert main(["import-hf", "org/not-a-file"]) == 2
    err = capsys.readouterr().err
    assert "needs huggingface_hub" in err and "Traceback" not in err


def test_notes_go_to_stderr_and_the_spec_to_stdout(tmp_path: Path, capsys):
    config = json.loads(LLAMA.read_text())
    config["type_vocab_size"] = 2  # unknown, names no cache shape: noted
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config, indent=2))
    assert main(["import-hf", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "KV302 [warning] unknown config field 'type_vocab_size'" in err
    assert out.startswith("# yaml-language-server")


def test_max_seq_len_flag(tmp_path: Path, capsys):
    assert main(["import-hf", str(LLAMA), "--max-seq-len", "8192"]) == 0
    assert "max_seq_len: 8192  # kvgen import-hf --max-seq-len" in capsys.readouterr().out
    assert main(["import-hf", str(LLAMA), "--max-seq-len", "0"]) == 2


def test_an_invalid_repository_id_is_a_usage_error_not_a_crash(tmp_path: Path):
    pytest.importorskip("huggingface_hub")
    done = _run(["a/b..c"], tmp_path)
    assert done.returncode == 2
    assert "not a repository id" in done.stderr and "internal error" not in done.stderr


_NO_NETWORK = """
import socket, sys
def refuse(*args, **kwargs):
    raise SystemExit("import-hf opened a network connection")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from kvgen._cli.main import main
sys.exit(main(["import-hf", *sys.argv[1:]]))
"""


@pytest.mark.parametrize(("repo", "code"), [("meta-llama/Llama-3.1-8B", 0), ("org/absent", 2)])
def test_a_repository_id_never_touches_the_network(tmp_path: Path, repo: str, code: int):
    # HF_HUB_OFFLINE unset and an endpoint that answers nothing: a download attempt would
    # resolve or connect, which the child refuses; a cache lookup does neither
    pytest.importorskip("huggingface_hub")
    _fake_cache(tmp_path, "meta-llama/Llama-3.1-8B")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HUB_CACHE=str(tmp_path), HF_ENDPOINT="http://hub.invalid")
    done = subprocess.run(
        [sys.executable, "-c", _NO_NETWORK, repo],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert "network connection" not in done.stderr + done.stdout
    assert done.returncode == code, done.stderr
    if code == 0:
        assert "kv_heads: 8" in done.stdout
