"""Kimi Linear (Kimi Delta Attention between MLA layers) in vLLM 0.33.0 and SGLang 0.5.23.

The goldens in ``tests/fixtures/engines/`` for kimi_linear were built from
``tests/fixtures/hf/kimi-linear-48b-a3b-instruct.json`` through the engines' own classes
(``bench/engines/vllm_from_config.py``: vLLM's KimiLinearConfig.is_kda_layer,
KimiGatedDeltaNetAttention's MambaBase.get_kv_cache_spec with KimiLinearForCausalLM's
kda_state_shape / kda_state_dtype, MLAAttention.get_kv_cache_spec; SGLang's ModelConfig and
KimiLinearConfig.mamba2_cache_params), never from kvgen's rows. Each expected number is
derived by hand below (docs/cost-model.md §8-§10 terms) and checked against both the golden
and kvgen.

Per KDA layer at tp 1: conv (4 - 1 + K draft tokens) rows x (32 x 128 + 2 x 32 x 128 =
12,288) channels x 2 B (bf16) + recurrent 32 x 128 x 128 x 4 B (fp32: vLLM kda_state_dtype
"auto", SGLang's default) = 73,728 + 2,097,152 = 2,170,880 B at K = 0. Per MLA layer:
(512 + 64) x 2 B = 1,152 B per token. 20 KDA and 7 MLA layers.
"""

from __future__ import annotations

from kvgen._engines import _sglang, _vllm
from kvgen._engines._terms import policy_terms
from kvgen._engines.capacity import engine_capacity

from tests.unit.test_engines import SGLANG, family
from tests.unit.test_engines_hybrid import golden

GIB = 1 << 30
MODEL = "kimi_linear_48b_a3b"


def _capacity(engine: str, **kwargs: object):
    return engine_capacity(
        family("kimi_linear"), MODEL, 40 * GIB, engine=engine, max_seq_len=8191,
        max_num_tokens=8192, block_size=16, **kwargs,
    )  # fmt: skip


def test_vllm_kda_state_is_fp32_and_keeps_no_prefill_checkpoint_block() -> None:
    # Mamba page 2,170,880 B. A hybrid with MLA unifies pages on 128-token steps:
    # 128 x ceil(2,170,880 / (128 x 1,152)) = 1,920 tokens, a page of 2,211,840 B (40,960 B
    # of padding). 20 KDA + 7 MLA layers: groups of 7 (3 KDA groups, one padding layer, and
    # 1 MLA group), a block of 7 x 2,211,840 = 15,482,880 B; 40 GiB // 15,482,880 = 2,774
    # blocks. Align mode (vLLM's default, prefix caching on): KimiGatedDeltaNetAttention keeps
    # the running and the last state block and no prefill checkpoint (MambaMixer2 and the
    # FlashInfer GDN keep one more): ceil(8,191 / 1,920) = 5 + 3 x 2 = 11 blocks a request,
    # 2,774 / 11 = 252.182 requests, 252.182 x 8,191 = 2,065,621 tokens.
    want = golden(MODEL, block_size=16, max_model_len=8191, tp_size=1, speculative="none",
                  enable_prefix_caching=None, async_scheduling=True)  # fmt: skip
    assert (want["mamba_page_bytes"], want["mamba_ssm_dtype"]) == (2_170_880, "float32")
    assert (want["attention_block_size"], want["mamba_state_blocks"]) == (1_920, 2)
    assert (want["num_blocks"], want["kv_tokens"]) == (2_774, 2_065_621)
    assert want["request_bytes"] == 11 * 15_482_880
    got = _capacity("vllm")
    assert (got.num_blocks, got.kv_tokens, got.request_bytes) == (2_774, 2_065_621, 170_311_680)
    assert round(got.max_concurrency, 3) == 252.182
    g = family("kimi_linear")
    plan = _vllm.vllm_plan(g, g.model(MODEL), block_size=16)
    assert (plan.block_size, plan.bytes_per_block, plan.checkpoint_blocks) == (1_920, 15_482_880, 0)
    # prefix caching off ("none"): 5 + 3 x 1 = 8 blocks, 2,774 / 8 = 346.75 requests
    off = golden(MODEL, block_size=16, max_model_len=8191, tp_size=1, speculative="none",
                 enable_prefix_caching=False, async_scheduling=True)  # fmt: skip
    assert off["kv_tokens"] == 2_840_229 == _capacity("vllm", mamba_cache_mode="none").kv_tokens


