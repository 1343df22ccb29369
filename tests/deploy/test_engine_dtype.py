"""The cache dtype each engine serves a float32 checkpoint in (issue 32).

OLMo-2-1124-13B and gemma-2-9b-it ship ``torch_dtype: float32``; import-hf writes
``kv_cache_dtype: fp32`` (the checkpoint's dtype, as transformers caches it). The engines do
not all serve it so:

- vLLM 0.33.0 / 0.34.0: ``--dtype auto`` turns a float32 model into the platform's preferred
  dtype (vllm/config/model.py ``_resolve_auto_dtype``: "# Downcast for float32 models",
  ``if config_dtype == torch.float32: config_dtype = preferred_dtype``; bfloat16 first in
  ``CudaPlatform.supported_dtypes`` at compute capability 8.0 or later), and
  ``kv_cache_dtype`` "auto" is the model dtype (vllm/utils/torch_utils.py
  ``kv_cache_dtype_str_to_dtype``). On c2a37ec kvgen planned fp32 and emitted
  ``--num-gpu-blocks-override 1784`` where vLLM caches bf16: half the budget unused.
- SGLang 0.5.23: "Following the common practice, we use float16 for float32 models"
  (bfloat16 for a gemma model_type; sglang/srt/configs/model_config.py
  ``_get_and_verify_dtype``): 2 bytes either way.
- TensorRT-LLM (PyTorch backend): the KV cache manager takes ``pretrained_config.torch_dtype``
  (the config's dtype, tensorrt_llm/_torch/model_config.py ``ModelConfig.from_pretrained``:
  "Some checkpoints lack torch_dtype, populate with dtype"); ``kv_cache_config.dtype`` takes
  only auto, fp8 or nvfp4 (tensorrt_llm/_torch/pyexecutor/model_loader.py
  ``_VALID_KV_CACHE_DTYPES``). fp32 stays fp32; another float is refused.

The vLLM launches below were fed to vLLM's own ``EngineArgs(**fields).create_engine_config()``
and KV planner on CPU (bench/engines/closed_loop_vllm.py in venvs of vLLM 0.33.0 and 0.34.0):
tests/fixtures/engines/dtype_closed_loop_vllm.json keeps what vLLM computed; the SGLang one to
SGLang 0.5.23's ServerArgs and pool sizing (bench/engines/closed_loop_sglang.py):
tests/fixtures/engines/dtype_closed_loop_sglang.json.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from kvgen._cli.main import main

ROOT = Path(__file__).resolve().parents[2]
HF = ROOT / "tests" / "fixtures" / "hf"
GOLDEN = json.loads((ROOT / "tests/fixtures/engines/dtype_closed_loop_vllm.json").read_text())
SGLANG = json.loads((ROOT / "tests/fixtures/engines/dtype_closed_loop_sglang.json").read_text())
# 43.57 GiB rounded down to whole bytes, the budget of the reproducer
BUDGET = "46782931271B"
# OLMo-2-1124-13B: 40 layers x 40 KV heads x head_dim 128 x (K + V), per token:
BF16_TOKEN = 40 * 40 * 128 * 2 * 2  # 819,200 B
FP32_TOKEN = 2 * BF16_TOKEN  # 1,638,400 B
# vLLM's 16-token page: 46,782,931,271 // (16 x 819,200) = 3,569 bf16 blocks
# (3,569 x 13,107,200 = 46,779,596,800 <= budget < 3,570 x 13,107,200), 1,784 fp32 blocks.
VLLM_BF16_BLOCKS = 46_782_931_271 // (16 * BF16_TOKEN)
VLLM_FP32_BLOCKS = 46_782_931_271 // (16 * FP32_TOKEN)
# The figures above are vLLM 0.33.0's (--engine vllm==0.33.0); plain "vllm" is 0.34.0, whose
# default block is 64 tokens: 46,782,931,271 // (64 x 819,200) = 892 bf16 blocks.
VLLM_034_BF16_BLOCKS = 46_782_931_271 // (64 * BF16_TOKEN)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project holding OLMo-2-1124-13B and gemma-2-9b as import-hf writes them (fp32)."""
    root = tmp_path_factory.mktemp("dtype")
    here = Path.cwd()
    os.chdir(root)
    try:
        assert main(["-q", "init"]) == 0
        for config, family in (("olmo-2-1124-13b.json", "olmo2"), ("gemma-2-9b.json", "gemma2x")):
            out = f"schema/families/{family}.yaml"
            argv = ["-q", "import-hf", str(HF / config), "--family", family, "--out", out]
            assert main(argv) == 0
            written = Path(out).read_text()
            assert "kv_cache_dtype: fp32  # config.json torch_dtype float32" in written
        assert main(["-q", "generate"]) == 0
    finally:
        os.chdir(here)
    return root


