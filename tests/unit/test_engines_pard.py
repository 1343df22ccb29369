"""vLLM 0.33.0 and separate draft models it runs (issue 22: no NotModelled row it can answer).

PARD is vLLM's ``draft_model`` method with ``parallel_drafting`` (vllm/config/speculative.py):
the draft model's attention layers join the target's one KV pool, as a draft_target's do. Its
K extra query slots per request (``max_num_new_slots_for_drafting``) and the K lookahead
slots of ``allocate_slots`` (``VllmConfig.num_lookahead_tokens``) are the scheduler's per-step
reservation, never part of the pool's sizing or of the per-request bound the logged "Maximum
concurrency" divides by. The expected numbers are derived by hand next to each test and are
also what vLLM's own planner gave for the case in ``tests/fixtures/engines/vllm.json``, built
from the two config.json files (``bench/engines/vllm_from_config.py``), never from kvgen's rows.
"""

from __future__ import annotations

import json

import pytest
from kvgen._cli.main import main
from kvgen._engines.capacity import engine_capacity
from kvgen.sizing.engines_core import NotModelled

from tests.unit.test_engines import FIXTURES, VLLM, family
from tests.unit.test_engines_hybrid import golden

GIB = 1 << 30
CLOSED_LOOP = json.loads((FIXTURES / "closed_loop_vllm.json").read_text(encoding="utf-8"))
# Llama-3.1-8B: 32 layers x 2 (K, V) x 8 KV heads x 128 x 2 B = 131,072 B a token;
# PARD-Llama-3.2-1B: 16 layers x 2 x 8 x 64 x 2 B = 32,768 B. Every layer is full attention
# at one block size, so vLLM keeps them in one group of per-layer pages (UniformTypeKVCacheSpecs):
# a 16-token block is 16 x (131,072 + 32,768) = 2,621,440 B at tp 1, half at tp 2 (4 KV heads
# per rank, of the target and of the draft).
BLOCK_TP1 = 16 * (32 * 2 * 8 * 128 * 2 + 16 * 2 * 8 * 64 * 2)


@pytest.mark.parametrize(
    ("length", "tp", "blocks", "request_bytes", "concurrency", "tokens"),
    [
        # 40 GiB / 2,621,440 = 16,384 blocks; a request at 8,192 holds 8,192 / 16 = 512 of
        # them (1,342,177,280 B): 16,384 / 512 = 32 requests, 16,384 x 16 = 262,144 tokens.
        (8192, 1, 16_384, 1_342_177_280, 32.0, 262_144),
        # tp 2: 1,310,720 B a block, 32,768 blocks; 512 a request (671,088,640 B): 64.
        (8192, 2, 32_768, 671_088_640, 64.0, 524_288),
        # 10,001 tokens: ceil(10,001 / 16) = 626 blocks (1,641,021,440 B); 16,384 / 626 =
        # 26.173 requests, and vLLM reports concurrency x max_model_len tokens:
        # floor(16,384 x 10,001 / 626) = 261,751.
        (10001, 1, 16_384, 1_641_021_440, 26.173, 261_751),
    ],
)
def test_pard_shares_vllms_pool_with_llama3_1_8b(
    length: int, tp: int, blocks: int, request_bytes: int, concurrency: float, tokens: int
) -> None:
    assert BLOCK_TP1 == 2_621_440
    want = golden("llama3_1_8b", speculative="pard4", block_size=16, max_model_len=length,
                  tp_size=tp)  # fmt: skip
    assert (want["num_blocks"], want["request_bytes"], want["kv_tokens"]) == (
        blocks, request_bytes, tokens
    )  # fmt: skip
    assert want["bytes_per_block"] == BLOCK_TP1 // tp and want["num_groups"] == 1
    assert round(want["max_concurrency"], 3) == concurrency
    # vLLM's own slot arithmetic for PARD (K = 4): K extra query slots, K lookahead slots.
    assert (want["draft_slots_per_request"], want["num_lookahead_tokens"]) == (4, 4)
    got = engine_capacity(family("llama3"), "llama3_1_8b", 40 * GIB, engine="vllm==0.33.0",
                          max_seq_len=length, max_num_tokens=8192, block_size=16, tp_size=tp,
                          speculative="pard4")  # fmt: skip
    assert (got.num_blocks, got.request_bytes, got.kv_tokens) == (blocks, request_bytes, tokens)
    assert round(got.max_concurrency, 3) == concurrency


def test_every_pard_golden_is_from_config_json_or_checked_by_vllms_vocab_rule() -> None:
    # The PARD cases recorded: llama3_1_8b + PARD-Llama-3.2-1B from the two config.json files
    # at pages 16 and 64, lengths 8,192 and 10,001, tp 1 and 2 (8), and qwen2_5_7b +
    # PARD-Qwen2.5-0.5B the same 8 ways, refused by vocabulary and again with
    # use_heterogeneous_vocab (16); every other PARD case the vLLM runner was given both
    # vocabulary sizes, so vLLM's own check ran on it.
    pard = [c for c in VLLM["cases"] if c["inputs"]["speculative"].startswith("pard")]
    from_config = [c for c in pard if c["inputs"]["layers_from"].endswith(".json")]
    assert len(from_config) == 24
    assert {c["inputs"]["model"] for c in from_config} == {"llama3_1_8b", "qwen2_5_7b"}
    qwen = [c for c in from_config if c["inputs"]["model"] == "qwen2_5_7b"]
    assert sum("refused" in c["engine_output"] for c in qwen) == 8
    assert sum(c["inputs"].get("heterogeneous_vocab", False) for c in qwen) == 8
    shipped = {c["inputs"]["family"] for c in pard if c not in from_config}
    assert {"llama3", "qwen2_5", "qwen3"} <= shipped