def test_vllm_ngram_widens_the_kda_conv_window() -> None:
    # ngram K = 4: conv (3 + 4) x 12,288 x 2 = 172,032 B + 2,097,152 = 2,269,184 B a page;
    # 128 x ceil(2,269,184 / 147,456) = 2,048 tokens, a block of 7 x 2,048 x 1,152 =
    # 16,515,072 B: 2,600 blocks. A request: ceil(8,191 / 2,048) = 4 + 3 x (2 + 4) = 22
    # blocks, 2,600 / 22 = 118.182 requests, 968,027 tokens.
    want = golden(MODEL, block_size=16, max_model_len=8191, tp_size=1, speculative="ngram4",
                  enable_prefix_caching=None)  # fmt: skip
    assert (want["mamba_page_bytes"], want["mamba_state_blocks"]) == (2_269_184, 6)
    assert (want["num_blocks"], want["kv_tokens"]) == (2_600, 968_027)
    got = _capacity("vllm", speculative="ngram4")
    assert (got.num_blocks, got.kv_tokens) == (2_600, 968_027)


def test_sglang_kda_state_per_request_and_pools() -> None:
    # SGLang KimiLinearStateShape.create: conv (3, 12,288 / tp) bf16 and recurrent
    # (32 / tp, 128, 128) fp32: 20 x 2,170,880 = 43,417,600 B a request at tp 1, half at tp 2.
    for tp, conv, per_request in ((1, 12_288, 43_417_600), (2, 6_144, 21_708_800)):
        (want,) = [
            c["engine_output"]
            for c in SGLANG["cases"]
            if c["inputs"]["model"] == MODEL
            and (c["inputs"]["block_size"], c["inputs"]["max_model_len"]) == (16, 8191)
            and c["inputs"]["tp_size"] == tp
        ]
        assert (want["conv_state_shape"], want["mamba_cache_per_req"]) == ([3, conv], per_request)
        assert want["mamba_ssm_dtype"] == "float32"
        g = family("kimi_linear")
        plan = _sglang.sglang_plan(g, g.model(MODEL), tp_size=tp)
        assert plan.state_bytes_per_request == per_request
        pools = _sglang.sglang_pools(plan, 40 * GIB, 16)
        assert (pools.full_tokens, pools.state_slots) == (
            want["max_total_num_tokens"],
            want["max_mamba_cache_size"],
        )


def test_compare_terms_say_the_kda_state_is_fp32_in_both_engines() -> None:
    # vLLM: no "not the spec's dtype" (the spec says ssm_dtype: fp32, as kda_state_dtype
    # does), and 2 state blocks a request in align mode (no prefill checkpoint); SGLang:
    # no fp32_ssm_state term, the spec's state is SGLang's already (41.4 MiB a request:
    # 43,417,600 / 2^20).
    g = family("kimi_linear")
    plan = {"max_seq_len": 8191, "max_num_tokens": 8192, "block_size": 16}
    vllm = {t.name: t.detail for t in policy_terms(g, MODEL, engine="vllm", **plan)}
    assert vllm["vllm_fp32_ssm_state"].startswith("KDA recurrent state in fp32")
    assert vllm["mamba_align_mode"].startswith("2 state blocks per request on each of 3 ")
    sglang = {t.name: t.detail for t in policy_terms(g, MODEL, engine="sglang", **plan)}
    assert "fp32_ssm_state" not in sglang
    assert sglang["mamba_memory_ratio"].endswith("state slots of 41.4 MiB")
