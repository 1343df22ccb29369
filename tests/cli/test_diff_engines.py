"""``kvgen diff --engine``: each engine's capacity changes, per engine, in a block of their own
(issue 20); without the flag the report is as it was.

Spec ``heads`` (tpb 32, bf16): 4 full-attention layers of 8 KV heads x 128, so one token is
4 x 2 x 8 x 128 x 2 B = 16,384 B; at --gpu-memory 1GiB --max-seq-len 4096:
  vLLM 0.33.0 (block 16): a block is 16 x 16,384 = 262,144 B, 2**30 / 262,144 = 4,096 blocks;
    one request of 4,096 tokens takes 256 blocks: concurrency 4,096 / 256 = 16.000, KV tokens
    16 x 4,096 = 65,536.
  With 4 KV heads: 8,192 B/token, 8,192 blocks of 131,072 B: concurrency 32.000, 131,072 tokens.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from kvgen._cli.main import main

HEADS = """\
schema_version: 1
family: heads
tokens_per_block: 32
kv_cache_dtype: bf16
models:
  - name: heads_a
    max_seq_len: 32768
    layer_kinds:
      full: {attention: full, kv_heads: 8, head_dim: 128}
    layers: {count: 4, pattern: [full]}
"""
SPEC = Path("schema/families/heads.yaml")
FLAGS = ("--gpu-memory", "1GiB", "--max-seq-len", "4096")


def git(*args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)  # fmt: skip


@pytest.fixture
def repo(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    SPEC.parent.mkdir(parents=True)
    SPEC.write_text(HEADS)
    assert main(["-q", "generate"]) == 0
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "heads")
    SPEC.write_text(HEADS.replace("kv_heads: 8", "kv_heads: 4"))
    capsys.readouterr()
    return tmp_path


def diff(capsys, *argv):
    code = main(["-q", "diff", *FLAGS, *argv])
    return code, capsys.readouterr().out


def test_engine_changes_are_reported_per_engine(repo, capsys):
    code, out = diff(capsys, "--engine", "vllm")
    assert code == 0  # fewer bytes per token: capacity-increasing, nothing to acknowledge
    assert (
        "engine capacity changes (vLLM 0.34.0 (vllm==0.34.0); informational, not classified):\n"
    ) in out
    assert (
        "  vllm heads/heads_a/none: 65536 KV tokens, 16.000 requests at max_seq_len -> "
        "131072 KV tokens, 32.000 requests at max_seq_len\n"
    ) in out


def test_without_engine_the_report_has_no_engine_block(repo, capsys):
    _, out = diff(capsys)
    assert "engine capacity" not in out
    _, out = diff(capsys, "--format", "json")
    data = json.loads(out)
    assert "engine_changes" not in data and "engines" not in data["deployment"]


def test_engine_changes_in_json_and_markdown(repo, capsys):
    _, out = diff(capsys, "--engine", "vllm", "sglang", "--format", "json")
    rows = {row["engine"]: row for row in json.loads(out)["engine_changes"]}
    assert rows["vllm"]["old"] == [65536, 16.0] and rows["vllm"]["new"] == [131072, 32.0]
    assert set(rows) == {"vllm", "sglang"}
    _, out = diff(capsys, "--engine", "vllm", "--format", "markdown")
    assert (
        "**engine capacity changes (vLLM 0.34.0 (vllm==0.34.0); informational, not classified):**"
    ) in out


def test_each_release_asked_is_answered_and_named(repo, capsys):
    # Issue 30: --engine vllm==0.33.0 is that release, not the default one under its name.
    # 4 layers x 2 x 4 KV heads x 128 x 2 B = 8,192 B/token after; 0.33.0's block of 16 and
    # 0.34.0's of 64 both divide 1 GiB's 131,072 tokens, so the figures agree and the rows
    # are told apart by their release alone.
    _, out = diff(capsys, "--engine", "vllm==0.33.0", "vllm", "--format", "json")
    rows = {row["engine"]: row for row in json.loads(out)["engine_changes"]}
    assert set(rows) == {"vllm==0.33.0", "vllm"}
    assert rows["vllm==0.33.0"]["new"] == rows["vllm"]["new"] == [131072, 32.0]
    _, out = diff(capsys, "--engine", "vllm==0.33.0", "vllm")
    assert (
        "engine capacity changes (vLLM 0.33.0 (vllm==0.33.0); vLLM 0.34.0 (vllm==0.34.0); "
        "informational, not classified):\n"
    ) in out
    assert "  vllm==0.33.0 heads/heads_a/none: 65536 KV tokens" in out


def test_diff_what_ifs_pp_size_and_kv_cache_dtype(repo, capsys):
    # pp 2: each rank holds 2 of the 4 layers: 2 x 2 x 8 x 128 x 2 = 8,192 B/token before,
    # 4,096 after; 1 GiB / 8,192 = 131,072 tokens -> 262,144 (no window: intercept 0).
    code, out = diff(capsys, "--pp-size", "2")
    assert code == 0
    assert ", semantics trtllm-v2, pp_size 2\n" in out
    assert "    max tokens  131072 -> 262144" in out
    # fp8 on the whole model: 4 x 2 x 8 x 128 x 1 = 8,192 B/token before, 4,096 after.
    code, out = diff(capsys, "--kv-cache-dtype", "fp8", "--format", "json")
    data = json.loads(out)
    assert data["deployment"]["kv_cache_dtype"] == "fp8"
    (change,) = [c for c in data["changes"] if c["manager"] == "target"]
    assert (change["old"]["slope"], change["new"]["slope"]) == (8192, 4096)


def test_rope_scaled_takes_max_seq_len_past_the_native_length(repo, capsys):
    # heads_a is native 32,768; at 2 GiB a vLLM block of 262,144 B gives 8,192 blocks (8 heads)
    # and 16,384 (4 heads). --max-seq-len 65536 is capped at 32,768 without --rope-scaled: a
    # request holds 32,768 / 16 = 2,048 blocks, 4.000 -> 8.000 requests. With it, 65,536 / 16
    # = 4,096 blocks a request: 2.000 -> 4.000, and the report says the length is past native.
    argv = ("--engine", "vllm", "--max-seq-len", "65536", "--gpu-memory", "2GiB")
    code, out = diff(capsys, *argv)
    assert code == 0
    assert "max_seq_len min(native, 65536)" in out
    assert (
        "  vllm heads/heads_a/none: 131072 KV tokens, 4.000 requests at max_seq_len -> "
        "262144 KV tokens, 8.000 requests at max_seq_len\n"
    ) in out
    code, out = diff(capsys, *argv, "--rope-scaled")
    assert code == 0
    assert "max_seq_len 65536 (RoPE-scaled past native lengths)" in out
    assert (
        "  vllm heads/heads_a/none: 131072 KV tokens, 2.000 requests at max_seq_len -> "
        "262144 KV tokens, 4.000 requests at max_seq_len\n"
    ) in out
    _, out = diff(capsys, *argv, "--rope-scaled", "--format", "json")
    assert json.loads(out)["deployment"]["rope_scaled"] is True
    _, out = diff(capsys, *argv, "--format", "json")
    assert "rope_scaled" not in json.loads(out)["deployment"]  # the default report as it was