@pytest.mark.parametrize("model", ["qwen2_5_14b", "qwen2_5_32b", "qwen2_5_72b"])
def test_vllm_refuses_pard_qwen2_5_for_the_larger_vocabulary(model: str) -> None:
    # PARD-Qwen2.5-0.5B keeps Qwen2.5-0.5B's vocabulary, 151,936 (PARD's training does not
    # resize it); Qwen2.5-14B/32B/72B have 152,064: vLLM's verify_equal_vocab_size_if_draft_model
    # refuses the pair, and the golden holds its message.
    (case,) = [
        c["engine_output"] for c in VLLM["cases"]
        if c["inputs"]["model"] == model and c["inputs"]["speculative"] == "pard4"
    ]  # fmt: skip
    assert "Target model vocab_size=152064. Draft model vocab_size=151936." in case["refused"]
    with pytest.raises(NotModelled, match="verify_equal_vocab_size_if_draft_model") as info:
        engine_capacity(family("qwen2_5"), model, 40 * GIB, engine="vllm==0.33.0", max_seq_len=8192,
                        max_num_tokens=8192, speculative="pard4")  # fmt: skip
    assert info.value.reason == "vllm_draft_vocab"


@pytest.mark.parametrize(
    ("model", "instead"),
    [("llama3_1_8b", "eagle3"), ("llama3_1_70b", "eagle3_70b"), ("llama3_2_1b", "eagle3_1b"),
     ("llama3_1_405b", None)],
)  # fmt: skip
def test_two_model_eagle3_is_refused_as_tensorrt_llms_mode(model: str, instead: str | None):
    # TensorRT-LLM's two-model EAGLE3 runs the drafter as a second engine with its own cache;
    # vLLM has no such mode: its EAGLE3 drafter (method eagle3) always keeps its layers in the
    # target's pool, which each model's one-model eagle3 profile models (405B has none).
    # On the starting commit this was "a separate draft model is not modelled for vLLM".
    with pytest.raises(NotModelled) as info:
        engine_capacity(family("llama3"), model, 40 * GIB, engine="vllm==0.33.0", max_seq_len=8192,
                        max_num_tokens=8192, speculative="eagle3_two_model")  # fmt: skip
    message = str(info.value)
    assert info.value.reason == "vllm_two_model"
    assert message.startswith("speculative 'eagle3_two_model': vLLM 0.33.0 cannot run ")
    assert "TensorRT-LLM's two-model speculative decoding" in message
    assert "always keep their layers in the target's KV pool" in message
    assert "not modelled" not in message
    if instead is None:
        assert "instead" not in message
    else:
        assert message.endswith(f"; use speculative {instead!r} instead")
        answered = engine_capacity(family("llama3"), model, 40 * GIB, engine="vllm==0.33.0",
                                   max_seq_len=8192, max_num_tokens=8192,
                                   speculative=instead)  # fmt: skip
        assert answered.num_blocks > 0


def test_compare_answers_pard_for_vllm(capsys: pytest.CaptureFixture[str]) -> None:
    # kvgen compare llama3 llama3_1_8b --gpu-memory 40GiB --speculative pard4 (max_seq_len
    # 32,768 by default): 16,384 blocks of 2,621,440 B as above; a request 32,768 / 16 = 2,048
    # blocks = 5,368,709,120 B; 16,384 / 2,048 = 8 requests, 262,144 tokens.
    assert main(["compare", "llama3", "llama3_1_8b", "--gpu-memory", "40GiB",
                 "--speculative", "pard4", "--engine", "vllm==0.33.0"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if line.startswith("  vllm ")]
    assert row.split()[2:] == ["262,144", "8.000", "5,368,709,120", "16,384"]
    assert "a separate draft model is not modelled for vLLM" not in out


def test_plan_emits_pard_as_vllms_parallel_draft_model(capsys: pytest.CaptureFixture[str]):
    # vLLM has no "pard" method: PARD is SpeculativeConfig(method="draft_model",
    # parallel_drafting=True). The closed-loop golden fed this emission to vLLM's EngineArgs with
    # the draft's config.json: one group of 32 + 16 layers, the 16,384 blocks planned above.
    argv = ["-q", "plan", "llama3", "llama3_1_8b", "--gpu-memory", "40GiB", "--max-seq-len",
            "8192", "--block-size", "16", "--speculative", "pard4", "--emit", "vllm==0.33.0",
            "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    fields = json.loads(capsys.readouterr().out)["fields"]
    assert fields["speculative_config"] == {
        "method": "draft_model", "num_speculative_tokens": 4, "parallel_drafting": True
    }  # fmt: skip
    assert fields["num_gpu_blocks_override"] == 16_384
    want_id = "llama3/llama3_1_8b/p16/s8192/tp1/pard4"
    (case,) = [c for c in CLOSED_LOOP["cases"] if c["id"] == want_id]
    assert case["fields"] == fields
    engine = case["engine"]
    assert (engine["num_blocks"], engine["group_size"], engine["num_groups"]) == (16_384, 48, 1)
    assert engine["engine_settings"]["num_speculative_tokens"] == 4
