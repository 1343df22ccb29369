"""``kvgen plan --gpu/--weights/--emit``: the budget arithmetic and each engine's launch settings,
on the shipped llama3 family (generated/llama3/sizing.py, as committed).

Llama-3.1-8B (the spec): 32 layers, 8 KV heads of 128, bf16, all full attention, so one token
costs 32 x 2 (K, V) x 8 x 128 x 2 B = 131,072 B and one vLLM block of 16 tokens 2,097,152 B.
"""

from __future__ import annotations

import json

import pytest
from kvgen._cli.main import main
from kvgen._deploy.budget import sglang_default_fraction

from tests.unit.test_weights import tiny_llama, write_safetensors

GiB = 1 << 30
H100 = 81559 << 20  # nvidia-smi memory.total of an H100 80GB HBM3, 85,520,809,984 B


def plan(capsys, *args):
    code = main(["-q", "plan", "llama3", "llama3_1_8b", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_vllm_blocks_match_the_golden_that_vllm_produced(capsys):
    # tests/fixtures/engines/vllm.json, llama3_1_8b at 40 GiB, max_model_len 131072: vLLM's own
    # code gave num_blocks 20480 and concurrency 2.5. By hand: 40 GiB / 2,097,152 B = 20,480
    # blocks; one request of 131,072 tokens holds 131,072 / 16 = 8,192 blocks: 20,480 / 8,192.
    code, out, _ = plan(capsys, "--gpu-memory", "40GiB", "--max-seq-len", "131072",
                        "--emit", "vllm==0.33.0", "--format", "json")  # fmt: skip
    assert code == 0
    data = json.loads(out)
    fields = data["fields"]
    assert fields["num_gpu_blocks_override"] == 20480
    assert fields["kv_cache_memory_bytes"] == 40 * GiB
    assert fields["max_model_len"] == 131072
    assert fields["max_num_batched_tokens"] == 8192
    assert fields["block_size"] == 16
    assert fields["kv_cache_dtype"] == "auto"  # bf16: the model's own dtype
    assert fields["tensor_parallel_size"] == 1
    assert data["capacity"]["num_blocks"] == 20480
    assert data["capacity"]["max_concurrency"] == 2.5
    assert "speculative_config" not in fields


def test_vllm_args_are_serve_flags(capsys):
    code, out, _ = plan(
        capsys, "--gpu-memory", "40GiB", "--emit", "vllm==0.33.0", "--format", "args"
    )
    assert code == 0
    flags = out.replace("\\\n", " ").split()
    at = flags.index("--num-gpu-blocks-override")
    assert flags[at + 1] == "20480"  # 40 GiB / 2 MiB blocks, whatever max_seq_len
    assert flags[flags.index("--max-model-len") + 1] == "32768"  # default min(native, 32768)


def test_vllm_speculative_config_is_json(capsys):
    code, out, _ = plan(capsys, "--gpu-memory", "40GiB", "--emit", "vllm", "--format", "json",
                        "--speculative", "ngram4")  # fmt: skip
    assert code == 0
    spec = json.loads(out)["fields"]["speculative_config"]
    assert spec == {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}


def test_hardware_arithmetic_for_vllm_on_an_h100(capsys):
    # 85,520,809,984 x 0.92 (vLLM 0.33.0's gpu_memory_utilization) = 78,679,145,185.28, which
    # vLLM rounds up (request_memory: math.ceil) to 78,679,145,186; - 16 GiB weights - 4 GiB
    # reserve (the default estimate) = 57,204,308,706 B; / 2,097,152 B per block = 27,277
    # blocks (27,277.77 rounded down).
    code, out, _ = plan(
        capsys, "--gpu", "H100-80GB", "--weights", "16GiB", "--emit", "vllm==0.33.0"
    )
    assert code == 0
    assert "gpu_memory_utilization 0.92 (engine default, vllm.config.cache" in out
    assert "(57204308706 B)" in out
    assert "--num-gpu-blocks-override 27277" in out
    assert "--kv-cache-memory-bytes 57204308706" in out
    assert "reserved" not in out and "estimate" in out


def llama_8b_shaped(tmp_path):
    """tests/unit/test_weights.py's tiny Llama with Llama-3.1-8B's decoder shape, which the
    checkpoint check compares with the spec: 32 layers, and k_proj/v_proj of 8 KV heads x 128 =
    1,024 rows (of 64 columns). Per layer at tp 1, bf16: norms 2 x 128 = 256; q_proj, o_proj
    [64, 64] 2 x 8,192 = 16,384; k_proj, v_proj [1024, 64] 2 x 131,072 = 262,144; gate/up/down
    [128x64] 3 x 16,384 = 49,152; 327,936 B a layer, x 32 = 10,493,952; plus embed_tokens and
    lm_head [100, 64] 12,800 each and the final norm 128: 10,519,680 B."""
    write_safetensors(tmp_path / "model.safetensors", tiny_llama(32, kv_rows=1024))
    return tmp_path


def test_weights_from_a_tiny_checkpoint(tmp_path, capsys):
    # 1 GiB x 0.5 = 536,870,912 - 10,519,680 (llama_8b_shaped) - 0 reserve = 526,351,232 B of
    # KV; / 2,097,152 B per block = 250.99: 250 blocks.
    folder = llama_8b_shaped(tmp_path)
    code, out, _ = plan(capsys, "--gpu", "1GiB", "--weights", str(folder), "--reserve", "0B",
                        "--gpu-memory-utilization", "0.5", "--max-seq-len", "2048",
                        "--emit", "vllm==0.33.0", "--format", "json")  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["fields"]["kv_cache_memory_bytes"] == 526_351_232
    assert data["fields"]["num_gpu_blocks_override"] == 250


def test_sglang_max_total_tokens(capsys):
    # 40 GiB / 131,072 B per token = 327,680 tokens, page size 1 (SGLang's default).
    code, out, _ = plan(capsys, "--gpu-memory", "40GiB", "--max-seq-len", "131072",
                        "--emit", "sglang", "--format", "json")  # fmt: skip
    assert code == 0
    fields = json.loads(out)["fields"]
    assert fields["max_total_tokens"] == 327680
    assert fields["context_length"] == 131072
    assert fields["page_size"] == 1
    assert fields["chunked_prefill_size"] == 8192
    assert "mem_fraction_static" not in fields  # a given KV budget has no fraction


def test_sglang_default_fraction_on_an_h100_at_tp8():
    # memory_hook.py: 81,559 MiB is in [60, 90) GiB, tp >= 4 -> decode max_bs 512, lowered to
    # max_running_requests 64; reserved = 512 + 8192 x 1.5 + 8 x 1 / 8 x 1024 + 64 x 2
    # = 13,952 MiB (over the 10,240 floor); (81,559 - 13,952) / 81,559 = 0.82893 -> 0.829.
    fraction = sglang_default_fraction(
        H100, tp_size=8, pp_size=1, chunked_prefill_size=8192, max_running=64
    )
    assert fraction == 0.829


def test_trtllm_yaml_and_its_arithmetic(capsys):
    # (85,520,809,984 - 17,179,869,184 - 4,294,967,296) x 0.9 = 64,045,973,504 x 0.9
    # = 57,641,376,153.6 -> 57,641,376,153 B of KV budget, emitted in whole grains of the V2
    # manager (2 MiB << 4 = 32 MiB from 16 GiB, which it would round up to):
    # floor(57,641,376,153 / 33,554,432) = 1,717 grains = 57,612,959,744 B.
    code, out, _ = plan(capsys, "--gpu", "H100-80GB", "--weights", "16GiB", "--emit", "trtllm",
                        "--format", "yaml")  # fmt: skip
    assert code == 0
    assert "  max_gpu_total_bytes: 57612959744\n" in out
    assert "  tokens_per_block: 32\n" in out  # the spec's tokens_per_block
    assert "  free_gpu_memory_fraction: 0.9\n" in out
    assert "max_seq_len: 32768\n" in out


def test_a_budget_that_goes_negative_exits_1_with_the_arithmetic(capsys):
    # 46,068 MiB (L40S) x 0.92 - 60 GiB - 4 GiB < 0
    code, out, _ = plan(capsys, "--gpu", "L40S", "--weights", "60GiB", "--emit", "vllm")
    assert code == 1
    assert "weights/rank" in out and "KV budget per rank" in out
    assert "does not fit: the KV budget is not positive" in out
    assert "--num-gpu-blocks-override" not in out  # no settings for a plan that does not fit


def test_an_engine_that_cannot_hold_one_request_exits_1(capsys):
    # 1 GiB holds 8,192 tokens (1 GiB / 131,072 B), fewer than one request of 32,768.
    code, out, _ = plan(capsys, "--gpu-memory", "1GiB", "--emit", "vllm")
    assert code == 1
    assert "does not fit" in out and "cannot hold one request" in out
    code, out, _ = plan(capsys, "--gpu-memory", "1GiB", "--emit", "sglang")
    assert code == 1
    assert "does not fit: holds 0.250 requests" in out  # 8,192 / 32,768


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpu", "H10", "--weights", "1GiB"], "did you mean"),
        (["--gpu", "80", "--weights", "1GiB"], "needs a unit"),
        (["--gpu", "H100", "--gpu-memory", "1GiB"], "--gpu needs --weights"),
        (["--gpu-memory", "40GiB", "--emit", "trtllm", "--format", "args"], "--format yaml"),
        (["--gpu-memory", "40GiB", "--format", "yaml"], "add --emit"),
        (["--gpu", "H100", "--weights", "/nonexistent/w"], "no such file"),
        (["--gpu", "H100", "--weights", "1GiB", "--gpus", "2", "--tp-size", "4"], "fewer than"),
    ],
)
def test_refusals_are_usage_errors(capsys, args, message):
    code, _, err = plan(capsys, *args)
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_weights_dir_without_safetensors(tmp_path, capsys):
    code, _, err = plan(capsys, "--gpu", "H100", "--weights", str(tmp_path))
    assert code == 2
    assert "no *.safetensors file" in err


