"""``engine_capacity`` in the generated sizing modules (the engine policies they bind).

The generated module answers from its own tables, without kvgen: every golden of
tests/fixtures/engines/ (numbers vLLM 0.33.0's, vLLM 0.34.0's and SGLang 0.5.23's own code
produced, each asked as ``engine="NAME==RELEASE"``) must come out of it exactly, as they come
out of ``kvgen._engines.capacity`` (tests/test_engines.py), and
"trtllm-v2" must equal ``kvgen._engines.capacity``'s answer from the cost model for every shipped
model.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest
from kvgen._engines.capacity import EngineCapacity, engine_capacity
from kvgen._model.engine_rows import engine_tables
from kvgen.sizing.engines_registry import release
from kvgen.sizing.engines_rows import qkv_split_refusal, split_heads

from tests.sizing_support import example_module, import_generated, render_sizing
from tests.unit.test_engines import GIB40, VLLM_CASES, case_id, family, golden_kwargs

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "engines"
SHIPPED = sorted(p.stem for p in (ROOT / "schema" / "families").glob("*.yaml"))


def golden(engine: str) -> list[dict]:
    cases = json.loads((FIXTURES / f"{engine}.json").read_text(encoding="utf-8"))["cases"]
    return [{"engine": engine, **case} for case in cases]


# Every vLLM release's goldens (tests/unit/test_engines.py reads them per release), SGLang's.
CASES = [{"engine": engine, **case} for engine, case in VLLM_CASES] + golden("sglang")


@cache
def generated(name: str, tmp: Path) -> ModuleType:
    """The committed module of a shipped family; a fixture spec's module rendered to ``tmp``."""
    shipped = ROOT / "generated" / name / "sizing.py"
    if shipped.exists():
        return import_generated(shipped, f"_kvgen_engines_{name}")
    text = (ROOT / "tests" / "fixtures" / "specs" / f"{name}.yaml").read_text(encoding="utf-8")
    return render_sizing(text, tmp)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("engines_generated")


def _args(inputs: dict, engine: str) -> tuple[tuple[object, ...], dict[str, object]]:
    return (inputs["model"], inputs["budget_bytes"]), golden_kwargs(inputs, engine)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['engine']}-{case_id(c)}")
def test_generated_module_matches_every_golden(case: dict, tmp: Path) -> None:
    inputs, want, engine = case["inputs"], case["engine_output"], case["engine"]
    module = generated(inputs["family"], tmp)
    args, kwargs = _args(inputs, engine)
    named = re.escape(release(engine).named)  # the module names the release asked too
    if "refused" in want and (
        "parallel_drafting" in want["refused"] or "use_heterogeneous_vocab" in want["refused"]
    ):
        # vLLM 0.34.0 refuses PARD and use_heterogeneous_vocab; the module quotes it.
        with pytest.raises(ValueError, match=rf"^{named} refuses ") as err:
            module.engine_capacity(*args, **kwargs)
        assert want["refused"] in str(err.value)
        return
    if "refused" in want and "same vocabulary size" in want["refused"]:
        # vLLM's SpeculativeConfig refuses a draft of another vocab_size; so does the module.
        with pytest.raises(ValueError, match=rf"{named} refuses a draft model whose vocab") as err:
            module.engine_capacity(*args, **kwargs)
        assert getattr(err.value, "reason", None) == "vllm_draft_vocab"
        return
    if "refused" in want:  # vLLM refuses the tp size; so does the module
        with pytest.raises(ValueError, match=rf"^{named} (refuses tp_size|cannot run)"):
            module.engine_capacity(*args, **kwargs)
        return
    entry = engine_tables(family(inputs["family"]))[inputs["model"]]
    tp = int(kwargs.get("tp_size", 1))  # type: ignore[call-overload]
    if engine == "sglang" and qkv_split_refusal(entry.query_heads, split_heads(entry.layers), tp):
        # SGLang's pool configurators size it; its model refuses to build; so does the module.
        with pytest.raises(ValueError, match=rf"^SGLang 0\.5\.23 refuses tp_size {tp}: "):
            module.engine_capacity(*args, **kwargs)
        return
    if "error" in want:
        with pytest.raises(ValueError) as err:
            module.engine_capacity(*args, **kwargs)
        if engine.startswith(
            "vllm=="
        ):  # vLLM names the longest length that fits; so does the module
            assert str(err.value).endswith(f"longest that fits: {want['estimated_max_model_len']}")
        return
    got = module.engine_capacity(*args, **kwargs)
    if engine.startswith("vllm=="):
        assert got.kv_tokens == want["kv_tokens"]
        assert got.num_blocks == want["num_blocks"]
        assert got.request_bytes == want["request_bytes"]
        assert round(got.max_concurrency, 3) == round(want["max_concurrency"], 3)
    else:
        assert got.kv_tokens == want["max_total_num_tokens"]
    # And exactly what kvgen._engines.capacity answers from the loaded spec (one policy, two
    # callers).
    package = engine_capacity(family(inputs["family"]), *args, **kwargs)  # type: ignore[arg-type]
    assert tuple(got) == tuple(package)


