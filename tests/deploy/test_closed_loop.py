"""The closed loop: what ``kvgen plan ... --emit vllm|sglang --format json`` prints, fed to the
engine's own configuration and KV-sizing code, makes the engine compute exactly kvgen's
planned blocks, tokens and concurrency.

The goldens ``tests/fixtures/engines/closed_loop_{vllm,sglang}.json`` were made by
``python bench/engines/refresh_goldens.py --closed-loop --engine ENGINE`` (bench/engines/
closed_loop.py): each case keeps the plan's command line, the fields kvgen emitted and what the
engine computed from ``EngineArgs(**fields)`` / ``ServerArgs(**fields)`` and the model's
config.json. These tests replay every command with no engine installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kvgen._cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "engines"
# Each release's closed loop (refresh_goldens.py: the first release of an engine keeps
# closed_loop_<engine>.json, each later one closed_loop_<engine>-<release>.json): every vLLM
# release modelled has one, and its plans name the release (--emit vllm==RELEASE).
RELEASE_FIXTURES = {"vllm==0.33.0": "vllm", "vllm==0.34.0": "vllm-0.34.0", "sglang": "sglang"}
GOLDENS = {
    e: json.loads((FIXTURES / f"closed_loop_{stem}.json").read_text())
    for e, stem in RELEASE_FIXTURES.items()
}
CASES = [(engine, case) for engine, golden in GOLDENS.items() for case in golden["cases"]]
GiB = 1 << 30

# Where the engine refuses what kvgen plans: reported, each with the engine's reason, so that a
# new disagreement fails and this list shrinks when kvgen learns the refusal.
# (None left: kvgen refuses Qwen2.5-0.5B drafting the 7B as vLLM does, by vocab_size.)
ENGINE_REFUSES_KVGEN_PLANS: dict[tuple[str, str], str] = {}


def _plan(capsys, argv):
    code = main(argv)
    out = capsys.readouterr()
    printed = json.loads(out.out) if out.out.startswith("{") else None
    return code, printed, out.err


def _known_refusal(engine, case):
    for (eng, key), reason in ENGINE_REFUSES_KVGEN_PLANS.items():
        if eng == engine and key in (case["family"], case["id"]):
            return reason
    return None


def sglang_concurrency(engine_out):
    """Requests of context_length at once from SGLang's own pools: the full pool's tokens, the
    sliding pool's (window + one page a request at admission) and the Mamba state slots."""
    context = engine_out["context_len"]
    # Mllama: one image's tokens take pool slots before the text (models/mllama.py).
    concurrency = engine_out["max_total_num_tokens"] / (
        context + engine_out.get("image_tokens_per_image", 0)
    )
    window = engine_out.get("sliding_window_size")
    if engine_out.get("swa_max_total_num_tokens") is not None and window:
        sliding = min(context, window + engine_out["page_size"])
        concurrency = min(concurrency, engine_out["swa_max_total_num_tokens"] / sliding)
    if engine_out.get("max_mamba_cache_size") is not None:
        # At most slots // ratio requests run at once (resolve_max_num_reqs).
        running = engine_out["max_mamba_cache_size"] // engine_out["mamba_ratio"]
        concurrency = min(concurrency, float(running))
    return concurrency


@pytest.mark.parametrize(("engine", "case"), CASES, ids=[f"{e}:{c['id']}" for e, c in CASES])
def test_plan_emit_gives_what_the_engine_computed(capsys, engine, case):
    code, printed, err = _plan(capsys, case["argv"])
    assert code == case["kvgen_exit"], err
    assert "Traceback" not in err
    if "fields_from" not in case:
        assert printed is not None
        assert printed["fields"] == case["fields"]
    got = case.get("engine")
    if got is None:
        assert case.get("engine_skip")  # no config.json fixture for the engine's classes
        return
    refused = got.get("refused") or got.get("error")
    if printed is None or "fields" not in printed:
        # kvgen emits nothing. Where it says the engine refuses ("refuses", "cannot run") the
        # engine must refuse too; where kvgen only does not model the case (NotModelled), the
        # engine's answer is recorded, not compared.
        said = case["kvgen_refusal"]
        if "refuses" in said or "cannot run" in said:
            assert refused, f"kvgen says {said!r} but {engine} computed {got}"
        return
    if refused:
        known = _known_refusal(engine, case)
        assert known is not None and known in refused, f"{engine} refuses: {refused}"
        return
    capacity = printed["capacity"]
    if engine.startswith("vllm"):
        # num_gpu_blocks_override and kv_cache_memory_bytes each land on the plan's blocks.
        assert capacity["num_blocks"] == got["num_blocks"]
        assert capacity["num_blocks"] == got["from_bytes_alone"]["num_blocks"]
        assert capacity["kv_tokens"] == got["kv_tokens"] == got["from_bytes_alone"]["kv_tokens"]
        assert round(capacity["max_concurrency"], 3) == round(got["max_concurrency"], 3)
    else:
        # max_total_tokens, and the profiled memory alone, each land on the plan's tokens.
        assert capacity["kv_tokens"] == got["max_total_num_tokens"]
        assert capacity["kv_tokens"] == got["from_memory_alone"]["max_total_num_tokens"]
        assert capacity["num_blocks"] == got["num_pages"]
        assert round(capacity["max_concurrency"], 3) == round(sglang_concurrency(got), 3)