def test_plan_without_the_new_flags_is_unchanged(capsys):
    code, out, _ = plan(capsys, "--gpu-memory", "16GiB")
    assert code == 0
    assert out.startswith("llama3/llama3_1_8b, speculative none, semantics trtllm-v2")


def test_readme_emit_example_is_the_commands_output(capsys):
    import re
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    regions = re.findall(
        r"<!-- emit:begin (kvgen [^\n]*?) -->\n```console\n\$ [^\n]*\n(.*?)```\n<!-- emit:end -->",
        (repo / "README.md").read_text(encoding="utf-8"),
        re.S,
    )
    assert regions
    for command, shown in regions:
        result = subprocess.run(
            [sys.executable, "-m", "kvgen", "-q", *command.split()[1:]],
            cwd=repo, capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert result.stdout == shown


@pytest.mark.parametrize(
    ("family", "model", "ratio", "value"),
    [
        # SGLang 0.5.23's fallbacks (sglang/srt/arg_groups/fields/schedule.py), which the
        # engine model plans with: the sliding pool 0.8 of the full pool's tokens, the Mamba
        # state 0.9 of the KV memory.
        ("gpt_oss", "gpt_oss_20b", "swa_full_tokens_ratio", 0.8),
        ("qwen3_next", "qwen3_next_80b_a3b", "mamba_full_memory_ratio", 0.9),
    ],
)
def test_sglang_states_the_pool_ratio_it_was_planned_with(capsys, family, model, ratio, value):
    code = main(["-q", "plan", family, model, "--gpu-memory", "40GiB", "--emit", "sglang",
                 "--format", "json"])  # fmt: skip
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fields"][ratio] == value
    assert data["fields"]["max_total_tokens"] == data["capacity"]["kv_tokens"]


def test_a_profile_the_engine_cannot_run_is_a_usage_error(capsys):
    # SGLang 0.5.23 has no parallel-draft (PARD) algorithm (speculative/spec_info.py).
    code, out, err = plan(capsys, "--gpu-memory", "40GiB", "--emit", "sglang",
                          "--speculative", "pard4")  # fmt: skip
    assert code == 2 and out == ""
    assert "SGLang 0.5.23 cannot run PARD" in err


def test_sglang_ngram_launch_is_a_chain_of_the_profile_draft_length(capsys):
    # ngram4: 4 drafted tokens verify 5 (speculative_num_draft_tokens), as a chain
    # (bfs breadth 1, which _handle_ngram makes the top-k). NGRAM adds no draft layers
    # (pool_configurator.py charges EAGLE/STANDALONE drafters only): llama3_1_8b's
    # 32 x 8 x 128 x 2 x 2 = 131,072 B per token, 40 GiB / 131,072 = 327,680 tokens, what
    # SGLang's own configurator gave (tests/fixtures/engines/sglang.json, llama3_1_8b ngram4).
    code, out, _ = plan(capsys, "--gpu-memory", "40GiB", "--emit", "sglang", "--format", "json",
                        "--speculative", "ngram4")  # fmt: skip
    assert code == 0
    fields = json.loads(out)["fields"]
    assert fields["speculative_algorithm"] == "NGRAM"
    assert fields["speculative_num_draft_tokens"] == 5
    assert fields["speculative_ngram_max_bfs_breadth"] == 1
    assert fields["max_total_tokens"] == 327_680


def test_vllm_refuses_a_draft_of_another_vocabulary_size(capsys):
    # vLLM 0.33.0 (SpeculativeConfig.verify_equal_vocab_size_if_draft_model) refuses a
    # "draft_model" drafter whose vocab_size differs from the target's: Qwen2.5-0.5B has
    # 151,936, the 7B 152,064 (each config.json vocab_size). Nothing is emitted.
    qwen = ["-q", "plan", "qwen2_5", "--gpu-memory", "40GiB", "--max-seq-len", "8192",
            "--speculative", "draft_0_5b", "--emit", "vllm==0.33.0",
            "--format", "json"]  # fmt: skip
    code = main([*qwen[:3], "qwen2_5_7b", *qwen[3:]])
    out = capsys.readouterr()
    assert code == 2 and out.out == ""
    assert "speculative 'draft_0_5b': vLLM 0.33.0 refuses a draft model whose vocab_size" in out.err
    assert "verify_equal_vocab_size_if_draft_model" in out.err and "Traceback" not in out.err
    # The 1.5B has the 0.5B's 151,936: answered. By hand, page 16: the target keeps 28 layers
    # x 2 (K, V) x 2 heads x 128 x 2 B = 28,672 B a token, the draft 24 x 2 x 2 x 64 x 2 B =
    # 12,288 B, both in one pool: 40,960 B a token, 655,360 B a block; 40 GiB / 655,360 =
    # 65,536 blocks.
    code = main([*qwen[:3], "qwen2_5_1_5b", *qwen[3:]])
    out = capsys.readouterr()
    assert code == 0
    fields = json.loads(out.out)["fields"]
    assert fields["num_gpu_blocks_override"] == 65536
    assert fields["speculative_config"] == {"method": "draft_model", "num_speculative_tokens": 4}


def test_hardware_json_without_emit_shows_the_budget(capsys):
    code, out, _ = plan(capsys, "--gpu", "H100-80GB", "--weights", "16GiB", "--format", "json")
    assert code == 0
    data = json.loads(out)
    # trtllm-v2 by default: (85,520,809,984 - 16 GiB - 4 GiB) x 0.9 -> 57,641,376,153 B
    assert data["budget"]["kv_bytes"] == 57_641_376_153
    assert data["budget"]["fraction_source"].startswith("engine default, tensorrt_llm")
    # ... emitted as 1,717 whole grains of 32 MiB (test_trtllm_yaml_and_its_arithmetic).
    kv = data["launch"]["fields"]["kv_cache_config"]
    assert kv["max_gpu_total_bytes"] == 1717 * (32 << 20) == 57_612_959_744


def test_weights_split_over_two_tensor_parallel_ranks(tmp_path, capsys):
    # llama_8b_shaped at tp 2 (the spec's 8 KV heads split 4 a rank): per layer the norms stay
    # whole (256 B), q/o halve (8,192), k/v halve (131,072), gate/up/down halve (24,576):
    # 164,096 B x 32 layers = 5,251,072; embed_tokens and lm_head pad 100 rows to 128 and keep
    # 64 rows of 128 B each: 8,192 B x 2; the final norm 128 B. 5,251,072 + 16,384 + 128 =
    # 5,267,584 B. 1 GiB x 0.5 - 5,267,584 = 531,603,328 B of KV.
    folder = llama_8b_shaped(tmp_path)
    code, out, _ = plan(capsys, "--gpu", "1GiB", "--weights", str(folder), "--reserve", "0B",
                        "--gpu-memory-utilization", "0.5", "--max-seq-len", "2048",
                        "--tp-size", "2", "--emit", "vllm", "--format", "json")  # fmt: skip
    assert code == 0
    assert json.loads(out)["fields"]["kv_cache_memory_bytes"] == 531_603_328


def test_weights_as_a_bare_number_needs_a_unit(capsys):
    code, _, err = plan(capsys, "--gpu", "H100", "--weights", "17")
    assert code == 2
    assert "a size needs a unit" in err


def test_trtllm_capacity_is_what_the_engine_split_holds(capsys):
    # gemma3_1b, 40 GiB, 32,768 tokens, B = 8, N = 8,192 (tpb 64): the engine's grain from
    # 16 GiB is 32 MiB, so the quota is 1,280 grains. The full group (262,144 B slots, ratio
    # 262,144 / 1,703,936 = 2/13) gets round(1,280 x 2/13) = round(196.92) = 197 grains =
    # 6,304 MiB / 0.25 MiB = 25,216 slots; the window group (1,441,792 B) 1,083 grains =
    # 34,656 MiB / 1.375 MiB = 25,204 slots. kvgen's pools at T need 8 x pages(512, 1) +
    # ceil(min(T, N)/64) = 72 + 128 = 200 window pages and ceil(T/64) full pages: the full
    # group bounds T at 25,216 x 64 = 1,613,824 tokens (the affine estimate, which sizes
    # kvgen's own pools from the same bytes, says 10,237,952).
    code = main(["-q", "plan", "gemma3", "gemma3_1b", "--gpu-memory", "40GiB", "--max-seq-len",
                 "32768", "--emit", "trtllm==early-2026", "--format", "json"])  # fmt: skip
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fields"]["kv_cache_config"]["max_gpu_total_bytes"] == 1280 * (32 << 20)
    capacity = data["capacity"]
    assert capacity["kv_tokens"] == 25_216 * 64 == 1_613_824
    assert capacity["num_blocks"] == 25_216
    assert [(p["life_cycles"], p["planned_pages"], p["engine_pages"])
            for p in capacity["engine_pools"]["target"]] == [
        (["swa512"], 200, 25_204), (["full"], 25_216, 25_216)]  # fmt: skip
    # engine_capacity answers the same (its split), so no note reconciles two figures.
    assert not any("pool groups" in note for note in data["notes"])
    from generated.gemma3 import sizing

    answered = sizing.engine_capacity("gemma3_1b", 40 << 30, engine="trtllm==early-2026",
                                      max_seq_len=32768, max_num_tokens=8192)  # fmt: skip
    assert answered.kv_tokens == 1_613_824


def test_emit_applies_the_kv_cache_dtype_what_if(capsys):
    # --kv-cache-dtype fp8 halves a token: 32 x 2 x 8 x 128 x 1 B = 65,536 B, a 16-token vLLM
    # block 1,048,576 B, 40 GiB / 1 MiB = 40,960 blocks (bf16: 20,480); vLLM's own name for the
    # dtype is fp8_e4m3. On main before this test the flag was ignored by --emit (auto, 20,480).
    code, out, _ = plan(capsys, "--gpu-memory", "40GiB", "--kv-cache-dtype", "fp8",
                        "--emit", "vllm==0.33.0", "--format", "json")  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["fields"]["kv_cache_dtype"] == "fp8_e4m3"
    assert data["fields"]["num_gpu_blocks_override"] == 40960


def test_emit_takes_rope_scaled_lengths_and_refuses_them_without_the_flag(capsys):
    # llama3_1_8b is native 131,072. 262,144 tokens are 262,144 / 16 = 16,384 blocks a request:
    # 20,480 / 16,384 = 1.25 requests at 40 GiB.
    code, out, err = plan(capsys, "--gpu-memory", "40GiB", "--max-seq-len", "262144",
                          "--emit", "vllm", "--format", "json")  # fmt: skip
    assert code == 2 and "give --rope-scaled" in err and out == ""
    code, out, _ = plan(capsys, "--gpu-memory", "40GiB", "--max-seq-len", "262144",
                        "--rope-scaled", "--emit", "vllm", "--format", "json")  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["fields"]["max_model_len"] == 262144
    assert data["capacity"]["max_concurrency"] == 1.25


def test_emit_trtllm_block_size_is_the_pages_tokens_and_dcp_is_refused(capsys):
    # tokens_per_block 64 (the spec's 32 as a what-if): 40 GiB / (64 x 131,072 B) = 5,120 pages.
    code, out, _ = plan(capsys, "--gpu-memory", "40GiB", "--block-size", "64",
                        "--emit", "trtllm", "--format", "json")  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["fields"]["kv_cache_config"]["tokens_per_block"] == 64
    assert data["capacity"]["num_blocks"] == 5120
    code, out, err = plan(capsys, "--gpu-memory", "40GiB", "--tp-size", "8", "--dcp-size", "2",
                          "--emit", "trtllm")  # fmt: skip
    assert code == 2 and "--dcp-size" in err and out == ""


def test_sglang_emit_says_it_lowers_max_running_requests_on_a_recurrent_hybrid(capsys):
    # Qwen3-Next-80B, 40 GiB, mtp2: K = 162 state slots (tests/unit/test_engines.py derives
    # it) under the extra_buffer strategy an H100/H200 launch resolves, and SGLang runs at
    # most 162 // 5 = 32 requests (resolve_max_num_reqs; its own KVCacheConfigurator from
    # resolved ServerArgs gave 32 for --max-running-requests 64). The strategy is emitted, so
    # a platform that would resolve no_buffer (3 slots a request) cannot change the plan.
    args = ["-q", "plan", "qwen3_next", "qwen3_next_80b_a3b", "--gpu-memory", "40GiB",
            "--max-seq-len", "8192", "--speculative", "mtp2", "--emit", "sglang",
            "--format", "json"]  # fmt: skip
    assert main([*args, "--max-batch-size", "64"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["fields"]["max_running_requests"] == 64
    assert printed["fields"]["mamba_radix_cache_strategy"] == "extra_buffer"
    assert printed["capacity"]["max_concurrency"] == 32.0
    assert any(
        "lowers max_running_requests to 32: one running request per 5 recurrent state slots "
        "under extra_buffer" in note
        for note in printed["notes"]
    )
    # 8 requests fit under the cap: no note.
    assert main([*args, "--max-batch-size", "8"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert not any("max_running_requests" in note for note in printed["notes"])


def test_vllm_emits_a_models_own_per_token_head_dtype(capsys):
    # qwen3_235b_a22b_fp8_pth sets kv_cache_dtype fp8_per_token_head under a bf16 family; the
    # starting commit emitted the family's ("auto": a bf16 cache, twice the bytes). vLLM 0.33.0
    # (tests/fixtures/engines/closed_loop_vllm.json, the same fields fed to EngineArgs): one
    # block is 94 layers x 16 x 4 heads x (128 + 128 + 2 x 4) B = 1,588,224 B, and
    # 40 GiB // 1,588,224 = 27,042 blocks (27,042.8).
    code = main(["-q", "plan", "qwen3_moe", "qwen3_235b_a22b_fp8_pth", "--gpu-memory", "40GiB",
                 "--max-seq-len", "8192", "--emit", "vllm==0.33.0",
                 "--format", "json"])  # fmt: skip
    assert code == 0
    fields = json.loads(capsys.readouterr().out)["fields"]
    assert fields["kv_cache_dtype"] == "fp8_per_token_head"
    assert fields["num_gpu_blocks_override"] == 27_042