def _trtllm_settings(module: ModuleType) -> list[tuple[str, str, int]]:
    out = []
    for model in module.MODELS:
        for speculative in module.PROFILES[model]:
            out.append((model, speculative, min(8192, module.MAX_SEQ_LEN[model])))
    return out


@pytest.mark.parametrize("name", SHIPPED)
def test_generated_trtllm_v2_equals_the_cost_model_for_every_model_and_profile(
    name: str, tmp: Path
) -> None:
    module = generated(name, tmp)
    fam = family(name)
    for model, speculative, seq in _trtllm_settings(module):
        for budget in (GIB40, 1 << 30):
            kwargs = {"engine": "trtllm-v2", "max_seq_len": seq, "max_num_tokens": 2048}
            kwargs["speculative"] = speculative
            try:
                want: EngineCapacity | str = engine_capacity(fam, model, budget, **kwargs)  # type: ignore[arg-type]
            except ValueError as exc:  # the budget does not cover a draft pool's fixed cost
                want = type(exc).__name__
            try:
                got: EngineCapacity | str = module.engine_capacity(model, budget, **kwargs)
            except ValueError as exc:
                got = type(exc).__name__
            assert got == want, (model, speculative, budget)


def test_generated_public_surface_and_engine_defaults(tmp: Path) -> None:
    gemma = generated("gemma3", tmp)
    # The engine half of the public surface: the rows and answer, TensorRT-LLM V2's pool
    # groups for a tool (docs/api.md, "The interface of a sizing module").
    assert gemma.__all__[-7:] == [
        "ENGINE_MODELS", "EngineCapacity", "engine_capacity", "served_dtype", "trtllm_held",
        "trtllm_held_in", "trtllm_plans",
    ]  # fmt: skip
    # Defaults: vLLM each release's block (0.33.0: 16; 0.34.0, plain "vllm": 64), SGLang page
    # 1, TensorRT-LLM the spec's tokens_per_block (16).
    # gemma3_27b, S = N = 8,192: SGLang sizes all 62 layers full length, 16 heads x 256 x 2 B
    # = 8,192 B each: 507,904 B per token; 42,949,672,960 // 507,904 = 84,562 tokens.
    kw = {"max_seq_len": 8192, "max_num_tokens": 8192}
    assert gemma.engine_capacity("gemma3_27b", GIB40, engine="sglang", **kw).kv_tokens == 84_562
    # TensorRT-LLM V2 at B = 8 and the spec's tokens_per_block, 64 (tests/unit/test_engines.py
    # derives 84,368 at 16), its own split: slots of 52 x 8,192 x 64 = 26 MiB (sliding) and
    # 10 x 8,192 x 64 = 5 MiB (full); 40 GiB is 1,280 grains of 32 MiB, the full group's
    # ratio 5/31: round(206.45) = 206 grains = 6,592 MiB / 5 MiB = 1,318 slots = 84,352
    # tokens (kvgen's window pages, 8 x (ceil(1,023/64) + 1) + 128 = 264, fit the rest).
    assert gemma.TOKENS_PER_BLOCK == 64
    trt = gemma.engine_capacity("gemma3_27b", GIB40, engine="trtllm==early-2026", **kw)
    assert (trt.kv_tokens, trt.num_blocks) == (84_352, 1_318)
    # trtllm-v2 is the default release, 38198e34 (its split with --emit's pool_ratio:
    # tests/deploy/test_emit_trtllm_38198e34.py holds it to the engine's compiled split).
    now = gemma.engine_capacity("gemma3_27b", GIB40, engine="trtllm-v2", **kw)
    assert now == gemma.engine_capacity("gemma3_27b", GIB40, engine="trtllm==38198e34", **kw)
    assert now.kv_tokens > trt.kv_tokens
    # vLLM: 7 groups of 10 layers, a layer's page 8,192 B a token (as SGLang's above): a
    # block of 10 pages is 10 x 16 x 8,192 = 1,310,720 B at 0.33.0's default block 16, 32,768
    # blocks in 40 GiB; at 0.34.0's 64 (plain "vllm"), 5,242,880 B: 8,192 blocks.
    for engine, blocks in (("vllm==0.33.0", 32_768), ("vllm==0.34.0", 8_192), ("vllm", 8_192)):
        assert gemma.engine_capacity("gemma3_27b", GIB40, engine=engine, **kw).num_blocks == blocks


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"engine": "tgi"},
            "engine must be one of trtllm, vllm, sglang (or trtllm-v2, an alias), as NAME or "
            "NAME==VERSION; got 'tgi'",
        ),
        ({"engine": "vllm", "block_size": 0}, "block_size must be a positive int, got 0"),
        ({"engine": "vllm", "model": "gemma3_27"}, "(did you mean 'gemma3_27b'?)"),
        ({"engine": "vllm", "speculative": "pard9"}, "speculative must be one of"),
        ({"engine": "vllm", "gdn_prefill_backend": "cuda"}, "gdn_prefill_backend must be one of"),
        ({"engine": "vllm", "ssm_dtype": "fp8"}, "ssm_dtype must be one of"),
        ({"engine": "vllm", "mamba_cache_mode": "all"}, "mamba_cache_mode must be one of"),
        ({"engine": "sglang", "ssm_dtype": "fp8"}, "ssm_dtype must be one of"),
        (
            {"engine": "sglang", "mamba_radix_cache_strategy": "auto"},
            "mamba_radix_cache_strategy must be one of extra_buffer, no_buffer, "
            "extra_buffer_lazy, extra_buffer_no_overlap, disabled; got 'auto'",
        ),
        ({"engine": "sglang", "max_seq_len": 0}, "max_seq_len must be a positive int"),
        ({"engine": "vllm", "max_seq_len": 131073}, "max_seq_len must be <= 131072"),
        ({"engine": "trtllm-v2", "max_seq_len": 131073}, "max_seq_len must be <= 131072"),
        ({"engine": "trtllm-v2", "block_size": 16}, "block_size must be 64"),
        ({"engine": "vllm", "max_num_tokens": True}, "max_num_tokens must be a positive int"),
        ({"engine": "vllm", "tp_size": [2]}, "tp_size must be a positive int"),
    ],
)
def test_generated_bad_arguments_name_the_argument(kwargs: dict, message: str, tmp: Path) -> None:
    gemma = generated("gemma3", tmp)
    args = {"model": "gemma3_27b", "max_seq_len": 8192, "max_num_tokens": 8192, **kwargs}
    model = args.pop("model")
    with pytest.raises(ValueError) as err:
        gemma.engine_capacity(model, GIB40, **args)
    assert message in str(err.value)