def _case(engine, case_id):
    return next(c for c in GOLDENS[engine]["cases"] if c["id"] == case_id)


def test_the_goldens_cover_every_family_page_length_and_tp():
    for engine, golden in GOLDENS.items():
        families = {c["family"] for c in golden["cases"]}
        generated = Path(__file__).resolve().parents[2] / "generated"
        assert families == {p.parent.name for p in generated.glob("*/sizing.py")}
        ran = [c for c in golden["cases"] if "engine" in c and "refused" not in c["engine"]]
        assert {c["argv"][c["argv"].index("--tp-size") + 1] for c in ran} == {"1", "8"}
        assert len({c["argv"][c["argv"].index("--block-size") + 1] for c in ran}) == 2
        assert any(c["argv"][c["argv"].index("--speculative") + 1] != "none" for c in ran)
        assert golden["engine_version"] == {
            "vllm==0.33.0": "0.33.0", "vllm==0.34.0": "0.34.0", "sglang": "0.5.23"
        }[engine]  # fmt: skip
        if engine.startswith("vllm"):  # each plan names the release it is for
            emitted = {c["argv"][c["argv"].index("--emit") + 1] for c in golden["cases"]}
            assert emitted == {f"vllm=={golden['engine_version']}"}


def test_vllm_golden_for_llama_at_tp8_by_hand():
    # Llama-3.1-8B at tp 8: 8 KV heads / 8 = 1 a rank; a token costs 32 layers x 2 (K, V) x 1 x
    # 128 x 2 B = 16,384 B, a 32-token block 524,288 B; 40 GiB / 524,288 = 81,920 blocks. One
    # request of 32,768 tokens holds 32,768 / 32 = 1,024 blocks: 81,920 / 1,024 = 80.0 at
    # once, and vLLM reports 80 x 32,768 = 2,621,440 tokens.
    got = _case("vllm==0.33.0", "llama3/llama3_1_8b/p32/s32768/tp8/none")["engine"]
    assert got["num_blocks"] == got["from_bytes_alone"]["num_blocks"] == 81920
    assert got["bytes_per_block"] == 524288
    assert got["max_concurrency"] == 80.0 and got["kv_tokens"] == 2621440


def test_vllm_deepseek_v3_2_gets_the_flashmla_sparse_cache_dtype(capsys):
    # DeepSeek-V3.2's spec caches fp8_ds_mla (FlashMLA sparse): 656 B a token and layer
    # (512 fp8 latent + 4 x 4 B scales + 64 x 2 B rope), plus the indexer's key, 128 + 128 /
    # 128 x 4 = 132 B; 61 layers x 788 B = 48,068 B a token, 769,088 B a 16-token block;
    # 40 GiB / 769,088 = 55,844 blocks. Emitted as "auto", vLLM would cache bf16 MLA
    # ((512 + 64) x 2 + 132 = 1,284 B; 1,253,184 B a block) and its 40 GiB would hold 34,272
    # blocks while num_gpu_blocks_override asked for 55,844.
    code, printed, _ = _plan(
        capsys, _case("vllm==0.33.0", "deepseek_v3_2/deepseek_v3_2_exp/p16/s8192/tp1/none")["argv"]
    )
    assert code == 0
    assert printed["fields"]["kv_cache_dtype"] == "fp8_ds_mla"
    assert printed["fields"]["num_gpu_blocks_override"] == 55844
    got = _case("vllm==0.33.0", "deepseek_v3_2/deepseek_v3_2_exp/p16/s8192/tp1/none")["engine"]
    assert got["bytes_per_block"] == 769088
    assert got["from_bytes_alone"]["num_blocks"] == 55844


