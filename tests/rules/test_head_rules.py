"""The spec fields the engines' start-up checks read (issue 32): KV246 query heads grouped by
each kind's KV heads, KV247 one engine behaviour per family's architectures."""

from __future__ import annotations

from kvgen._lint.linter import lint_loaded
from kvgen._spec.loader import load_bytes

BASE = """schema_version: 1
family: tiny
tokens_per_block: 64
kv_cache_dtype: bf16
models:
"""


def _model(name: str, extra: str, kinds: str) -> str:
    return f"""  - name: {name}
    max_seq_len: 8192
{extra}    layer_kinds:
{kinds}    layers: {{count: 4, pattern: [full]}}
"""


def _found(text: str) -> list[str]:
    loaded = load_bytes("tiny.yaml", text.encode())
    assert loaded.family is not None, [d.render() for d in loaded.diagnostics]
    return [f"{d.code} {d.line}:{d.col} {d.message}" for d in lint_loaded(loaded)]


def test_kv_heads_that_do_not_divide_the_query_heads_are_refused_with_vllms_words() -> None:
    # Phi-3-medium's 40 query heads: 10 KV heads group them by 4; 12 do not (40 % 12 = 4)
    good = "      full: {attention: full, kv_heads: 10, head_dim: 128}\n"
    bad = "      full: {attention: full, kv_heads: 12, head_dim: 128}\n"
    heads = "    num_attention_heads: 40\n"
    assert _found(BASE + _model("m", heads, good)) == []
    (said,) = _found(BASE + _model("m", heads, bad))
    assert said.startswith("KV246 10:41 kv_heads 12 of layer kind 'full' of model 'm'")
    assert "'num_heads (40) is not divisible by num_kv_heads (12)'" in said
    assert "vllm/model_executor/layers/attention/attention.py" in said


def test_mla_and_models_without_query_heads_are_not_grouped_heads() -> None:
    mla = "      full: {attention: full, kv_lora_rank: 512, qk_rope_head_dim: 64}\n"
    assert _found(BASE + _model("m", "    num_attention_heads: 7\n", mla)) == []
    plain = "      full: {attention: full, kv_heads: 12, head_dim: 128}\n"
    assert _found(BASE + _model("m", "", plain)) == []


def test_a_family_of_architectures_the_engines_run_alike_lints_clean() -> None:
    """Gemma 3's 1B (Gemma3ForCausalLM) and 27B (Gemma3ForConditionalGeneration) share one
    family: neither is on an engine's list. gpt-oss (SGLang: hybrid SWA) beside Llama does
    not."""
    kinds = "      full: {attention: full, kv_heads: 8, head_dim: 64}\n"
    arch = "    architecture: {}\n"
    same = BASE + "".join(
        _model(n, arch.format(a), kinds)
        for n, a in (("a", "Gemma3ForCausalLM"), ("b", "Gemma3ForConditionalGeneration"))
    )
    assert _found(same) == []
    other = BASE + "".join(
        _model(n, arch.format(a), kinds)
        for n, a in (("a", "GptOssForCausalLM"), ("b", "LlamaForCausalLM"))
    )
    (said,) = _found(other)
    assert said.startswith("KV247 14:19 architecture LlamaForCausalLM of model 'b'")
    assert "unlike GptOssForCausalLM of model 'a'" in said
