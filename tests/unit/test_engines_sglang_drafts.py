"""SGLang 0.5.23's NGRAM and STANDALONE (separate draft model) profiles, and the ones it
cannot run (PARD, TensorRT-LLM's two-model EAGLE3).

Every number is derived by hand next to its test and is the one SGLang's own pool
configurators gave from the model's config.json (tests/fixtures/engines/sglang.json, recorded
by bench/engines/sglang_runner.py: ``DefaultPoolConfigurator`` with the STANDALONE draft's
``eagle_draft_num_layers`` as ``spec_aux_hidden_state.py`` reads it, and
``KVCacheConfigurator._handle_max_mamba_cache`` under NGRAM after ``ServerArgs.resolve_once``).
On the starting commit every one of these profiles raised NotModelled for SGLang.
"""

from __future__ import annotations

import pytest
from kvgen._engines.capacity import engine_capacity
from kvgen.sizing.engines_core import NotModelled

from tests.sizing_support import import_generated
from tests.unit.test_engines import GIB40, ROOT, family, golden


def _sglang(name: str, model: str, profile: str, **kwargs: object):
    args = {"max_seq_len": 8191, "max_num_tokens": 8192, "block_size": 1, **kwargs}
    return engine_capacity(family(name), model, GIB40, engine="sglang", speculative=profile,
                           **args)  # type: ignore[arg-type]  # fmt: skip


def _golden_tokens(model: str, profile: str, block: int, tp: int, length: int = 8191) -> int:
    for case in golden("sglang")["cases"]:
        i = case["inputs"]
        if (i["model"], i["speculative"], i["block_size"], i["tp_size"], i["max_model_len"]) == (
            model, profile, block, tp, length,
        ) and i["budget_bytes"] == GIB40 and "max_running_requests" not in i:  # fmt: skip
            tokens: int = case["engine_output"]["max_total_num_tokens"]
            return tokens
    raise LookupError((model, profile, block, tp))


def test_cohere2_ngram4_adds_no_draft_layers() -> None:
    # command_r7b: 32 layers (24 sliding, 8 full; SGLang sizes the sliding ones full length,
    # Cohere2 is not on its hybrid-SWA list) x 8 KV heads x 128 x (K+V) x 2 B = 131,072 B per
    # token. NGRAM drafts from the prompt: pool_configurator.py adds a draft cell for
    # EAGLE/STANDALONE only, so 40 GiB / 131,072 = 327,680 tokens, as with no profile;
    # concurrency 327,680 / 8,191 = 40.005 (SGLang's configurator: 327,680).
    got = _sglang("cohere2", "command_r7b", "ngram4")
    assert got.kv_tokens == 327_680 == _golden_tokens("command_r7b", "ngram4", 1, 1)
    assert round(got.max_concurrency, 3) == 40.005
    assert got.request_bytes == 8191 * 131_072
    assert got == _sglang("cohere2", "command_r7b", "none")


def test_llama3_ngram4_at_tp2_halves_the_cell() -> None:
    # llama3_1_8b: 32 x 8 x 128 x 2 x 2 = 131,072 B per token at tp 1; at tp 2 each rank
    # keeps 4 heads, 65,536 B: 40 GiB / 65,536 = 655,360 tokens (SGLang: 655,360), page 16
    # already whole.
    got = _sglang("llama3", "llama3_1_8b", "ngram4", tp_size=2, block_size=16)
    assert got.kv_tokens == 655_360 == _golden_tokens("llama3_1_8b", "ngram4", 16, 2)
    assert got.num_blocks == 655_360 // 16


def test_qwen2_5_7b_standalone_draft_is_charged_at_the_target_layer_size() -> None:
    # STANDALONE: SGLang assumes the draft shares the target's per-layer KV size
    # (pool_configurator.py: draft cell = int(cell x draft layers / target layers)), whatever
    # the 0.5B draft's own 2 KV heads. Target: 28 layers x 4 KV heads x 128 x 2 x 2 =
    # 57,344 B; draft: int(57,344 x 24 / 28) = 49,152 B (24 = the draft config's
    # num_hidden_layers); cell 106,496 B: 42,949,672,960 / 106,496 = 403,298.4 -> 403,298
    # tokens (SGLang: 403,298); request 8,191 x 106,496 B; concurrency 49.237.
    got = _sglang("qwen2_5", "qwen2_5_7b", "draft_0_5b")
    assert got.kv_tokens == 403_298 == _golden_tokens("qwen2_5_7b", "draft_0_5b", 1, 1)
    assert got.request_bytes == 8191 * 106_496
    assert round(got.max_concurrency, 3) == 49.237
    # tp 2: 2 heads per rank, 28,672 + int(28,672 x 24 / 28) = 28,672 + 24,576 = 53,248 B:
    # 806,596.9 -> 806,596 tokens; page 64 rounds down to 806,592 (SGLang: both).
    tp2 = _sglang("qwen2_5", "qwen2_5_7b", "draft_0_5b", tp_size=2, block_size=64)
    assert tp2.kv_tokens == 806_592 == _golden_tokens("qwen2_5_7b", "draft_0_5b", 64, 2)


