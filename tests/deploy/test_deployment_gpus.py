"""Issue 32, "Deployment files and GPUs": replicas emitted as the engine's data-parallel
setting, a deployment file's ``checkpoint_size`` divided per rank by tp and ``gpus`` per model,
and ``--deployment --format args|yaml`` printing each model's launch (one block per model).
Each test fails on c2a37ec (no --data-parallel-size / --dp-size; the keys were unknown; the
format printed the text report).

Hand figures: H100-80GB is 85520809984 B (79.65 GiB, kvgen._deploy.gpus); vLLM's budget per rank
is ceil(0.92 x 85520809984) - weights - 4 GiB reserve; 132 GiB over tp 4 is 33 GiB per rank, so
the budget is 78679145186 - 35433480192 - 4294967296 = 38950697698 B (36.28 GiB).
"""

from __future__ import annotations

from kvgen._cli.main import main

from tests.cli.cli_support import _in_repo, run  # noqa: F401  # _in_repo: autouse fixture

MODEL = ("llama3", "llama3_1_8b", "--gpu", "H100-80GB", "--weights", "8GiB")


def test_replicas_are_emitted_as_vllm_data_parallel_size(capsys):
    code, out, _ = run(capsys, "plan", *MODEL, "--gpus", "4", "--tp-size", "2", "--emit", "vllm")
    assert code == 0
    assert "4 GPUs: 2 replicas of tp x pp = 2 ranks" in out
    assert "--tensor-parallel-size 2" in out and "--data-parallel-size 2" in out


def test_replicas_are_emitted_as_sglang_dp_size(capsys):
    code, out, _ = run(
        capsys, "plan", *MODEL, "--gpus", "4", "--tp-size", "2", "--emit", "sglang", "--format",
        "args",
    )  # fmt: skip
    assert code == 0 and "--dp-size 2" in out


def test_one_replica_emits_no_data_parallel_setting(capsys):
    code, out, _ = run(capsys, "plan", *MODEL, "--gpus", "2", "--tp-size", "2", "--emit", "vllm")
    assert code == 0 and "data-parallel" not in out


NODE = """\
gpu = "H100-80GB"
gpus = 8

[models.llama70b]
family = "llama3"
model = "llama3_1_70b"
engine = "vllm==0.33.0"
tp_size = 4
checkpoint_size = "132GiB"

[models.small]
family = "llama3"
model = "llama3_1_8b"
engine = "sglang"
tp_size = 2
gpus = 4
weights = "16GiB"
"""


def _deploy(tmp_path, capsys, text, *extra):
    path = tmp_path / "deploy.toml"
    path.write_text(text, encoding="utf-8")
    code = main(["-q", "plan", "--deployment", str(path), *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_checkpoint_size_is_divided_by_tp_and_gpus_counted(tmp_path, capsys):
    code, out, _ = _deploy(tmp_path, capsys, NODE)
    assert code == 0
    assert "8 GPUs used" in out  # 4 for llama70b, 4 (2 replicas of tp 2) for small
    assert "weights per rank 33 GiB (35433480192 B)" in out
    assert "36.28 GiB KV budget per rank (38950697698 B)" in out
    assert "4 GPUs: 2 replicas of tp x pp = 2 ranks" in out


def test_weights_and_checkpoint_size_together_are_refused(tmp_path, capsys):
    text = NODE.replace(
        'checkpoint_size = "132GiB"', 'checkpoint_size = "132GiB"\nweights = "1GiB"'
    )
    code, _, err = _deploy(tmp_path, capsys, text)
    assert code == 2 and "not both" in err and "deploy.toml:" in err


def test_deployment_format_args_prints_each_models_launch(tmp_path, capsys):
    code, out, _ = _deploy(tmp_path, capsys, NODE, "--format", "args")
    assert code == 0
    blocks = out.split("\n\n")
    assert blocks[0].startswith(
        "# [models.llama70b] vLLM 0.33.0 (vllm==0.33.0): vllm serve flags\n"
    )
    assert "--kv-cache-memory-bytes 38950697698" in blocks[0]
    assert blocks[1].startswith(
        "# [models.small] SGLang 0.5.23 (sglang==0.5.23): python -m sglang.launch_server flags\n"
    )
    assert "--dp-size 2" in blocks[1] and "GPU KV budget" not in out  # no text report


def test_deployment_format_yaml_prints_fields(tmp_path, capsys):
    code, out, _ = _deploy(tmp_path, capsys, NODE, "--format", "yaml")
    assert code == 0
    assert "max_model_len: 32768" in out and "dp_size: 2" in out
