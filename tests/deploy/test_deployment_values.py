"""A deployment file's values go through the validators of the flags they stand for, and JSON
output is strict JSON (issue 29, W1 and W2).

On c2a37ec a file with ``gpu_memory`` took ``gpu_memory_utilization`` NaN, infinity or 7 and
emitted ``--mem-fraction-static nan`` / ``free_gpu_memory_fraction: Infinity`` with "fits
yes", ``--format json`` printed ``NaN`` (not JSON), and ``max_batch_size = 10**21`` was
emitted as is. ``kvgen plan --gpu-memory-utilization nan`` was always a usage error; the file
now says the same at the key's position.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from kvgen._cli.main import main

ROOT = Path(__file__).resolve().parents[2]

NODE = """\
gpu = "H100-80GB"
gpus = 8

[models.a]
family = "llama3"
model = "llama3_1_8b"
engine = "{engine}"
gpu_memory = "80GiB"
max_seq_len = 8192
{extra}
"""


def run(tmp_path, capsys, text, *extra):
    path = tmp_path / "deploy.toml"
    path.write_text(text, encoding="utf-8")
    code = main(["-q", "plan", "--deployment", str(path), *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


FRACTIONS = ["nan", "inf", "-inf", "-3", "7", "0", "0.0", "1.5", "true", '"0.9"', "[0.9]"]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
@pytest.mark.parametrize("value", FRACTIONS)
def test_a_fraction_outside_0_1_is_refused_at_its_key(tmp_path, capsys, engine, value):
    text = NODE.format(engine=engine, extra=f"gpu_memory_utilization = {value}")
    for form in ("text", "json"):
        code, out, err = run(tmp_path, capsys, text, "--format", form)
        assert code == 2, (value, out)
        assert "deploy.toml:10:1: gpu_memory_utilization" in err, err
        assert out == "" and "Traceback" not in err


def test_the_flag_and_the_file_refuse_the_same_fraction(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:  # argparse's usage error
        main(["-q", "plan", "llama3", "llama3_1_8b", "--emit", "sglang",
              "--gpu-memory", "80GiB", "--gpu-memory-utilization", "nan"])  # fmt: skip
    flag = capsys.readouterr().err
    assert exit_.value.code == 2 and "expected a fraction in (0, 1], got 'nan'" in flag
    text = NODE.format(engine="sglang", extra="gpu_memory_utilization = nan")
    code, _, err = run(tmp_path, capsys, text)
    assert code == 2 and "gpu_memory_utilization: expected a fraction in (0, 1], got nan" in err


@pytest.mark.parametrize("value", ["0.9", "1", "1.0", "0.05"])
def test_a_fraction_in_range_plans(tmp_path, capsys, value):
    text = NODE.format(engine="sglang", extra=f"gpu_memory_utilization = {value}")
    code, out, err = run(tmp_path, capsys, text)
    assert code == 0, err
    assert f"--mem-fraction-static {float(value):g}" in out


@pytest.mark.parametrize(
    "key", ["max_batch_size", "max_num_tokens", "max_seq_len", "tp_size", "block_size"]
)
@pytest.mark.parametrize("value", [10**21, 1 << 63, 0, -5])
def test_a_count_outside_the_flags_range_is_refused(tmp_path, capsys, key, value):
    # The flags take 1 .. 2**63 - 1 (kvgen._util.units.positive_int); so does the file.
    text = NODE.format(engine="vllm", extra="").replace("max_seq_len = 8192\n", "")
    text += f"{key} = {value}\n"
    code, out, err = run(tmp_path, capsys, text)
    assert code == 2, (key, value, out)
    assert f"deploy.toml:10:1: {key}: expected a positive integer up to 2**63 - 1" in err
    assert out == ""


@pytest.mark.parametrize("value", [10**21, 0])
def test_the_node_gpus_are_a_count_too(tmp_path, capsys, value):
    text = NODE.format(engine="vllm", extra="").replace("gpus = 8", f"gpus = {value}")
    code, _, err = run(tmp_path, capsys, text)
    assert code == 2 and "deploy.toml:2:1: gpus: expected a positive integer" in err


def test_a_size_without_a_unit_is_refused_as_the_flag_refuses_it(tmp_path, capsys):
    # --gpu-memory 80 is refused (did you mean 80GiB?); the file's gpu_memory = "80" too.
    text = NODE.format(engine="vllm", extra="").replace('"80GiB"', '"80"')
    code, _, err = run(tmp_path, capsys, text)
    assert code == 2 and "deploy.toml:8:1: gpu_memory: size '80' has no unit" in err


def test_json_output_is_strict_json(tmp_path, capsys):
    text = NODE.format(engine="trtllm", extra="gpu_memory_utilization = 1")
    code, out, _ = run(tmp_path, capsys, text, "--format", "json")
    assert code == 0

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in JSON output")

    data = json.loads(out, parse_constant=refuse)  # one model: its plan, not a list
    assert data["deployment"]["fraction"] == 1.0


def _dumps_calls(path: Path) -> list[tuple[int, bool]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("dumps", "dump")
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "json"
        ):
            strict = any(
                k.arg == "allow_nan" and isinstance(k.value, ast.Constant)
                and k.value.value is False
                for k in node.keywords
            )  # fmt: skip
            calls.append((node.lineno, strict))
    return calls


def test_every_json_writer_refuses_nan_and_infinity():
    # json.dumps writes NaN, Infinity and -Infinity unless told not to: none of them is JSON.
    loose = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "generator").rglob("*.py"))
        for line, strict in _dumps_calls(path)
        if not strict
    ]
    assert loose == []
    assert len([c for p in (ROOT / "generator").rglob("*.py") for c in _dumps_calls(p)]) >= 10


@pytest.mark.parametrize("value", ["1000000000000000000000", "9223372036854775808", "0"])
def test_the_config_deployment_table_takes_the_flags_counts(tmp_path, capsys, monkeypatch, value):
    # [tool.kvgen.deployment] / kvgen.toml [deployment] holds defaults of the same flags.
    (tmp_path / "kvgen.toml").write_text(f"[deployment]\nmax_batch_size = {value}\n")
    monkeypatch.chdir(tmp_path)
    code = main(["-q", "plan", "llama3", "llama3_1_8b", "--generated", str(ROOT / "generated")])
    err = capsys.readouterr().err
    assert code == 2
    assert "kvgen.toml:2:1: max_batch_size must be a positive integer up to 2**63 - 1" in err