def plan(capsys, project, *argv):
    here = Path.cwd()
    os.chdir(project)
    try:
        try:
            code = main(["-q", "plan", *argv])
        except SystemExit as exc:
            code = exc.code
    finally:
        os.chdir(here)
    out = capsys.readouterr()
    return code, out.out, out.err


def emit(capsys, project, engine, *argv, family="olmo2", model="olmo_2_1124_13b"):
    code, out, err = plan(
        capsys,
        project,
        family,
        model,
        "--gpu-memory",
        BUDGET,
        "--max-seq-len",
        "4096",
        "--emit",
        engine,
        "--format",
        "json",
        *argv,
    )
    assert code == 0, err
    return json.loads(out)


def test_vllm_plans_the_bf16_cache_it_serves_a_float32_checkpoint_in(capsys, project):
    launch = emit(capsys, project, "vllm==0.33.0")
    assert VLLM_BF16_BLOCKS == 3569 and VLLM_FP32_BLOCKS == 1784
    assert launch["fields"]["num_gpu_blocks_override"] == VLLM_BF16_BLOCKS  # c2a37ec: 1784
    assert launch["fields"]["kv_cache_dtype"] == "auto"
    assert "dtype" not in launch["fields"]  # "auto" serves bf16 already
    assert launch["capacity"]["kv_tokens"] == 16 * VLLM_BF16_BLOCKS
    assert any("serves this fp32 checkpoint in bf16" in note for note in launch.get("notes", []))
    # vLLM's own classes, given these fields and the config.json, compute the same blocks,
    # from the override and from kv_cache_memory_bytes alone (both releases).
    for release in ("0.33.0", "0.34.0"):
        case = GOLDEN["results"][release]["auto"]
        assert case["fields"] == launch["fields"]
        assert case["num_blocks"] == case["from_bytes_alone"]["num_blocks"] == VLLM_BF16_BLOCKS
    # 0.34.0 at its own block: the same bf16 cache, 64-token blocks.
    newest = emit(capsys, project, "vllm")
    assert VLLM_034_BF16_BLOCKS == 892
    assert newest["fields"]["num_gpu_blocks_override"] == VLLM_034_BF16_BLOCKS
    assert newest["fields"]["block_size"] == 64
    assert any("serves this fp32 checkpoint in bf16" in note for note in newest["notes"])


def test_the_text_plan_says_which_dtype_the_engine_serves(capsys, project):
    code, out, _ = plan(
        capsys, project, "olmo2", "olmo_2_1124_13b", "--gpu-memory", BUDGET,
        "--engine", "vllm==0.33.0",
    )  # fmt: skip
    assert code == 0
    assert f"KV tokens {16 * VLLM_BF16_BLOCKS:,}, blocks {VLLM_BF16_BLOCKS:,}" in out
    assert "vLLM 0.33.0 serves this fp32 checkpoint in bf16 (--dtype auto:" in out
    assert "vllm/config/model.py _resolve_auto_dtype" in out
    code, out, _ = plan(
        capsys,
        project,
        "olmo2",
        "olmo_2_1124_13b",
        "--gpu",
        "H100-80GB",
        "--weights",
        "27GiB",
        "--emit",
        "vllm==0.33.0",
    )
    assert code == 0 and "note: vLLM 0.33.0 serves this fp32 checkpoint in bf16" in out


