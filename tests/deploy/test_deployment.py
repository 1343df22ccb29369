"""``kvgen plan --deployment FILE.toml``: several models on one node, one table."""

from __future__ import annotations

import json

import pytest
from kvgen._cli.main import main

NODE = """\
gpu = "H100-80GB"
gpus = 8

[models.llama70b]
family = "llama3"
model = "llama3_1_70b"
engine = "vllm==0.33.0"
tp_size = 4
weights = "35GiB"

[models.small]
family = "llama3"
model = "llama3_1_8b"
engine = "sglang"
tp_size = 2
weights = "16GiB"
max_batch_size = 32
"""


def run(tmp_path, capsys, text, *extra):
    path = tmp_path / "deploy.toml"
    path.write_text(text, encoding="utf-8")
    code = main(["-q", "plan", "--deployment", str(path), *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_one_table_of_budgets_capacities_and_settings(tmp_path, capsys):
    code, out, _ = run(tmp_path, capsys, NODE)
    assert code == 0
    assert out.startswith("node: 8 x H100-80GB, 6 GPUs used\n")
    # llama3_1_70b at tp 4 on vLLM 0.33.0 (fraction 0.92, block 16):
    # ceil(85,520,809,984 x 0.92) = 78,679,145,186 - 35 GiB
    # (37,580,963,840) - 4 GiB = 36,803,214,050 B; a block is 80 layers x 2 x (8 / 4 = 2 KV
    # heads) x 128 x 2 B x 16 tokens = 1,310,720 B: 28,078 blocks (28,078.6 rounded down).
    assert "--num-gpu-blocks-override 28078" in out
    assert "--kv-cache-memory-bytes 36803214050" in out
    assert "[small]" in out and "--tp-size 2" in out


def test_json_lists_every_model(tmp_path, capsys):
    code, out, _ = run(tmp_path, capsys, NODE, "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert [d["deployment"]["model"] for d in data] == ["llama3_1_70b", "llama3_1_8b"]
    assert data[0]["launch"]["fields"]["num_gpu_blocks_override"] == 28078


def test_more_gpus_than_the_node_has_exits_1(tmp_path, capsys):
    code, _, err = run(tmp_path, capsys, NODE.replace("gpus = 8", "gpus = 4"))
    assert code == 1
    assert "the models need 6 GPUs; the node has 4" in err


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "tp_size = 4",
            "tp_sise = 4",
            "deploy.toml:8:1: unknown key 'tp_sise' in [models.llama70b] (did you mean 'tp_size'?)",
        ),
        (
            'engine = "vllm==0.33.0"',
            'engine = "vllmm"',
            "deploy.toml:7:1: engine must be one of trtllm, vllm, sglang (or trtllm-v2, an "
            "alias), as NAME or NAME==VERSION; got 'vllmm' (did you mean 'vllm'?)",
        ),
        ("tp_size = 4", 'tp_size = "4"', "deploy.toml:8:1: tp_size must be an integer"),
        ('gpu = "H100-80GB"', 'gpu = "H1OO"', "deploy.toml:1:1: --gpu 'H1OO' is not a known GPU"),
        (
            'family = "llama3"\nmodel = "llama3_1_70b"',
            'family = "llama3"',
            "deploy.toml:4:1: [models.llama70b] needs model",
        ),
        ("gpus = 8", "gpus = 8\ngpus = 9", "deploy.toml:3:9: invalid TOML"),
    ],
)
def test_bad_files_are_positioned_usage_errors(tmp_path, capsys, old, new, message):
    code, out, err = run(tmp_path, capsys, NODE.replace(old, new, 1))
    assert code == 2
    assert message in err
    assert out == "" and "Traceback" not in err


def test_a_file_over_the_bound_is_refused(tmp_path, capsys):
    code, _, err = run(tmp_path, capsys, NODE + "#" * (1 << 20))
    assert code != 0
    assert "deploy.toml" in err and "Traceback" not in err


def test_deployment_takes_no_family(tmp_path, capsys):
    (tmp_path / "deploy.toml").write_text(NODE, encoding="utf-8")
    code = main(["-q", "plan", "llama3", "--deployment", str(tmp_path / "deploy.toml")])
    assert code == 2
    assert "give no FAMILY MODEL" in capsys.readouterr().err


def test_a_linked_or_special_deployment_file_is_refused(tmp_path, capsys):
    import os

    real = tmp_path / "real.toml"
    real.write_text(NODE, encoding="utf-8")
    (tmp_path / "link.toml").symlink_to(real)
    os.mkfifo(tmp_path / "fifo.toml")
    for name in ("link.toml", "fifo.toml"):
        code = main(["-q", "plan", "--deployment", str(tmp_path / name)])
        err = capsys.readouterr().err
        assert code == 2, name
        assert name in err and "Traceback" not in err
