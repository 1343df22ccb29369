"""An imported model is a first-class model: each shipped family's config.json, imported under
another family name, gives every engine the same answer and the same refusals at tp 1-8 as the
shipped spec (issue 32).

The engines' start-up checks read the model's shape (query heads, KV heads, vocabulary), never
kvgen's family name: vLLM's ModelConfig.verify_with_parallel_config and QKVParallelLinear,
SGLang 0.5.23's QKVParallelLinear (sglang/srt/layers/linear.py), TensorRT-LLM's query-head
check. So a user who imports Llama-3.1-8B as family ``llama`` is refused tp 3 as the shipped
``llama3`` is.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from kvgen._engines.capacity import engine_capacity
from kvgen._importhf._import import import_config
from kvgen._model.engine_rows import engine_tables
from kvgen._spec.loader import load_bytes
from kvgen._spec.models import Family
from kvgen.sizing.engines_registry import RELEASES
from kvgen.sizing.engines_vllm import _vllm_state_bytes

from tests.unit.test_engines import GIB40, family

# Every release (engine_capacity answers each; each vLLM release at its own default block).
ANSWERED = [r.spelling for r in RELEASES]

ROOT = Path(__file__).resolve().parents[2]
HF = ROOT / "tests" / "fixtures" / "hf"

# (shipped family, its model, the model's config.json in tests/fixtures/hf)
SHIPPED_CONFIGS = (
    ("cohere2", "command_r7b", "command-r7b.json"),
    ("deepseek_v3", "deepseek_v3", "deepseek-v3.json"),
    ("deepseek_v3_2", "deepseek_v3_2_exp", "deepseek-v3.2-exp.json"),
    ("falcon_h1", "falcon_h1_0_5b_instruct", "falcon-h1-0.5b-instruct.json"),
    ("gemma2", "gemma2_9b", "gemma-2-9b.json"),
    ("gemma3", "gemma3_27b", "gemma-3-27b-text.json"),
    ("gemma3n", "gemma3n_e2b", "gemma-3n-E2B-text.json"),
    ("gpt_oss", "gpt_oss_20b", "gpt-oss-20b.json"),
    ("granite4", "granite_4_0_h_tiny", "granite-4.0-h-tiny.json"),
    ("jamba", "jamba_1_5_mini", "jamba-1.5-mini.json"),
    ("kimi_k2", "kimi_k2_instruct", "kimi-k2-instruct.json"),
    ("kimi_linear", "kimi_linear_48b_a3b", "kimi-linear-48b-a3b-instruct.json"),
    ("ling_linear", "ling_2_5_linear", "ling-2.5-linear.json"),
    ("llama3", "llama3_1_8b", "llama-3.1-8b.json"),
    ("llama3_2_vision", "llama3_2_11b_vision", "llama-3.2-11b-vision.json"),
    ("llama4_maverick", "llama4_maverick_17b_128e", "llama-4-maverick-17b-128e.json"),
    ("llama4_scout", "llama4_scout_17b_16e", "llama-4-scout-17b-16e.json"),
    ("mistral", "mistral_7b_v0_1", "mistral-7b.json"),
    ("nemotron_h", "nemotron_h_8b", "nemotron-h-8b.json"),
    ("openelm", "openelm_270m", "openelm-270m.json"),
    ("phi3", "phi3_medium_4k", "phi-3-medium-4k.json"),
    ("qwen2_5", "qwen2_5_7b", "qwen2.5-7b.json"),
    ("qwen3", "qwen3_8b", "qwen3-8b.json"),
    ("qwen3_moe", "qwen3_30b_a3b", "qwen3-30b-a3b.json"),
    ("qwen3_next", "qwen3_next_80b_a3b", "qwen3-next-80b-a3b.json"),
)
# Fields a reviewer passes with --ignore-field (Command R7B's order_of_interleaved_layers
# restates sliding_window_pattern's layout, which import-hf reads).
IGNORED = {"cohere2": ("order_of_interleaved_layers",)}


@cache
def imported(name: str, model: str, config: str) -> Family:
    """The config imported as family ``imported``, with the shipped spec's page size, cache
    dtype and context (the choices a user makes on the command line)."""
    shipped = family(name)
    ship = shipped.model(model)
    path = HF / config
    result = import_config(
        str(path),
        path.read_text(encoding="utf-8"),
        family="imported",
        model=model,
        tokens_per_block=shipped.tokens_per_block,
        kv_cache_dtype=ship.kv_cache_dtype or shipped.kv_cache_dtype,
        max_seq_len=ship.max_seq_len,
        ignore_fields=IGNORED.get(name, ()),
    )
    assert result.text is not None, [str(d) for d in result.diagnostics]
    loaded = load_bytes("imported.yaml", result.text.encode())
    assert loaded.family is not None, [str(d) for d in loaded.diagnostics]
    return loaded.family


def answer(fam: Family, model: str, engine: str, tp: int) -> object:
    """The engine's capacity, or its refusal's text (the model's and family's names masked:
    openelm_270m names its family)."""
    try:
        got = engine_capacity(
            fam, model, GIB40, engine=engine, max_seq_len=4096, max_num_tokens=8192, tp_size=tp
        )
    except (ValueError, NotImplementedError) as exc:
        said = str(exc).replace(model, "MODEL").replace(fam.family, "FAMILY")
        return f"{type(exc).__name__}: {said}"
    return tuple(got)


@pytest.mark.parametrize(
    ("name", "model", "config"), [pytest.param(*entry, id=entry[0]) for entry in SHIPPED_CONFIGS]
)
def test_imported_model_gets_the_shipped_answers_and_refusals(
    name: str, model: str, config: str
) -> None:
    ours = imported(name, model, config)
    shipped = family(name)
    assert ours.model(model).num_attention_heads == shipped.model(model).num_attention_heads
    differ = [
        (engine, tp, answer(shipped, model, engine, tp), answer(ours, model, engine, tp))
        for engine in ANSWERED
        for tp in range(1, 9)
        if answer(shipped, model, engine, tp) != answer(ours, model, engine, tp)
    ]
    assert not differ, differ[:3]


def test_readme_adopt_block_llama_is_refused_tp3_by_vllm_and_sglang() -> None:
    """README's adopt block imports Llama-3.1-8B as family ``llama``: 32 query heads, 8 KV
    heads; tp 3 divides neither (vLLM: 'Total number of attention heads (32) must be divisible
    by tensor parallel size (3).'; SGLang: divide() asserts '32 is not divisible by 3')."""
    ours = imported("llama3", "llama3_1_8b", "llama-3.1-8b.json")
    assert answer(ours, "llama3_1_8b", "vllm", 3) == (
        "ValueError: vLLM 0.34.0 refuses tp_size 3: the model's 32 query heads must divide by "
        "it (ModelConfig.verify_with_parallel_config)"
    )
    said = str(answer(ours, "llama3_1_8b", "sglang", 3))
    assert said.startswith("ValueError: SGLang 0.5.23 refuses tp_size 3: ")
    assert "'32 is not divisible by 3' (sglang/srt/layers/linear.py)" in said
    # tp 8: 32 / 8 query heads, 8 / 8 KV heads: both start.
    assert isinstance(answer(ours, "llama3_1_8b", "sglang", 8), tuple)


def test_phi4_shape_10_kv_heads_is_refused_tp8_whatever_the_family_name() -> None:
    """Phi-4's shape (40 query heads, 10 KV heads; phi-3-medium's config has the same): tp 8
    divides neither 10 by 8 nor 8 by 10, so QKVParallelLinear's divide() asserts
    '10 is not divisible by 8' in vLLM and SGLang; 40 / 8 = 5 query heads pass."""
    ours = imported("phi3", "phi3_medium_4k", "phi-3-medium-4k.json")
    for engine in ("vllm", "sglang"):
        said = str(answer(ours, "phi3_medium_4k", engine, 8))
        assert "refuses tp_size 8" in said and "'10 is not divisible by 8'" in said, said


def _nemotron(ssm_cache: str | None) -> Family:
    """Nemotron-H-8B's config imported as ``my_nemo``, its mamba_ssm_cache_dtype set (or
    left out, as in the fixture)."""
    path = HF / "nemotron-h-8b.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    if ssm_cache is not None:
        data["mamba_ssm_cache_dtype"] = ssm_cache
    result = import_config(str(path), json.dumps(data), family="my_nemo", model="nemo")
    assert result.text is not None, [str(d) for d in result.diagnostics]
    loaded = load_bytes("my_nemo.yaml", result.text.encode())
    assert loaded.family is not None
    return loaded.family


def test_nemotron_h_ssm_cache_dtype_is_read_from_the_spec_not_the_family_name() -> None:
    """vLLM keeps Nemotron-H's SSM state in the config's mamba_ssm_cache_dtype, float32 where
    it has none (models/config.py NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype).
    One Mamba-2 layer at tp 1: conv (4 - 1) x (128 x 64 + 2 x 8 x 128) = 30,720 bf16 elements
    = 61,440 B; SSM 128 x 64 x 128 = 1,048,576 elements, 4 B each in fp32 (4,194,304 B) or 2 B
    in bf16 (2,097,152 B): the fp32 page is 4,255,744 B, the bf16 one 2,158,592 B."""
    shipped = answer(family("nemotron_h"), "nemotron_h_8b", "vllm", 1)
    absent = _nemotron(None)
    dims = [kind.recurrent_dims for kind in absent.model("nemo").layer_kinds.values()]
    assert [d.mamba_ssm_cache_dtype for d in dims if d is not None] == ["fp32"]
    assert answer(absent, "nemo", "vllm", 1) == shipped
    assert answer(_nemotron("float32"), "nemo", "vllm", 1) == shipped
    for fam, dtype, page in ((absent, "fp32", 61_440 + 4_194_304),
                             (_nemotron("bfloat16"), "bf16", 61_440 + 2_097_152)):  # fmt: skip
        entry = engine_tables(fam)["nemo"]
        assert entry.vllm_ssm_dtype == dtype
        mamba = next(lay for lay in entry.layers if lay.attention == "recurrent")
        assert _vllm_state_bytes(mamba, 1, 0, entry.vllm_ssm_dtype) == page
    bf16 = _nemotron("bfloat16")
    # The bf16 state holds more requests than the fp32 one at the same budget.
    assert answer(bf16, "nemo", "vllm", 1)[2] < shipped[2]  # type: ignore[index]


def test_the_engines_read_the_architecture_not_the_family_name() -> None:
    """The shipped gpt_oss spec under another family name keeps SGLang's hybrid-SWA answer
    (its models name GptOssForCausalLM, on SGLang 0.5.23's is_hybrid_swa_model list); the same
    spec without its architecture lines is sized as one token pool, whatever its name."""
    text = (ROOT / "schema" / "families" / "gpt_oss.yaml").read_text(encoding="utf-8")
    renamed = load_bytes("x.yaml", text.replace("family: gpt_oss", "family: my_oss").encode())
    assert renamed.family is not None
    shipped = answer(family("gpt_oss"), "gpt_oss_20b", "sglang", 1)
    assert answer(renamed.family, "gpt_oss_20b", "sglang", 1) == shipped
    bare = "\n".join(line for line in text.splitlines() if "architecture:" not in line)
    unnamed = load_bytes("y.yaml", bare.encode())
    assert unnamed.family is not None
    assert answer(unnamed.family, "gpt_oss_20b", "sglang", 1) != shipped