def test_gemma3_27b_with_the_1b_draft() -> None:
    # gemma3_27b: 62 layers (sized full length) x 16 KV heads x 128 x 2 x 2 = 507,904 B
    # (8,192 per layer); the 1B draft's 26 layers at that size: 212,992 B; cell 720,896 B:
    # 42,949,672,960 / 720,896 = 59,578.3 -> 59,578 tokens (SGLang: 59,578), concurrency
    # 59,578 / 8,191 = 7.274.
    got = _sglang("gemma3", "gemma3_27b", "draft_1b")
    assert got.kv_tokens == 59_578 == _golden_tokens("gemma3_27b", "draft_1b", 1, 1)
    assert round(got.max_concurrency, 3) == 7.274


def test_gemma3_1b_draft_keeps_its_one_kv_head_at_tp2() -> None:
    # gemma3_1b: 26 layers x 1 KV head x 256 x 2 x 2 = 26,624 B; drafting itself (26 layers)
    # doubles it, 53,248 B: 806,596 tokens; at tp 2 the one KV head is replicated, so the
    # same (SGLang: 806,596 at both).
    for tp in (1, 2):
        got = _sglang("gemma3", "gemma3_1b", "draft_1b", tp_size=tp)
        assert got.kv_tokens == 806_596 == _golden_tokens("gemma3_1b", "draft_1b", 1, tp)


def test_qwen3_next_ngram4_keeps_five_intermediate_states_per_running_request() -> None:
    # A recurrent hybrid under NGRAM: _handle_max_mamba_cache reserves intermediate states
    # for any spec algorithm, D = speculative_num_draft_tokens = 4 + 1 = 5. Per request
    # P = 77,266,944 B (SGLang's mamba_cache_per_req, SSM fp32). Mamba share 40 GiB x 0.9 /
    # 1.9 = 20,344,581,928.4 B; slots = (share - P x 6) // (P x (1 + 5/5)) = 128 (SGLang:
    # 128); running capped at min(8, 128 // 5) = 8, their states 5 x P x (8 + 1) =
    # 3,477,012,480 B, the slots' (128 + 1) x P = 9,967,435,776 B. Left 29,505,224,704 B over
    # 12 full layers x 2 KV heads x 256 x 2 x 2 = 24,576 B: 1,200,570 tokens, page 16:
    # 1,200,560 (SGLang: 1,200,560). At most 128 // 5 = 25 requests run at once.
    got = _sglang("qwen3_next", "qwen3_next_80b_a3b", "ngram4", block_size=16)
    assert got.kv_tokens == 1_200_560 == _golden_tokens("qwen3_next_80b_a3b", "ngram4", 16, 1)
    assert got.max_concurrency == 25.0
    # One request's bytes: its tokens plus its state slot and its 5 intermediate states.
    assert got.request_bytes == 8191 * 24_576 + 77_266_944 * 6


@pytest.mark.parametrize(
    ("profile", "reason", "says"),
    [
        ("pard4", "sglang_no_pard", "SGLang 0.5.23 cannot run PARD"),
        ("eagle3_two_model", "sglang_two_model_eagle3", "use the family's eagle3 profile"),
    ],
)
def test_profiles_sglang_cannot_run_name_its_version_and_reason(
    profile: str, reason: str, says: str
) -> None:
    with pytest.raises(NotModelled) as refused:
        _sglang("llama3", "llama3_1_8b", profile)
    assert refused.value.reason == reason
    assert says in str(refused.value) and "0.5.23" in str(refused.value)
    assert "spec_info.py" in str(refused.value) or "EAGLE3" in str(refused.value)


def test_the_eagle3_profile_it_points_to_is_answered() -> None:
    # llama3_1_8b's eagle3: the EAGLE3 draft config's one layer (eagle_draft_num_layers 1)
    # at the target's per-layer 4,096 B: cell 131,072 + 4,096 = 135,168 B; 42,949,672,960 /
    # 135,168 = 317,750.3 -> 317,750 tokens at page 1 (SGLang: 317,750).
    assert _sglang("llama3", "llama3_1_8b", "eagle3").kv_tokens == 317_750


def test_the_generated_module_refuses_and_answers_the_same() -> None:
    # generated/llama3/sizing.py runs engines_core's own _check_model: the same refusal key,
    # and ngram4 the 327,680 tokens derived above (llama3_1_8b's cell equals command_r7b's).
    sizing = import_generated(ROOT / "generated" / "llama3" / "sizing.py", "_kvgen_sgspec_llama3")
    args = {"engine": "sglang", "max_seq_len": 8191, "max_num_tokens": 8192}
    with pytest.raises(ValueError) as refused:  # the runtime copy's own NotModelled
        sizing.engine_capacity("llama3_1_8b", GIB40, speculative="pard4", **args)
    assert type(refused.value).__name__ == "NotModelled"
    assert refused.value.reason == "sglang_no_pard"  # type: ignore[attr-defined]
    got = sizing.engine_capacity("llama3_1_8b", GIB40, speculative="ngram4", **args)
    assert got.kv_tokens == 327_680
