"""``--engine NAME[==VERSION]`` and ``--emit NAME[==VERSION]`` (issue 28, engines as values): one
name for TensorRT-LLM (``trtllm``; ``trtllm-v2`` kept as an alias), a release selected by its
version or, without one, its default; an unknown release a usage error naming the
releases modelled. The printed text keeps c2a37ec's label (``trtllm-v2``) whatever the name
given, so every printed number and word stays as it was."""

from __future__ import annotations

import json

import pytest

from tests.cli.cli_support import REPO, _in_repo, run  # noqa: F401  # _in_repo: autouse fixture

LLAMA = ("llama3", "llama3_1_8b", "--gpu-memory", "40GiB")
HARDWARE = ("llama3", "llama3_1_70b", "--gpu", "H100-80GB", "--tp-size", "4", "--weights",
            "33GiB", "--max-batch-size", "64")  # fmt: skip


@pytest.mark.parametrize(
    "names",
    [
        ("trtllm", "trtllm-v2", "trtllm==38198e34", "trtllm-v2==38198e34"),
        ("trtllm==early-2026", "trtllm-v2==early-2026"),
        ("vllm", "vllm==0.34.0"),
        ("vllm==0.33.0",),
        ("sglang", "sglang==0.5.23"),
    ],
)
def test_every_name_of_a_release_plans_alike(capsys, names: tuple[str, ...]):
    outputs = {run(capsys, "plan", *LLAMA, "--engine", name) for name in names}
    assert len(outputs) == 1
    code, out, _ = outputs.pop()
    assert code == 0
    label = "trtllm-v2" if names[0].startswith("trtllm") else names[0].partition("==")[0]
    assert f"engine {label} (--engine): " in out


def test_an_unknown_release_is_a_usage_error_naming_the_releases_modelled(capsys):
    code, out, err = run(capsys, "plan", *LLAMA, "--engine", "vllm==0.35.0")
    assert code == 2 and out == ""
    assert (
        "argument --engine: engine vllm release '0.35.0' is not modelled; releases modelled: "
        "0.33.0, 0.34.0 (default: 0.34.0)"
    ) in err


def test_an_unknown_engine_is_a_usage_error_with_a_suggestion(capsys):
    code, _, err = run(capsys, "compare", *LLAMA, "--engine", "sglng")
    assert code == 2
    assert "engine must be one of trtllm, vllm, sglang (or trtllm-v2, an alias)" in err
    assert "(did you mean 'sglang'?)" in err


def test_emit_takes_the_same_names_and_prints_the_same_settings(capsys):
    emitted = [
        run(capsys, "plan", *HARDWARE, "--emit", name, "--format", "json")
        for name in ("trtllm", "trtllm-v2", "trtllm==38198e34")
    ]
    assert emitted[0][0] == 0 and len(set(emitted)) == 1
    launch = json.loads(emitted[0][1])
    assert (launch["engine"], launch["version"]) == ("trtllm-v2", "V2 38198e34 (cost-model §11)")
    early = json.loads(run(capsys, "plan", *HARDWARE, "--emit", "trtllm==early-2026",
                           "--format", "json")[1])  # fmt: skip
    assert early["version"] == "V2 early-2026 (cost-model §4)"
    vllm = {run(capsys, "plan", *HARDWARE, "--emit", name) for name in ("vllm", "vllm==0.34.0")}
    assert len(vllm) == 1
    older = run(capsys, "plan", *HARDWARE, "--emit", "vllm==0.33.0")
    assert older[0] == 0 and older not in vllm


def test_compare_rows_are_one_per_release_in_the_registrys_order(capsys):
    code, out, _ = run(
        capsys, "compare", *LLAMA, "--engine", "sglang", "trtllm", "vllm==0.33.0", "trtllm-v2",
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    rows = json.loads(out)["engines"]
    assert [(r["engine"], r["version"]) for r in rows] == [
        ("trtllm-v2", "V2 38198e34 (cost-model §11)"), ("vllm", "0.33.0"), ("sglang", "0.5.23"),
    ]  # fmt: skip


@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_the_project_engine_takes_a_release_too(capsys, tmp_path, monkeypatch, version):
    (tmp_path / "kvgen.toml").write_text(
        f'[deployment]\nengine = "vllm=={version}"\n', encoding="utf-8"
    )
    (tmp_path / "generated").symlink_to(REPO / "generated", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "plan", *LLAMA)
    assert code == 0
    assert f"engine vllm (engine of [tool.kvgen.deployment]): vLLM {version}" in out


def test_a_deployment_file_names_its_engines_as_the_flags_do(capsys, tmp_path):
    node = """gpu = "H100-80GB"
[models.a]
family = "llama3"
model = "llama3_1_8b"
engine = "ENGINE"
weights = "16GiB"
"""
    outputs = []
    for engine in ("trtllm", "trtllm-v2==38198e34", "vllm==0.33.0", "vllm==0.34.0"):
        path = tmp_path / f"{engine.replace('=', '_')}.toml"
        path.write_text(node.replace("ENGINE", engine), encoding="utf-8")
        code, out, err = run(capsys, "plan", "--deployment", str(path), "--format", "json")
        assert code == 0, err
        outputs.append(json.loads(out))
    assert outputs[0] == outputs[1]
    assert outputs[0]["deployment"]["engine"] == "trtllm-v2"
    assert outputs[2]["deployment"]["engine"] == "vllm"
    assert outputs[2]["budget"]["fraction_field"] == "gpu_memory_utilization"
    # each release's own memory default: 0.92 on 0.33.0, 1.0 on 0.34.0 (extensible KV cache)
    assert [o["budget"]["fraction"] for o in outputs[2:]] == [0.92, 1.0]
    assert [o["engine_release"] for o in outputs[2:]] == [
        "vLLM 0.33.0 (vllm==0.33.0)", "vLLM 0.34.0 (vllm==0.34.0)"
    ]  # fmt: skip