def test_sglang_deepseek_v3_2_gets_an_fp8_dsa_pool_with_its_indexer(capsys):
    # SGLang has no fp8_ds_mla; kvgen emits fp8_e4m3, whose DSA latent on Hopper (flashmla_kv)
    # is the same 656 B (calculate_mla_kv_cache_dim), and the indexer keeps 132 B of fp8 keys
    # a layer: 61 x 788 = 48,068 B a token, 40 GiB / 48,068 = 893,519 tokens (page 1).
    # Emitted as "auto", SGLang would cache (512 + 64) x 2 + 132 = 1,284 B a layer.
    case = _case("sglang", "deepseek_v3_2/deepseek_v3_2_exp/p1/s8192/tp1/none")
    code, printed, _ = _plan(capsys, case["argv"])
    assert code == 0
    assert printed["fields"]["kv_cache_dtype"] == "fp8_e4m3"
    assert printed["fields"]["max_total_tokens"] == (40 << 30) // (61 * 788) == 893519
    got = case["engine"]
    assert got["kv_cache_dtype"] == "float8_e4m3fn"
    assert got["from_memory_alone"]["max_total_num_tokens"] == 893519


def test_sglang_mtp_emits_the_speculative_settings(capsys):
    # DeepSeek-V3 with its MTP head: MLA bf16 caches (512 + 64) x 2 = 1,152 B a token and
    # layer; 61 layers + the MTP layer = 62 x 1,152 = 71,424 B a token; 40 GiB / 71,424 =
    # 601,333 tokens (page 1). Without the speculative settings SGLang's own profile would
    # size 61 layers: 40 GiB / 70,272 = 611,191 tokens, more than kvgen planned.
    case = _case("sglang", "deepseek_v3/deepseek_v3/p1/s8192/tp1/mtp1")
    code, printed, _ = _plan(capsys, case["argv"])
    assert code == 0
    fields = printed["fields"]
    assert fields["speculative_algorithm"] == "NEXTN"
    assert (fields["speculative_num_steps"], fields["speculative_eagle_topk"]) == (1, 1)
    assert fields["speculative_num_draft_tokens"] == 2
    assert fields["max_total_tokens"] == 601333
    assert case["engine"]["from_memory_alone"]["max_total_num_tokens"] == 601333


def test_sglang_golden_for_llama_at_tp8_page_64_by_hand():
    # 16,384 B a token at tp 8 (as above); 40 GiB / 16,384 = 2,621,440 tokens = 40,960 pages
    # of 64; 2,621,440 / 32,768 = 80 requests of 32,768 tokens.
    got = _case("sglang", "llama3/llama3_1_8b/p64/s32768/tp8/none")["engine"]
    assert got["max_total_num_tokens"] == 2621440 and got["num_pages"] == 40960
    assert sglang_concurrency(got) == 80.0


def test_vllm_golden_for_mistral_v0_1_slides_every_layer_by_hand():
    # Mistral-7B-v0.1: config.json sliding_window 4096 and no layer_types, so vLLM's Attention
    # takes the model-level window (CacheConfig.sliding_window) on all 32 layers. A token is
    # 32 x 2 x 8 x 128 x 2 B = 131,072 B, a 16-token block 2 MiB: 40 GiB = 20,480 blocks. One
    # request holds the window less one token plus the tokens in flight, 2 batches x 8,192
    # (async scheduling): 4,095 + 16,384 = 20,479 tokens, 1,280 blocks, and one more for a
    # block boundary: 1,281; 20,480 / 1,281 = 15.988 at once (full attention would give 10.0).
    got = _case("vllm==0.33.0", "mistral/mistral_7b_v0_1/p16/s32768/tp1/none")["engine"]
    assert got["num_blocks"] == 20480
    assert round(got["max_concurrency"], 3) == round(20480 / 1281, 3) == 15.988