def test_an_fp32_plan_on_vllm_launches_the_model_in_float32(capsys, project):
    launch = emit(capsys, project, "vllm==0.33.0", "--kv-cache-dtype", "fp32")
    assert launch["fields"]["num_gpu_blocks_override"] == VLLM_FP32_BLOCKS
    # An explicit float kv-cache dtype must match the model's (vllm/config/cache.py
    # CacheConfig.cache_dtype), so the model dtype is what kvgen sets.
    assert launch["fields"]["kv_cache_dtype"] == "auto"
    assert launch["fields"]["dtype"] == "float32"
    for release in ("0.33.0", "0.34.0"):
        case = GOLDEN["results"][release]["fp32"]
        assert case["fields"] == launch["fields"]
        assert case["num_blocks"] == case["from_bytes_alone"]["num_blocks"] == VLLM_FP32_BLOCKS


def test_sglang_plans_its_2_byte_cache(capsys, project):
    launch = emit(capsys, project, "sglang")
    # 46,782,931,271 // 819,200 = 57,108 tokens (page size 1)
    assert launch["fields"]["max_total_tokens"] == 46_782_931_271 // BF16_TOKEN == 57108
    assert "dtype" not in launch["fields"]
    assert any("SGLang 0.5.23 serves this fp32 checkpoint in fp16" in n for n in launch["notes"])
    # SGLang's own ServerArgs and pool sizing, given these fields and the config.json: a
    # float16 cache of the same tokens, capped and from the memory alone
    assert SGLANG["fields"] == launch["fields"]
    assert SGLANG["result"]["kv_cache_dtype"] == "float16"
    assert SGLANG["result"]["max_total_num_tokens"] == 57108
    assert SGLANG["from_memory_alone"]["max_total_num_tokens"] == 57108
    forced = emit(capsys, project, "sglang", "--kv-cache-dtype", "fp32")
    assert forced["fields"]["dtype"] == "float32"
    assert forced["fields"]["max_total_tokens"] == 46_782_931_271 // FP32_TOKEN


def test_trtllm_keeps_the_checkpoints_float32_and_refuses_another_float(capsys, project):
    launch = emit(capsys, project, "trtllm")
    # the spec's 32-token page, fp32: 46,782,931,271 // (32 x 1,638,400) = 892 pages
    assert launch["capacity"]["kv_tokens"] == 892 * 32
    assert not any("serves this" in note for note in launch["notes"])
    code, _, err = plan(
        capsys,
        project,
        "olmo2",
        "olmo_2_1124_13b",
        "--gpu-memory",
        BUDGET,
        "--emit",
        "trtllm",
        "--kv-cache-dtype",
        "bf16",
    )
    assert code == 2
    assert "serves this fp32 checkpoint's cache in fp32" in err
    assert "tensorrt_llm/_torch/pyexecutor/model_loader.py _VALID_KV_CACHE_DTYPES" in err
    assert "plan without --kv-cache-dtype" in err


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_an_imported_float32_gemma2_plans_as_the_shipped_bf16_gemma2(capsys, project, engine):
    """gemma-2-9b's config (float32) imported gives the engine the answer of the shipped
    gemma2 spec (bf16, the same shape): the engine serves both in 2 bytes."""
    imported = emit(capsys, project, engine, family="gemma2x", model="gemma_2_9b")
    code, out, err = plan(
        capsys,
        ROOT,
        "gemma2",
        "gemma2_9b",
        "--gpu-memory",
        BUDGET,
        "--max-seq-len",
        "4096",
        "--emit",
        engine,
        "--format",
        "json",
    )
    assert code == 0, err
    shipped = json.loads(out)
    for key in ("kv_tokens", "num_blocks", "max_concurrency"):
        assert imported["capacity"][key] == shipped["capacity"][key], key


def test_the_release_facts_quote_the_engines_source():
    from kvgen.sizing.engines_registry import RELEASES, release

    assert release("vllm").float32_served_as == "bf16"
    assert release("sglang").float32_served_as == "fp16"
    assert all(not r.float32_served_as for r in RELEASES if r.engine.name == "trtllm")
    for each in RELEASES:
        assert ".py" in each.float32_words, each