def test_generated_sglang_hybrid_follows_the_mamba_strategy(tmp: Path) -> None:
    # Qwen3-Next-80B, 40 GiB, page 1: K = floor(40 GiB x 0.9 / 1.9 / S - 1) = 262 state slots
    # (S = 77,266,944 B; tests/unit/test_engines.py derives it). The generated module answers
    # as kvgen._engines.capacity does: extra_buffer (the strategy a CUDA launch resolves, 3 + 2
    # tracking slots a running request) runs 262 // 5 = 52 requests, no_buffer 262 // 3 = 87.
    qwen = generated("qwen3_next", tmp)
    kw = {"engine": "sglang", "max_seq_len": 8192, "max_num_tokens": 8192}
    assert qwen.engine_capacity("qwen3_next_80b_a3b", GIB40, **kw).max_concurrency == 52.0
    nobuf = qwen.engine_capacity(
        "qwen3_next_80b_a3b", GIB40, mamba_radix_cache_strategy="no_buffer", **kw
    )
    assert nobuf.max_concurrency == 87.0


def test_generated_module_imports_nothing_but_the_stdlib(tmp_path: Path) -> None:
    # Vendoring is copying the output folder: a copy under another name, imported with only
    # the standard library on sys.path (-I -S: no site-packages, no kvgen), answers alone.
    shutil.copytree(ROOT / "generated", tmp_path / "vendored_kv")
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
        "from vendored_kv.qwen3_next import sizing as m\n"
        "m.engine_capacity('qwen3_next_80b_a3b', 40 << 30, engine='vllm', max_seq_len=8192,"
        " max_num_tokens=8192)\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('kvgen', 'torch')))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_engines_core_runs_as_source_on_the_example_family() -> None:
    # kvgen.sizing.engines_core bound to the engine rows of tests/fixtures/sizing_core_example.yaml:
    # "hybrid" has attention sinks and "latent" a synthetic byte shape, which no engine
    # model covers; "trtllm-v2" answers from kvgen.sizing.sizing_core's tables. hybrid at B = 8,
    # N = 64, S = 1,024: slope 64 (global), per_request = 6 pages x 16 x 128 + 2,000 = 14,288,
    # ctx_swa 128, plus one reserved row of recurrent state (the CUDA-graph padding slot,
    # docs/cost-model.md §8) = 2,000; quota 1 MiB: room = 1,048,576 - 8 x 14,288 - 2,000 =
    # 932,272 > 64 x 192, so tokens = 64 + (932,272 - 12,288) // 64 = 64 + 14,374 = 14,438.
    core = example_module()
    kw = {"max_seq_len": 1024, "max_num_tokens": 64}
    with pytest.raises(core.NotModelled, match="attention sinks"):
        core.engine_capacity("hybrid", 1 << 20, engine="vllm", **kw)
    with pytest.raises(core.NotModelled, match="synthetic byte shapes"):
        core.engine_capacity("latent", 1 << 20, engine="sglang", **kw)
    cap = core.engine_capacity("hybrid", 1 << 20, engine="trtllm-v2", **kw)
    assert (cap.kv_tokens, cap.num_blocks, cap.max_concurrency) == (14_438, 14_438 // 16, 8.0)
