"""vLLM 0.33.0 on the hybrid and tp cases that goldens built from kvgen's own rows missed.

Every expected number below is derived by hand (docs/cost-model.md §8-§10 terms) and is also
the number vLLM's own code gave for the case in ``tests/fixtures/engines/vllm.json``: those
cases are built from the model's ``config.json`` (``layers_from``) by
``bench/engines/vllm_from_config.py``, never from kvgen's rows. Each test checks both, so a
golden that drifted from its derivation fails here as well as kvgen.
"""

from __future__ import annotations

import pytest
from kvgen._engines import _sglang, _vllm
from kvgen._engines.capacity import engine_capacity
from kvgen.sizing.engines_core import NotModelled

from tests.unit.test_engines import VLLM, family

GIB = 1 << 30


def golden(model: str, **want: object) -> dict:
    """The one vLLM golden built from config.json whose inputs have these values."""
    found = [
        case["engine_output"]
        for case in VLLM["cases"]
        if case["inputs"]["model"] == model
        and case["inputs"]["layers_from"].endswith(".json")
        and all(case["inputs"].get(key) == value for key, value in want.items())
    ]
    assert len(found) == 1, (model, want, len(found))
    return found[0]


def test_nemotron_h_ssm_state_is_fp32_in_vllm() -> None:
    # NemotronHForCausalLMConfig sets mamba_ssm_cache_dtype float32 (config.json has none).
    # Mamba page: conv (128 x 64 + 2 x 8 x 128 = 10,240) x 3 rows x 2 B = 61,440 B + SSM
    # 128 x 64 x 128 x 4 B = 4,194,304 B = 4,255,744 B. Attention 8 x 128 x 2 x 2 B = 4,096 B
    # per token; block 32: 32 x ceil(4,255,744 / (32 x 4,096)) = 1,056 tokens, a page of
    # 4,325,376 B. 24 Mamba + 4 attention layers: 7 groups of 4, a block 17,301,504 B;
    # 24 GiB // 17,301,504 = 1,489 blocks. Prefix caching off ("none"): a request at 8,191
    # takes ceil(8,191/1,056) = 8 + 6 x 1 = 14 blocks: 1,489 / 14 = 106.357 -> 871,171 tokens.
    want = golden("nemotron_h_8b", block_size=32, max_model_len=8191, max_num_tokens=2048,
                  budget_bytes=24 * GIB, enable_prefix_caching=False)  # fmt: skip
    assert (want["kv_tokens"], want["num_blocks"], want["mamba_page_bytes"]) == (
        871_171,
        1_489,
        4_255_744,
    )
    assert want["mamba_ssm_dtype"] == "float32"
    got = engine_capacity(
        family("nemotron_h"), "nemotron_h_8b", 24 * GIB, engine="vllm==0.33.0", max_seq_len=8191,
        max_num_tokens=2048, block_size=32, mamba_cache_mode="none",
    )  # fmt: skip
    assert (got.kv_tokens, got.num_blocks) == (871_171, 1_489)
    assert round(got.max_concurrency, 3) == 106.357
    # Asked for bf16 (--mamba-ssm-cache-dtype bfloat16), the page is 2,158,592 B as before.
    bf16 = _vllm.vllm_plan(family("nemotron_h"), family("nemotron_h").model("nemotron_h_8b"),
                           block_size=32, mamba_cache_mode="none", ssm_dtype="bf16")  # fmt: skip
    assert bf16.block_size == 32 * -(-2_158_592 // (32 * 4_096))


@pytest.mark.parametrize(
    ("name", "model", "tokens", "blocks"),
    [("qwen3_next", "qwen3_next_80b_a3b", 1_620_465, 5_347),
     ("granite4", "granite_4_0_h_tiny", 3_173_460, 22_212)],
)  # fmt: skip
def test_speculative_decoding_widens_the_conv_state(
    name: str, model: str, tokens: int, blocks: int
) -> None:
    # ngram4 (K = 4): the conv window holds d_conv - 1 + 4 = 7 rows. 70.5 GiB, block 16,
    # S = 10,001, prefix caching off.
    # qwen3_next: conv 8,192 x 7 x 2 B = 114,688 B + SSM 1,048,576 B = 1,163,264 B; attention
    # 2,048 B/token -> 16 x ceil(1,163,264 / 32,768) = 576-token blocks, 12 x 1,179,648 =
    # 14,155,776 B; 75,698,798,592 // that = 5,347 blocks; a request ceil(10,001/576) = 18 +
    # 3 groups x (1 + 4) = 33 blocks: 5,347 / 33 x 10,001 = 1,620,465 tokens.
    # granite4: conv 3,328 x 7 x 2 B = 46,592 B + SSM 48 x 64 x 128 x 2 B = 786,432 B =
    # 833,024 B; attention 4 x 128 x 2 x 2 B = 2,048 B/token -> 416-token blocks of 4 x
    # 851,968 = 3,407,872 B; 22,212 blocks; a request ceil(10,001/416) = 25 + 9 x 5 = 70:
    # 22,212 / 70 x 10,001 = 3,173,460 tokens.
    budget = 70 * GIB + GIB // 2
    want = golden(model, max_model_len=10001, budget_bytes=budget, speculative="ngram4",
                  enable_prefix_caching=False)  # fmt: skip
    assert (want["kv_tokens"], want["num_blocks"]) == (tokens, blocks)
    got = engine_capacity(
        family(name), model, budget, engine="vllm==0.33.0", max_seq_len=10001, max_num_tokens=8192,
        speculative="ngram4", mamba_cache_mode="none",
    )  # fmt: skip
    assert (got.kv_tokens, got.num_blocks) == (tokens, blocks)


def test_vllm_default_prefix_caching_selects_align_with_a_checkpoint_block() -> None:
    # Unset, vLLM turns prefix caching on for hybrids, so MambaModelConfig selects "align".
    # qwen3_next under FlashInfer's GDN prefill: blocks on a 64-token grid, 64 x ceil(1,097,728
    # / 131,072) = 576 tokens, 14,155,776 B a block; 40 GiB // that = 3,034 blocks; a request
    # at 10,001: 18 + 3 groups x 3 (running, last block's, checkpoint) = 27 blocks:
    # 3,034 / 27 x 10,001 = 1,123,816 tokens.
    want = golden("qwen3_next_80b_a3b", block_size=16, max_model_len=10001,
                  enable_prefix_caching=None, speculative="none", tp_size=1,
                  async_scheduling=True)  # fmt: skip
    assert (want["kv_tokens"], want["mamba_state_blocks"], want["mamba_cache_mode"]) == (
        1_123_816,
        3,
        "align",
    )
    q = family("qwen3_next")
    got = engine_capacity(q, "qwen3_next_80b_a3b", 40 * GIB, engine="vllm==0.33.0",
                          max_seq_len=10001, max_num_tokens=8192)  # fmt: skip
    assert (got.kv_tokens, got.num_blocks) == (1_123_816, 3_034)
    # nemotron_h (Mamba-2 always keeps the checkpoint): the case above in align mode takes
    # 8 + 6 x 3 = 26 blocks: 1,489 / 26 x 8,191 = 469,092 tokens.
    want = golden("nemotron_h_8b", block_size=32, max_model_len=8191, max_num_tokens=2048,
                  budget_bytes=24 * GIB, enable_prefix_caching=None)  # fmt: skip
    assert want["kv_tokens"] == 469_092
    got = engine_capacity(family("nemotron_h"), "nemotron_h_8b", 24 * GIB, engine="vllm==0.33.0",
                          max_seq_len=8191, max_num_tokens=2048, block_size=32)  # fmt: skip
    assert got.kv_tokens == 469_092


def test_mamba2_groups_are_replicated_when_fewer_than_tp() -> None:
    # granite4 has 1 B/C group; at tp 2 vLLM adds tp - 1 = 1 group (extra_groups_for_head_shards):
    # conv (3,072 + 2 x 2 x 128 = 3,584) / 2 x 3 x 2 B = 10,752 B + SSM 24 x 64 x 128 x 2 B =
    # 393,216 B = 403,968 B (403,200 B without the replicated group).
    want = golden("granite_4_0_h_tiny", block_size=16, max_model_len=8191, tp_size=2,
                  enable_prefix_caching=False, speculative="none")  # fmt: skip
    assert want["mamba_page_bytes"] == 403_968
    g = family("granite4")
    plan = _vllm.vllm_plan(g, g.model("granite_4_0_h_tiny"), block_size=16, tp_size=2,
                           mamba_cache_mode="none")  # fmt: skip
    # attention at tp 2: 2 heads x 128 x 2 x 2 B = 1,024 B/token; page = block x 1,024 - padding
    assert plan.block_size * 1_024 - plan.mamba_page_padding == 403_968
    assert plan.block_size == want["attention_block_size"]


@pytest.mark.parametrize(
    ("name", "model", "tp", "reason"),
    [("gemma3", "gemma3_1b", 8, "4 query heads"),
     ("granite4", "granite_4_0_h_tiny", 8, "12 query heads"),
     ("qwen2_5", "qwen2_5_7b", 8, "28 query heads"),
     ("phi3", "phi3_medium_4k", 4, "10 KV heads"),
     ("phi3", "phi3_medium_4k", 8, "10 KV heads")],
)  # fmt: skip
def test_vllm_refuses_tp_sizes_its_heads_do_not_split_over(
    name: str, model: str, tp: int, reason: str
) -> None:
    # Query heads must divide by tp (ModelConfig.verify_with_parallel_config); Llama-style
    # attention asserts KV heads % tp == 0 (10 % 4, 10 % 8 are not 0).
    want = golden(model, tp_size=tp, max_model_len=4096)
    assert reason.split()[0] in want["refused"]
    with pytest.raises(ValueError, match=rf"vLLM 0\.33\.0 refuses tp_size {tp}: .*{reason}"):
        engine_capacity(family(name), model, 40 * GIB, engine="vllm==0.33.0", max_seq_len=4096,
                        max_num_tokens=8192, tp_size=tp)  # fmt: skip
    # phi3_medium at tp 2 (10 % 2 == 0) and qwen2_5_7b at tp 4 (28 % 4 == 0) run.
    engine_capacity(family("phi3"), "phi3_medium_4k", 40 * GIB, engine="vllm==0.33.0",
                    max_seq_len=4096, max_num_tokens=8192, tp_size=2)  # fmt: skip


def test_the_goldens_record_where_each_engine_default_comes_from() -> None:
    defaults = VLLM["provenance"]["from_config"]["engine_defaults_by_model"]
    assert defaults["nemotron_h_8b"]["mamba_ssm_cache_dtype"] == "float32"
    assert "NemotronHForCausalLMConfig" in defaults["nemotron_h_8b"]["mamba_ssm_cache_dtype_set_by"]
    for model in ("nemotron_h_8b", "granite_4_0_h_tiny", "qwen3_next_80b_a3b", "jamba_1_5_mini"):
        assert defaults[model]["enable_prefix_caching"] is True
        assert defaults[model]["mamba_cache_mode"] == "align"
    assert "mamba_ssm_cache_dtype" not in defaults["qwen3_next_80b_a3b"]


def test_engines_that_cannot_run_a_model_say_so_with_their_version() -> None:
    # vLLM 0.33.0's registry lists MllamaForConditionalGeneration as supported until 0.10.2;
    # SGLang 0.5.23 has no Jamba model class, and its hybrid_arch.mambaish_config finds none.
    from tests.unit.test_engines import SGLANG

    refused = golden("llama3_2_11b_vision", tp_size=1)["refused"]
    assert "MllamaForConditionalGeneration" in refused and "0.10.2" in refused
    v = family("llama3_2_vision")
    with pytest.raises(ValueError, match=r"vLLM 0\.33\.0 cannot run Mllama .*until vLLM 0\.10\.2"):
        engine_capacity(v, "llama3_2_11b_vision", 40 * GIB, engine="vllm==0.33.0", max_seq_len=8192,
                        max_num_tokens=8192)  # fmt: skip
    jamba = [c for c in SGLANG["cases"] if c["inputs"]["family"] == "jamba"]
    assert jamba and all("error" in c["engine_output"] for c in jamba)
    with pytest.raises(ValueError, match=r"SGLang 0\.5\.23 cannot run Jamba"):
        engine_capacity(family("jamba"), "jamba_1_5_mini", 40 * GIB, engine="sglang",
                        max_seq_len=8192, max_num_tokens=8192)  # fmt: skip


def test_sglang_replicates_mamba2_groups_too() -> None:
    # granite4 at tp 2 in SGLang (Mamba2StateShape.create): conv (3,072 + 2 x 2 x 128) / 2 =
    # 1,792 channels x 3 rows x 2 B = 10,752 B + SSM 24 x 64 x 128 x 4 B (fp32) = 786,432 B =
    # 797,184 B a layer, x 36 layers = 28,698,624 B a request (28,670,976 B without the
    # replicated group). SGLang's own pools at 70.5 GiB, page 1: 9,730,033 tokens and 1,248
    # state slots.
    from tests.unit.test_engines import SGLANG

    (want,) = [
        c["engine_output"]
        for c in SGLANG["cases"]
        if c["inputs"]["model"] == "granite_4_0_h_tiny"
        and c["inputs"]["budget_bytes"] == 70 * GIB + GIB // 2
    ]
    assert (want["conv_state_shape"], want["mamba_cache_per_req"]) == ([1_792, 3], 28_698_624)
    assert (want["max_total_num_tokens"], want["max_mamba_cache_size"]) == (9_730_033, 1_248)
    g = family("granite4")
    plan = _sglang.sglang_plan(g, g.model("granite_4_0_h_tiny"), tp_size=2)
    assert plan.state_bytes_per_request == 36 * 797_184
    pools = _sglang.sglang_pools(plan, 70 * GIB + GIB // 2, 1)
    assert (pools.full_tokens, pools.state_slots) == (9_730_033, 1_248)


@pytest.mark.parametrize(
    ("name", "model", "profile", "tokens", "concurrency"),
    [("qwen2_5", "qwen2_5_0_5b", "draft_0_5b", 1_747_616, 213.332),
     ("gemma3", "gemma3_1b", "draft_1b", 747_731, 91.276)],
)  # fmt: skip
def test_a_separate_draft_model_shares_vllms_pool(
    name: str, model: str, profile: str, tokens: int, concurrency: float
) -> None:
    # vLLM's "draft_model" method registers the draft model's attention layers beside the
    # target's (specs marked is_draft), so they share the one pool. 40 GiB, S = 8,192, page 16;
    # each pair drafts its own model (equal vocab_size, which vLLM requires).
    # qwen2_5_0_5b + 0.5B: 2 x 24 x 2 x 64 x 2 x 2 B = 24,576 B per token, one full-attention
    # group: a block 16 x 24,576 = 393,216 B, 40 GiB / 393,216 = 109,226 blocks; a request
    # 8,192 / 16 = 512 blocks: 109,226 / 512 = 213.332 -> 109,226 x 16 = 1,747,616 tokens.
    # gemma3_1b + 1B: 2 x (22 sliding (w 512) + 4 full) layers of 1 x 256 x 2 x 2 B = 1,024 B;
    # groups of the smallest count, 8 (the full layers): 1 full group and ceil(44 / 8) = 6
    # sliding ones (4 padding layers); a block 8 x 16 x 1,024 = 131,072 B, 327,680 blocks. A
    # request: full 512 blocks, sliding 6 x (min(511 + 8,192, 8,192) / 16 + 1 = 513) = 3,078:
    # 327,680 / 3,590 = 91.276 -> 91.276 x 8,192 = 747,731 tokens.
    want = golden(model, speculative=profile, block_size=16, max_model_len=8192, tp_size=1,
                  heterogeneous_vocab=None)  # fmt: skip
    assert (want["kv_tokens"], round(want["max_concurrency"], 3)) == (tokens, concurrency)
    got = engine_capacity(family(name), model, 40 * GIB, engine="vllm==0.33.0", max_seq_len=8192,
                          max_num_tokens=8192, speculative=profile)  # fmt: skip
    assert (got.kv_tokens, round(got.max_concurrency, 3)) == (tokens, concurrency)
    assert got.num_blocks == want["num_blocks"]


@pytest.mark.parametrize(
    ("name", "model", "profile", "target", "draft"),
    [("qwen2_5", "qwen2_5_7b", "draft_0_5b", 152_064, 151_936),
     ("gemma3", "gemma3_27b", "draft_1b", 262_208, 262_144)],
)  # fmt: skip
def test_vllm_refuses_a_draft_model_of_another_vocabulary(
    name: str, model: str, profile: str, target: int, draft: int
) -> None:
    # vLLM 0.33.0's SpeculativeConfig.verify_equal_vocab_size_if_draft_model refuses these
    # pairs (the goldens hold its message with both sizes: Qwen2.5-7B config.json 152,064 vs
    # 0.5B 151,936; Gemma 3 27B 262,208, transformers' Gemma3TextConfig default, vs the 1B's
    # config.json 262,144); kvgen refuses them by the same rule, whatever the budget.
    want = golden(model, speculative=profile, block_size=16, max_model_len=8192, tp_size=1,
                  heterogeneous_vocab=None)  # fmt: skip
    assert f"Target model vocab_size={target}. Draft model vocab_size={draft}." in want["refused"]
    with pytest.raises(NotModelled, match="verify_equal_vocab_size_if_draft_model") as info:
        engine_capacity(family(name), model, 40 * GIB, engine="vllm==0.33.0", max_seq_len=8192,
                        max_num_tokens=8192, speculative=profile)  # fmt: skip
    assert info.value.reason == "vllm_draft_vocab"


def test_no_hybrid_golden_comes_from_kvgens_own_rows() -> None:
    # A golden built from kvgen's state bytes cannot catch a wrong state (issue 22: 8 of 101
    # such vLLM goldens disagreed with vLLM). Every shipped hybrid's cases come from config.json.
    from tests.unit.test_engines import ROOT, SGLANG

    hybrids = {
        path.stem
        for path in (ROOT / "schema" / "families").glob("*.yaml")
        if any(
            kind.attention == "recurrent" or kind.parallel_state
            for model in family(path.stem).models
            for kind in model.layer_kinds.values()
        )
    }
    assert hybrids == {
        "granite4",
        "jamba",
        "nemotron_h",
        "qwen3_next",
        "falcon_h1",
        "kimi_linear",
        "ling_linear",
    }
    for data in (VLLM, SGLANG):
        cases = [c for c in data["cases"] if c["inputs"]["family"] in hybrids]
        assert {c["inputs"]["family"] for c in cases} == hybrids
        assert all(c["inputs"]["layers_from"].startswith("tests/fixtures/hf/") for c in cases)
    provenance = VLLM["provenance"]["from_config"]
    assert "MambaModelConfig.verify_and_update_config" in provenance["functions"]
    assert provenance["produced_by"].startswith("engine code from config.json")
    grid = {
        (c["inputs"]["family"], c["inputs"]["tp_size"], c["inputs"]["async_scheduling"],
         c["inputs"]["enable_prefix_caching"])
        for c in VLLM["cases"] if c["inputs"]["family"] in hybrids
    }  # fmt: skip
    for name in hybrids:
        for tp in (1, 2, 8):
            assert (name, tp, True, None) in grid  # granite4 at tp 8: refused
            assert (name, tp, True, False) in grid  # granite4 at tp 8: refused
        assert (name, 1, False, None) in grid  # sync scheduling


@pytest.mark.parametrize(
    ("name", "model", "profile", "page", "tokens"),
    [("llama3", "llama3_1_8b", "eagle3", 1, 317_750),
     ("deepseek_v3", "deepseek_v3", "mtp1", 64, 601_280)],
)  # fmt: skip
def test_sglang_eagle3_and_mtp_share_the_target_tokens(
    name: str, model: str, profile: str, page: int, tokens: int
) -> None:
    # SGLang's EAGLE/MTP path adds int(cell x draft layers / target layers) to the cell
    # (pool_configurator.py; eagle_draft_num_layers from the draft config, or the target's
    # num_nextn_predict_layers for a path-less MTP head). 40 GiB:
    # llama3_1_8b + EAGLE3 (1 layer): 32 x 8 x 128 x 2 x 2 B = 131,072 + 4,096 = 135,168 B
    # per token: 42,949,672,960 // 135,168 = 317,750 tokens.
    # deepseek_v3 + MTP (1 layer): 61 x 576 x 2 B = 70,272 + 1,152 = 71,424 B per token:
    # 601,334 tokens, 601,280 in whole 64-token pages.
    from tests.unit.test_engines import SGLANG

    (want,) = [
        c["engine_output"]
        for c in SGLANG["cases"]
        if c["inputs"]["model"] == model and c["inputs"]["speculative"] == profile
        and c["inputs"]["block_size"] == (16 if page == 1 else page)
        and c["inputs"]["tp_size"] == 1 and c["inputs"]["max_model_len"] == 8191
    ]  # fmt: skip
    assert want["eagle_draft_num_layers"] == 1
    # The issue's own page size, recorded from SGLang's pool configurator as well.
    (quoted,) = [
        c["engine_output"]
        for c in SGLANG["cases"]
        if c["inputs"]["model"] == model and c["inputs"]["speculative"] == profile
        and c["inputs"]["block_size"] == page and c["inputs"]["tp_size"] == 1
        and c["inputs"]["max_model_len"] == 8191
    ]  # fmt: skip
    assert quoted["max_total_num_tokens"] == tokens
    got = engine_capacity(family(name), model, 40 * GIB, engine="sglang", max_seq_len=8191,
                          max_num_tokens=8192, speculative=profile, block_size=page)  # fmt: skip
    assert got.kv_tokens == tokens
    page16 = engine_capacity(family(name), model, 40 * GIB, engine="sglang", max_seq_len=8191,
                             max_num_tokens=8192, speculative=profile,
                             block_size=16 if page == 1 else page)  # fmt: skip
    assert page16.kv_tokens == want["max_total_num_tokens"]


def test_chunked_local_attention_in_both_engines_llama4_scout() -> None:
    # vLLM (ChunkedLocalAttentionSpec, from the model's config.json): 36 RoPE layers chunked
    # at 8,192 + 12 NoPE full layers -> 4 groups of 12; a block 12 x 16 x 8 x 128 x 2 x 2 B =
    # 786,432 B; 40 GiB // that = 54,613 blocks. A request at S: ceil(S/16) full blocks +
    # 3 x ceil(min(8,192 + 16,384, S) / 16) chunked: 2,048 at S = 8,191 or 8,192, so
    # 54,613 / 2,048 = 26.667 requests: 218,425 tokens at 8,191, 218,452 at 8,192.
    want = golden(
        "llama4_scout_17b_16e", block_size=16, max_model_len=8191, tp_size=1,
        enable_prefix_caching=None, speculative="none", async_scheduling=True,
    )  # fmt: skip
    assert (want["kv_tokens"], want["num_blocks"], want["num_groups"]) == (218_425, 54_613, 4)
    # The issue's own case (S = 8,192), recorded from vLLM's planner too.
    quoted = golden("llama4_scout_17b_16e", max_model_len=8192, tp_size=1)
    assert (quoted["kv_tokens"], quoted["num_blocks"], round(quoted["max_concurrency"], 3)) == (
        218_452,
        54_613,
        26.667,
    )
    scout = family("llama4_scout")
    kw = {"engine": "vllm==0.33.0", "max_num_tokens": 8192}
    got = engine_capacity(scout, "llama4_scout_17b_16e", 40 * GIB, max_seq_len=8192, **kw)
    assert (got.kv_tokens, got.num_blocks, round(got.max_concurrency, 3)) == (
        218_452,
        54_613,
        26.667,
    )
    # SGLang sizes the chunked layers as a sliding window (Llama4ForConditionalGeneration is
    # hybrid SWA): 40 GiB / (12 x 4,096 + 0.8 x 36 x 4,096 B) = 257,003 full tokens and
    # int(0.8 x 257,003) = 205,602 window tokens; at page 16, 256,992 and 205,584.
    from tests.unit.test_engines import SGLANG

    pages16 = [
        c["engine_output"]
        for c in SGLANG["cases"]
        if c["inputs"]["model"] == "llama4_scout_17b_16e" and c["inputs"]["block_size"] == 16
    ]
    assert pages16 and all(
        (w["max_total_num_tokens"], w["swa_max_total_num_tokens"]) == (256_992, 205_584)
        for w in pages16
    )
    # At SGLang's own page size, 1 (HybridSWAPoolConfigurator fed kvgen's layer rows: the
    # split of the budget is SGLang's, the layer shapes kvgen's).
    (page1,) = [
        c["engine_output"]
        for c in SGLANG["cases"]
        if c["inputs"]["model"] == "llama4_scout_17b_16e" and c["inputs"]["block_size"] == 1
    ]
    assert (page1["max_total_num_tokens"], page1["swa_max_total_num_tokens"]) == (
        257_003,
        205_602,
    )
    plan = _sglang.sglang_plan(scout, scout.model("llama4_scout_17b_16e"))
    assert _sglang.sglang_pools(plan, 40 * GIB, 1) == _sglang.SglangPools(257_003, 205_602, 0)


def test_vllm_kv_shared_layers_hold_no_cache_gemma3n() -> None:
    # Gemma 3n's last num_kv_shared_layers layers (10 of 30 in E2B) read an earlier layer's
    # cache; vLLM builds no spec for them. E2B's 20 own layers: 16 sliding (window 512) + 4
    # full, 2 KV heads x 256 x 2 x 2 B = 2,048 B per token each; groups of 4: 4 sliding + 1
    # full, a block 4 x 16 x 2,048 = 131,072 B, 40 GiB // that = 327,680 blocks. A request at
    # 8,192: 512 full blocks + 4 x (ceil(min(511 + 16,384, 8,192) / 16) + 1 = 513) = 2,564:
    # 327,680 / 2,564 = 127.800 -> 1,046,940 tokens.
    want = golden("gemma3n_e2b", block_size=16, max_model_len=8191, tp_size=1,
                  enable_prefix_caching=None, async_scheduling=True)  # fmt: skip
    assert want["num_blocks"] == 327_680
    quoted = golden("gemma3n_e2b", block_size=16, max_model_len=8192, tp_size=1)
    assert (quoted["kv_tokens"], round(quoted["max_concurrency"], 1)) == (1_046_940, 127.8)
    got = engine_capacity(family("gemma3n"), "gemma3n_e2b", 40 * GIB, engine="vllm==0.33.0",
                          max_seq_len=8192, max_num_tokens=8192)  # fmt: skip
    assert (got.kv_tokens, round(got.max_concurrency, 1), got.num_blocks) == (
        1_046_940,
        127.8,
        327_680,
    )
    at_8191 = engine_capacity(family("gemma3n"), "gemma3n_e2b", 40 * GIB, engine="vllm==0.33.0",
                              max_seq_len=8191, max_num_tokens=8192)  # fmt: skip
    assert at_8191.kv_tokens == want["kv_tokens"]


def test_vllm_fp8_ds_mla_and_the_sparse_indexer_deepseek_v3_2() -> None:
    # MLAAttention's fp8_ds_mla row: 512 fp8 + 4 fp32 scales + 64 bf16 = 656 B per token;
    # DeepseekV32IndexerCache: 128 fp8 + 1 fp32 scale = 132 B; 61 of each, one group of 122
    # layers: a 64-token block is 64 x 61 x (656 + 132) = 3,076,352 B; 40 GiB // that = 13,961
    # blocks; a request at 8,192 takes 128: 109.070 requests, 893,504 tokens (893,394 at 8,191).
    want = golden("deepseek_v3_2_exp", block_size=64, max_model_len=8191, tp_size=1,
                  enable_prefix_caching=None, async_scheduling=True)  # fmt: skip
    assert (want["kv_tokens"], want["num_blocks"], want["bytes_per_block"]) == (
        893_394,
        13_961,
        3_076_352,
    )
    quoted = golden("deepseek_v3_2_exp", block_size=64, max_model_len=8192, tp_size=1)
    assert (quoted["kv_tokens"], round(quoted["max_concurrency"], 3)) == (893_504, 109.070)
    d = family("deepseek_v3_2")
    got = engine_capacity(d, "deepseek_v3_2_exp", 40 * GIB, engine="vllm==0.33.0", max_seq_len=8192,
                          max_num_tokens=8192, block_size=64)  # fmt: skip
    assert (got.kv_tokens, round(got.max_concurrency, 3)) == (893_504, 109.070)


def test_sglang_dsa_pool_keeps_the_fp8_latent_and_indexer_keys_deepseek_v3_2() -> None:
    # SGLang 0.5.23 with kv_cache_dtype fp8_e4m3 (what kvgen emits for fp8_ds_mla) on Hopper,
    # flashmla_kv (overrides.py _dsa_split_backend_resolution): calculate_mla_kv_cache_dim =
    # 512 + 512 / 128 x 4 + 64 x 2 = 656 B, and _compute_dsa_indexer_cell_size 128 + 4 = 132 B
    # a layer: 61 x 788 = 48,068 B a token; 42,949,672,960 / 48,068 = 893,518.2 -> 893,504 on
    # 64-token pages, 109.070 requests of 8,192. The MTP head adds one layer's latent,
    # int(61 x 656 x 1 / 61) = 656 B, and its own indexer, 132 B: 48,856 B, 879,107.9 ->
    # 879,104 tokens. (SGLang's own pool configurator from config.json: the same two counts.)
    d = family("deepseek_v3_2")
    kwargs = {"engine": "sglang", "max_seq_len": 8192, "max_num_tokens": 8192, "block_size": 64}
    got = engine_capacity(d, "deepseek_v3_2_exp", 40 * GIB, **kwargs)
    assert (got.kv_tokens, round(got.max_concurrency, 3)) == (893_504, 109.070)
    assert got.request_bytes == 8192 * 48_068
    mtp = engine_capacity(d, "deepseek_v3_2_exp", 40 * GIB, speculative="mtp", **kwargs)
    assert (mtp.kv_tokens, mtp.request_bytes) == (879_104, 8192 * 48_856)
