"""Issue 30: every answer and every emitted file names the engine release it is for, ``kvgen
engines`` lists the releases modelled and how each differs, and ``plan`` warns where the
engine installed beside kvgen is at another release (read from its package metadata, never
imported). The naming reads ``Release.described`` for every engine, so a TensorRT-LLM revision
is named by the same code as a vLLM release."""

from __future__ import annotations

import json

import pytest
from kvgen._cli.main import main
from kvgen._engines.installed import installed_version, release_warning
from kvgen.sizing.engines_registry import RELEASES, release

PLAN = ["llama3", "llama3_1_8b", "--gpu-memory", "40GiB", "--max-seq-len", "8192"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["-q", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("engine", ["vllm", "vllm==0.33.0", "sglang", "trtllm"])
def test_plan_emit_names_the_release_in_text_json_and_yaml(
    capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    found = release(engine)
    code, out, _ = run(capsys, "plan", *PLAN, "--emit", engine)
    assert code == 0
    assert out.splitlines()[0].startswith(f"llama3/llama3_1_8b on {found.described}: ")
    code, out, _ = run(capsys, "plan", *PLAN, "--emit", engine, "--format", "json")
    assert code == 0 and json.loads(out)["release"] == found.described
    code, out, _ = run(capsys, "plan", *PLAN, "--emit", engine, "--format", "yaml")
    assert code == 0 and out.splitlines()[0] == f"# for {found.described}"
    code, out, _ = run(capsys, "plan", *PLAN, "--engine", engine, "--gpu", "H100-80GB",
                       "--weights", "16GiB", "--format", "json")  # fmt: skip
    assert json.loads(out)["engine_release"] == found.described


@pytest.mark.parametrize("engine", ["vllm", "vllm==0.33.0", "sglang"])
def test_args_name_the_release_on_stderr_and_keep_stdout_flags_alone(
    capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    # `vllm serve MODEL $(kvgen plan ... --format args)` word-splits stdout: a comment line
    # there would become arguments, so the release goes to stderr, in the YAML's words.
    found = release(engine)
    code, out, err = run(capsys, "plan", *PLAN, "--emit", engine, "--format", "args")
    assert code == 0
    assert all(line.startswith("  --") for line in out.splitlines())
    launcher = found.engine.settings.launcher
    assert err.splitlines() == [f"# for {found.described}: {launcher}"]


def test_the_default_vllm_plan_names_0_34_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", *PLAN, "--emit", "vllm")
    assert code == 0 and "on vLLM 0.34.0 (vllm==0.34.0):" in out


def test_compare_names_each_rows_release(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compare", *PLAN, "--engine", "vllm==0.33.0", "vllm", "sglang"]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert (
        "  releases: vLLM 0.33.0 (vllm==0.33.0); vLLM 0.34.0 (vllm==0.34.0); "
        "SGLang 0.5.23 (sglang==0.5.23)" in out.splitlines()
    )
    code, out, _ = run(capsys, *argv, "--format", "markdown")
    assert "releases: vLLM 0.33.0 (vllm==0.33.0);" in out
    code, out, _ = run(capsys, *argv, "--format", "json")
    rows = json.loads(out)["engines"]
    assert [r["release"] for r in rows] == [
        "vLLM 0.33.0 (vllm==0.33.0)", "vLLM 0.34.0 (vllm==0.34.0)", "SGLang 0.5.23 (sglang==0.5.23)"
    ]  # fmt: skip


def test_deployment_launches_name_each_models_release(tmp_path, capsys) -> None:
    path = tmp_path / "deploy.toml"
    path.write_text(
        'gpu = "H100-80GB"\ngpus = 2\n\n[models.a]\nfamily = "llama3"\nmodel = "llama3_1_8b"\n'
        'engine = "vllm==0.33.0"\nweights = "16GiB"\n\n[models.b]\nfamily = "llama3"\n'
        'model = "llama3_1_8b"\nengine = "vllm"\nweights = "16GiB"\n',
        encoding="utf-8",
    )
    code, out, _ = run(capsys, "plan", "--deployment", str(path), "--format", "args")
    assert code == 0
    blocks = out.split("\n\n")
    assert blocks[0].startswith("# [models.a] vLLM 0.33.0 (vllm==0.33.0): vllm serve flags\n")
    assert blocks[1].startswith("# [models.b] vLLM 0.34.0 (vllm==0.34.0): vllm serve flags\n")
    assert "--block-size 16" in blocks[0] and "--block-size 64" in blocks[1]


def test_kvgen_engines_lists_every_release_and_what_differs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "engines", "--format", "json")
    assert code == 0
    listed = [r["release"] for e in json.loads(out) for r in e["releases"]]
    assert listed == [r.spelling for r in RELEASES]
    vllm = next(e for e in json.loads(out) if e["engine"] == "vllm")["releases"]
    assert [(r["release"], r["default"], r["block_size"]) for r in vllm] == [
        ("vllm==0.33.0", False, 16), ("vllm==0.34.0", True, 64)
    ]  # fmt: skip
    assert vllm[1]["differs_from"] == {
        "release": "vllm==0.33.0",
        "fields": ["block_size", "memory_fraction", "refuses", "launch_notes"],
    }
    assert vllm[1]["memory_fraction"]["default"] == 1.0
    code, out, _ = run(capsys, "engines")
    assert "  vllm==0.34.0 (default): vLLM 0.34.0" in out
    assert "differs from vllm==0.33.0: block_size, memory_fraction, refuses, launch_notes" in out
    assert "parallel_drafting is only supported by the dflash and dspark methods" in out


def test_installed_version_is_read_from_metadata_without_importing(tmp_path, monkeypatch) -> None:
    info = tmp_path / "vllm-0.35.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.35.0+cu128\n")
    # a package of that name that fails on import: reading the version must not import it
    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "__init__.py").write_text("raise SystemExit('imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert installed_version(release("vllm").engine) == "0.35.0"
    assert installed_version(release("vllm").engine._replace(distribution="no-such-engine")) is None
    assert installed_version(release("vllm").engine._replace(distribution="")) is None


def test_release_warning_names_what_is_installed_and_what_is_planned() -> None:
    plain = release("vllm")
    assert release_warning(plain, None) is None
    assert release_warning(plain, "0.34.0") is None
    said = release_warning(plain, "0.35.0")
    assert said == (
        "vLLM 0.35.0 is installed here, a release kvgen does not model (it models 0.33.0, "
        "0.34.0): this plan answers for vLLM 0.34.0 (vllm==0.34.0)"
    )
    said = release_warning(plain, "0.33.0")
    assert said is not None and said.endswith("--engine vllm==0.33.0 answers for the one installed")


@pytest.mark.parametrize("argv", [["--engine", "vllm"], ["--emit", "vllm"]])
def test_plan_warns_where_the_installed_release_is_not_modelled(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    import kvgen._engines.installed as installed

    monkeypatch.setattr(installed, "installed_version", lambda engine: "0.35.0")
    code = main(["plan", *PLAN, *argv])
    err = capsys.readouterr().err
    assert code == 0
    assert "warning: vLLM 0.35.0 is installed here, a release kvgen does not model" in err
    monkeypatch.setattr(installed, "installed_version", lambda engine: "0.34.0")
    main(["plan", *PLAN, *argv])
    assert "installed here" not in capsys.readouterr().err