def test_compare_answers_each_engine_in_the_dtype_it_serves(capsys, project):
    here = Path.cwd()
    os.chdir(project)
    try:
        engines = ["--engine", "trtllm", "vllm==0.33.0", "sglang"]
        code = main(["-q", "compare", "olmo2", "olmo_2_1124_13b", "--gpu-memory", BUDGET,
                     *engines, "--format", "json"])  # fmt: skip
    finally:
        os.chdir(here)
    assert code == 0
    rows = {row["engine"]: row for row in json.loads(capsys.readouterr().out)["engines"]}
    assert rows["vllm"]["num_blocks"] == VLLM_BF16_BLOCKS  # as plan --emit vllm
    assert rows["sglang"]["kv_tokens"] == 46_782_931_271 // BF16_TOKEN
    assert rows["trtllm-v2"]["kv_tokens"] == 892 * 32  # fp32, as TensorRT-LLM serves it
    assert "serves this fp32 checkpoint in bf16" in rows["vllm"]["dtype"]
    assert "dtype" not in rows["trtllm-v2"]


def _checkpoint(folder: Path, dtype: str, width: int) -> Path:
    """A header-only safetensors of OLMo-2-1124-13B's decoder shape (40 layers, k_proj/v_proj
    of 40 KV heads x 128 = 5,120 rows, the spec's check), tiny elsewhere, in ``dtype``."""
    import struct

    shapes = {"model.embed_tokens.weight": (100, 64), "model.norm.weight": (64,),
              "lm_head.weight": (100, 64)}  # fmt: skip
    for i in range(40):
        shapes[f"model.layers.{i}.self_attn.k_proj.weight"] = (5120, 64)
        shapes[f"model.layers.{i}.self_attn.v_proj.weight"] = (5120, 64)
        shapes[f"model.layers.{i}.self_attn.q_proj.weight"] = (64, 64)
        shapes[f"model.layers.{i}.input_layernorm.weight"] = (64,)
    header, offset = {}, 0
    for name, shape in sorted(shapes.items()):
        size = width
        for dim in shape:
            size *= dim
        header[name] = {
            "dtype": dtype,
            "shape": list(shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    folder.mkdir(parents=True)
    text = json.dumps(header).encode()
    with (folder / "model.safetensors").open("wb") as handle:
        handle.write(struct.pack("<Q", len(text)) + text)
        handle.truncate(8 + len(text) + offset)
    return folder


def _weights(capsys, project, engine: str, folder: Path) -> int:
    argv = ["--gpu", "H100-80GB", "--weights", str(folder), "--engine", engine, "--format", "json"]
    code, out, err = plan(capsys, project, "olmo2", "olmo_2_1124_13b", *argv)
    assert code == 0, err
    return json.loads(out)["budget"]["weights_bytes"]


def test_a_float32_checkpoints_weights_are_counted_in_the_dtype_the_engine_loads(
    capsys, project, tmp_path
):
    fp32 = _checkpoint(tmp_path / "fp32", "F32", 4)
    bf16 = _checkpoint(tmp_path / "bf16", "BF16", 2)
    # vLLM and SGLang load the float32 tensors into their 2-byte model dtype: the weights of a
    # bf16 copy of the checkpoint; TensorRT-LLM keeps float32: twice that.
    for engine in ("vllm", "sglang"):
        assert _weights(capsys, project, engine, fp32) == _weights(capsys, project, engine, bf16)
    assert _weights(capsys, project, "trtllm", fp32) == 2 * _weights(capsys, project, "vllm", fp32)


# The answer of every ``engine_capacity``, not only kvgen plan's: the generated module's own
# (its output folder's vendored runtime, stdlib only) and the Python API's from the spec.
# OLMo-2-1124-13B at max_seq_len 4096, 43.57 GiB (46,782,931,271 B), bf16 819,200 B per token:
# - vLLM 0.34.0, 64-token blocks of 52,428,800 B: 892 blocks (892 x 52,428,800 =
#   46,766,489,600 <= budget < 893 x 52,428,800 = 46,818,918,400), 892 x 64 = 57,088 tokens,
#   57,088 / 4,096 = 13.9375 requests; c2a37ec / f0f85ad: 446 fp32 blocks, 28,544 tokens.
# - vLLM 0.33.0, 16-token blocks: 3,569 blocks (above), 57,104 tokens; fp32: 1,784.
# - SGLang 0.5.23, page 1: 57,108 tokens (57,108 x 819,200 = 46,782,873,600 <= budget <
#   57,109 x 819,200); fp32 28,554.
# - TensorRT-LLM 38198e34 keeps fp32: 892 pages of 32 tokens = 28,544 tokens (above).
# A request at 4,096 tokens: 4,096 x 819,200 = 3,355,443,200 B in bf16, twice that in fp32.
SERVED = {
    "vllm": (892 * 64, 892, "bf16"),
    "vllm==0.33.0": (3569 * 16, 3569, "bf16"),
    "sglang": (57108, 57108, "fp16"),
    "trtllm": (892 * 32, 892, "fp32"),
}
IN_FP32 = {"vllm": (446 * 64, 446), "vllm==0.33.0": (1784 * 16, 1784), "sglang": (28554, 28554)}
SEQ = {"max_seq_len": 4096, "max_num_tokens": 8192}


@pytest.fixture(scope="module")
def olmo2_module(project):
    from tests.sizing_support import import_generated

    return import_generated(project / "generated/olmo2/sizing.py", "kvgen_test_dtype_out")


@pytest.fixture(scope="module")
def olmo2_family(project):
    import kvgen

    return kvgen.load_family(project / "schema/families/olmo2.yaml")


def test_hand_figures():
    assert 46_782_931_271 // (64 * BF16_TOKEN) == 892
    assert 892 * 64 * BF16_TOKEN <= 46_782_931_271 < 893 * 64 * BF16_TOKEN
    assert 57108 * BF16_TOKEN <= 46_782_931_271 < 57109 * BF16_TOKEN
    assert 46_782_931_271 // (64 * FP32_TOKEN) == 446
    assert 46_782_931_271 // FP32_TOKEN == 28554


@pytest.mark.parametrize("engine", list(SERVED))
def test_the_generated_module_answers_in_the_dtype_the_engine_serves(olmo2_module, engine):
    """The module's own engine_capacity (c2a37ec and f0f85ad: fp32 for every engine)."""
    tokens, blocks, dtype = SERVED[engine]
    assert "_kvgen_runtime" in type(olmo2_module.TABLES).__module__  # the vendored copy
    cap = olmo2_module.engine_capacity("olmo_2_1124_13b", 46_782_931_271, engine=engine, **SEQ)
    assert (cap.kv_tokens, cap.num_blocks) == (tokens, blocks)
    assert cap.request_bytes == 4096 * BF16_TOKEN * (2 if dtype == "fp32" else 1)
    assert olmo2_module.served_dtype("olmo_2_1124_13b", engine=engine) == dtype
    # the module's tables stay the checkpoint's: only the engines' answer is served
    assert olmo2_module.KV_CACHE_DTYPE == "fp32"
    assert {row.dtype for row in olmo2_module.ENGINE_MODELS["olmo_2_1124_13b"].layers} == {"fp32"}


@pytest.mark.parametrize("engine", list(SERVED))
def test_kvgen_engine_capacity_answers_as_the_module(olmo2_family, olmo2_module, engine):
    """``kvgen.engine_capacity(family, ...)`` (docs/api.md): the module's answer, from the spec."""
    import kvgen

    tokens, blocks, _ = SERVED[engine]
    cap = kvgen.engine_capacity(olmo2_family, "olmo_2_1124_13b", 46_782_931_271, engine=engine,
                                **SEQ)  # fmt: skip
    assert (cap.kv_tokens, cap.num_blocks) == (tokens, blocks)
    module = olmo2_module.engine_capacity("olmo_2_1124_13b", 46_782_931_271, engine=engine, **SEQ)
    assert cap == module


@pytest.mark.parametrize("engine", list(IN_FP32))
def test_dtype_fp32_is_the_engine_launched_in_float32(olmo2_family, olmo2_module, engine):
    """``dtype="fp32"``: what ``plan --kv-cache-dtype fp32`` emits (--dtype float32)."""
    import kvgen

    for answer in (
        olmo2_module.engine_capacity("olmo_2_1124_13b", 46_782_931_271, engine=engine,
                                     dtype="fp32", **SEQ),
        kvgen.engine_capacity(olmo2_family, "olmo_2_1124_13b", 46_782_931_271, engine=engine,
                              dtype="fp32", **SEQ),
    ):  # fmt: skip
        assert (answer.kv_tokens, answer.num_blocks) == IN_FP32[engine]
    assert olmo2_module.served_dtype("olmo_2_1124_13b", engine=engine, dtype="fp32") == "fp32"
    # and the default answer again: the fp32 plan is cached apart
    cap = olmo2_module.engine_capacity("olmo_2_1124_13b", 46_782_931_271, engine=engine, **SEQ)
    assert cap.num_blocks == SERVED[engine][1]


def test_trtllm_refuses_another_model_dtype_and_bad_dtypes_are_named(olmo2_family, olmo2_module):
    import kvgen

    calls = (
        lambda **kw: olmo2_module.engine_capacity("olmo_2_1124_13b", 1 << 40, **SEQ, **kw),
        lambda **kw: kvgen.engine_capacity(olmo2_family, "olmo_2_1124_13b", 1 << 40, **SEQ, **kw),
    )
    for call in calls:
        with pytest.raises(ValueError) as refused:
            call(engine="trtllm", dtype="bf16")
        message = str(refused.value)
        assert message.startswith("dtype bf16: TensorRT-LLM KV cache manager V2 38198e34 serves "
                                  "this fp32 checkpoint's cache in fp32")  # fmt: skip
        assert "_VALID_KV_CACHE_DTYPES" in message and "call without dtype" in message
        assert call(engine="trtllm", dtype="fp32").kv_tokens > 0  # its own dtype is fine
        for bad in ("float32", "auto", 32, ["fp32"]):
            with pytest.raises(ValueError, match="dtype must be one of fp32, bf16, fp16"):
                call(engine="vllm", dtype=bad)
    with pytest.raises(ValueError, match="dtype bf16: TensorRT-LLM"):
        olmo2_module.served_dtype("olmo_2_1124_13b", engine="trtllm", dtype="bf16")
    with pytest.raises(ValueError, match="model must be one of"):
        olmo2_module.served_dtype("olmo_2", engine="vllm")


def test_a_shipped_bf16_family_is_unchanged_and_takes_dtype():
    """No shipped family is fp32: their answers stay (the snapshot), and ``dtype="fp32"``
    halves a plain bf16 cache. Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 x 2 B =
    131,072 B per bf16 token; 40 GiB // (64 x 131,072) = 5,120 vLLM 0.34.0 blocks, 2,560 in
    fp32; TensorRT-LLM keeps the checkpoint's bf16 (dtype="bf16" is its own)."""
    from generated.llama3 import sizing

    budget = 40 << 30
    assert budget // (64 * 131_072) == 5120 and budget // (64 * 2 * 131_072) == 2560
    cap = sizing.engine_capacity("llama3_1_8b", budget, engine="vllm", **SEQ)
    assert cap.num_blocks == 5120 and sizing.served_dtype("llama3_1_8b", engine="vllm") == "bf16"
    wide = sizing.engine_capacity("llama3_1_8b", budget, engine="vllm", dtype="fp32", **SEQ)
    assert wide.num_blocks == 2560
    same = sizing.engine_capacity("llama3_1_8b", budget, engine="trtllm", dtype="bf16", **SEQ)
    assert same == sizing.engine_capacity("llama3_1_8b", budget, engine="trtllm", **SEQ)


def _git(*args: str) -> None:
    import subprocess

    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)  # fmt: skip


def test_diff_answers_each_engine_in_the_dtype_it_serves_and_says_so(
    project, tmp_path, monkeypatch, capsys
):
    """``kvgen diff --engine``: OLMo-2-1124-13B (fp32 spec) cut from 40 to 36 layers. 36 x 40
    x 128 x 2 x 2 = 737,280 B per bf16 token: vLLM 0.34.0 46,782,931,271 // (64 x 737,280) =
    991 blocks, 63,424 tokens (40 layers: 57,088, above); SGLang 46,782,931,271 // 737,280 =
    63,453 tokens (57,108); TensorRT-LLM keeps fp32, 1,474,560 B: 991 pages of 32, 31,712
    (28,544). f0f85ad answered vLLM and SGLang in fp32: 28,544 -> 31,712 and 28,554 ->
    31,726."""
    import shutil

    assert 46_782_931_271 // (64 * 36 * 40 * 128 * 4) == 991
    assert 46_782_931_271 // (36 * 40 * 128 * 4) == 63453
    assert 46_782_931_271 // (32 * 36 * 40 * 128 * 8) == 991
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    shutil.copy(project / "kvgen.toml", "kvgen.toml")
    Path("schema/families").mkdir(parents=True)
    spec = Path("schema/families/olmo2.yaml")
    spec.write_bytes((project / "schema/families/olmo2.yaml").read_bytes())
    assert main(["-q", "generate"]) == 0
    _git("init", "-q")
    _git("add", "-A")
    _git("commit", "-qm", "olmo2")
    text = spec.read_text()
    assert text.count("count: 40  # config.json num_hidden_layers") == 1
    spec.write_text(text.replace("count: 40  # config.json", "count: 36  # config.json"))
    capsys.readouterr()
    argv = ["-q", "diff", "--gpu-memory", BUDGET, "--max-seq-len", "4096",
            "--engine", "vllm", "sglang", "trtllm"]  # fmt: skip
    main(argv)
    out = capsys.readouterr().out
    where = "olmo2/olmo_2_1124_13b/none"
    assert (f"  vllm {where}: 57088 KV tokens, 13.938 requests at max_seq_len -> 63424 KV "
            "tokens, 15.484 requests at max_seq_len (cache in bf16: vLLM 0.34.0 serves this "
            "fp32 checkpoint in bf16)") in out  # fmt: skip
    assert (f"  sglang {where}: 57108 KV tokens, 13.942 requests at max_seq_len -> 63453 KV "
            "tokens, 15.491 requests at max_seq_len (cache in fp16: SGLang 0.5.23 serves "
            "this fp32 checkpoint in fp16)") in out  # fmt: skip
    assert (f"  trtllm-v2 {where}: 28544 KV tokens, 6.969 requests at max_seq_len -> 31712 KV "
            "tokens, 7.742 requests at max_seq_len\n") in out  # fmt: skip
    # --kv-cache-dtype fp32: every engine launched in float32 (vLLM --dtype float32), no note
    main([*argv, "--kv-cache-dtype", "fp32", "--format", "json"])
    rows = {c["engine"]: c for c in json.loads(capsys.readouterr().out)["engine_changes"]}
    assert rows["vllm"]["old"][0] == 446 * 64 and rows["vllm"]["new"][0] == 495 * 64
    assert 46_782_931_271 // (64 * 36 * 40 * 128 * 8) == 495
    assert all("served" not in row for row in rows.values())


def test_compare_with_a_float_kv_cache_dtype_launches_every_engine_in_it(capsys, project):
    """``compare --kv-cache-dtype fp32``: vLLM launched with --dtype float32 (as plan emits),
    1,784 fp32 blocks of 16 tokens (above) and no served note; without it, 3,569 bf16."""
    here = Path.cwd()
    os.chdir(project)
    try:
        code = main(["-q", "compare", "olmo2", "olmo_2_1124_13b", "--gpu-memory", BUDGET,
                     "--engine", "vllm==0.33.0", "sglang", "--kv-cache-dtype", "fp32",
                     "--format", "json"])  # fmt: skip
    finally:
        os.chdir(here)
    assert code == 0
    rows = {row["engine"]: row for row in json.loads(capsys.readouterr().out)["engines"]}
    assert rows["vllm"]["num_blocks"] == VLLM_FP32_BLOCKS  # f0f85ad too; a bf16 answer here
    assert rows["sglang"]["kv_tokens"] == 46_782_931_271 // FP32_TOKEN == 28554
    assert "dtype" not in rows["vllm"] and "dtype" not in rows["sglang"]


def test_a_float_cache_asked_of_a_quantized_spec_launches_the_model_in_it(capsys):
    """gpt_oss caches fp8 (its spec says the checkpoint is bfloat16; the spec keeps no model
    dtype). ``--kv-cache-dtype fp32 --emit vllm`` plans an fp32 cache, which vLLM serves only
    with --dtype float32: f0f85ad emitted none (vLLM would cache bf16, half the plan); with the
    served dtype in engine_capacity and no flag the plan would be bf16 while saying fp32.
    gpt_oss_20b's bytes per fp32 token are twice its bf16 ones, so the fp32 blocks are half:
    27,306 // 2 = 13,653 at the same 64-token block."""
    argv = ["gpt_oss", "gpt_oss_20b", "--gpu-memory", "40GiB", "--max-seq-len", "4096",
            "--emit", "vllm", "--format", "json", "--kv-cache-dtype"]  # fmt: skip
    wide = json.loads(_plan_out(capsys, *argv, "fp32"))
    narrow = json.loads(_plan_out(capsys, *argv, "bf16"))
    assert narrow["fields"]["num_gpu_blocks_override"] == 27306
    assert wide["fields"]["num_gpu_blocks_override"] == 27306 // 2 == 13653
    assert wide["fields"]["dtype"] == "float32" and narrow["fields"]["dtype"] == "bfloat16"
    assert wide["fields"]["kv_cache_dtype"] == "auto"
    assert "dtype float32: the spec caches fp8" in wide["notes"][0]


def _plan_out(capsys, *argv):
    code, out, err = plan(capsys, ROOT, *argv)
    assert code == 0, err
    return out


def _compare(capsys, project, engine, *argv):
    here = Path.cwd()
    os.chdir(project)
    try:
        code = main(["-q", "compare", "olmo2", "olmo_2_1124_13b", "--gpu-memory", BUDGET,
                     "--max-seq-len", "4096", "--engine", engine, "--format", "json",
                     *argv])  # fmt: skip
    finally:
        os.chdir(here)
    assert code == 0
    (row,) = json.loads(capsys.readouterr().out)["engines"]
    return row


@pytest.mark.parametrize("engine", list(SERVED))
def test_compare_and_the_generated_module_serve_the_dtype_by_one_rule(
    capsys, project, olmo2_module, engine
):
    """``kvgen compare`` reads the spec, the generated module its tables; both serve a float32
    checkpoint's cache in the dtype the release's "auto" gives (``Release.cache_dtype``) by one
    rewrite of the rows (``engines_rows.served_tables``), so they answer alike (SERVED: the
    hand figures above), and compare says so in ``plan``'s words (``kvgen._engines.dtype``)."""
    from kvgen.sizing.engines_registry import release

    found = release(engine)
    row = _compare(capsys, project, engine)
    module = olmo2_module.engine_capacity("olmo_2_1124_13b", 46_782_931_271, engine=engine, **SEQ)
    assert {key: row[key] for key in module._fields} == module._asdict()
    tokens, blocks, dtype = SERVED[engine]
    assert (row["kv_tokens"], row["num_blocks"]) == (tokens, blocks)
    if dtype == "fp32":  # TensorRT-LLM keeps the checkpoint's: nothing to say
        assert "dtype" not in row
        return
    said = (f"{found.named} serves this fp32 checkpoint in {dtype} ({found.float32_words}): "
            f"planned with the cache in {dtype}")  # fmt: skip
    assert row["dtype"] == said
    launch = emit(capsys, project, engine)  # plan's note: the same words, then its hint
    assert f"{said}; for the checkpoint's fp32 plan --kv-cache-dtype fp32" in launch["notes"]


def test_compare_s_terms_are_sized_in_the_served_dtype(capsys, project):
    """vLLM 0.34.0's null block is one 64-token block of the cache vLLM serves: bf16,
    64 x 819,200 = 52,428,800 B; launched in float32 (--kv-cache-dtype fp32), twice that."""
    assert 64 * BF16_TOKEN == 52_428_800 and 64 * FP32_TOKEN == 104_857_600
    for argv, held in (((), 52_428_800), (("--kv-cache-dtype", "fp32"), 104_857_600)):
        terms = {t["name"]: t["detail"] for t in _compare(capsys, project, "vllm", *argv)["terms"]}
        assert terms["null_block"] == f"one block of {held:,} bytes held back"