def test_sglang_eagle3_adds_the_draft_layer_by_hand(capsys):
    # Llama-3.1-8B with its EAGLE3 draft (one decoder layer of the target's KV shape): SGLang's
    # cell is 33 layers x 2 x 8 x 128 x 2 B = 135,168 B a token; 40 GiB / 135,168 = 317,750
    # tokens (page 1), which SGLang computes from the profiled memory alone too.
    case = _case("sglang", "llama3/llama3_1_8b/p1/s8192/tp1/eagle3")
    code, printed, _ = _plan(capsys, case["argv"])
    assert code == 0
    assert printed["fields"]["speculative_algorithm"] == "EAGLE3"
    assert printed["fields"]["max_total_tokens"] == 317750
    assert case["engine"]["from_memory_alone"]["max_total_num_tokens"] == 317750
    assert any("speculative_draft_model_path" in note for note in printed["notes"])


def test_sglang_mtp_on_qwen3_next_reserves_the_intermediate_states_by_hand(capsys):
    # Qwen3-Next-80B-A3B (config.json): 48 layers, every 4th full attention (12), 36 Gated
    # DeltaNet. A GDN layer's state: conv (16 x 128 x 2 key + 32 x 128 value channels = 8,192)
    # x (kernel 4 - 1 = 3 rows) x 2 B = 49,152 B, SSM 32 heads x 128 x 128 x 4 B (fp32) =
    # 2,097,152 B; S = 36 x 2,146,304 = 77,266,944 B a request. A token: 12 x 2 x 2 x 256 x 2 B
    # = 24,576 B (the MTP head adds none: the target's config.json has no
    # num_nextn_predict_layers). mtp2 runs D = 3 draft tokens. ServerArgs.resolve_once gives
    # the hybrid the extra_buffer Mamba radix cache with the overlap scheduler on (CUDA, MTP
    # included), 3 + 2 tracking slots = 5 state slots per running request. SGLang's Mamba share
    # is 40 GiB x 0.9 / 1.9 = 20,344,581,928.4 B; K = floor((share - 4 S) / (S x (1 + 3/5))) =
    # floor(20,035,514,152.4 / 123,627,110.4) = 162 slots; min(8 requests, 162 // 5 = 32) = 8
    # verify at once: 9 x 3 x S = 2,086,207,488 B of intermediate states, 163 x S =
    # 12,594,511,872 B of slots; 40 GiB - both = 28,268,953,600 B / 24,576 = 1,150,266 tokens
    # (page 1). SGLang runs at most 162 // 5 = 32 requests at once (resolve_max_num_reqs),
    # below 1,150,266 / 8,192 = 140.4: concurrency 32; one request 8,192 x 24,576 + 4 S.
    # (At fec6846 kvgen planned ratio 3: 129 slots, 1,254,018 tokens, 43 requests.)
    case = _case("sglang", "qwen3_next/qwen3_next_80b_a3b/p1/s8192/tp1/mtp2")
    got = case["engine"]
    assert got["mamba_cache_per_req"] == 36 * (8192 * 3 * 2 + 32 * 128 * 128 * 4) == 77266944
    assert (got["mamba_radix_cache_strategy"], got["disable_overlap_schedule"]) == (
        "extra_buffer",
        False,
    )
    assert got["max_mamba_cache_size"] == 162
    assert got["max_total_num_tokens"] == got["from_memory_alone"]["max_total_num_tokens"]
    assert got["max_total_num_tokens"] == 28268953600 // 24576 == 1150266
    code, printed, _ = _plan(capsys, case["argv"])
    assert code == 0
    fields = printed["fields"]
    assert fields["speculative_algorithm"] == "NEXTN"
    assert (fields["speculative_num_steps"], fields["speculative_num_draft_tokens"]) == (2, 3)
    assert fields["max_total_tokens"] == 1150266
    assert fields["mamba_radix_cache_strategy"] == "extra_buffer"
    assert got["mamba_ratio"] == 5
    assert printed["capacity"]["max_concurrency"] == 32.0
    assert printed["capacity"]["request_bytes"] == 8192 * 24576 + 4 * 77266944
    # Without the drafter the whole share is slots: floor(share / S - 1) = 262, and
    # (40 GiB - 263 S) / 24,576 = 920,754 tokens.
    plain = _case("sglang", "qwen3_next/qwen3_next_80b_a3b/p1/s8192/tp1/none")["engine"]
    assert (plain["max_mamba_cache_size"], plain["max_total_num_tokens"]) == (262, 920754)
