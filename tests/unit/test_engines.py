"""kvgen._engines.capacity against the engines' goldens, and each pool-policy term derived by hand.

The goldens in tests/fixtures/engines/ come from ``bench/engines/refresh_goldens.py``: vLLM's
numbers from each vLLM release's own planner (0.33.0: vllm.json, 0.34.0: vllm-0.34.0.json,
each replayed as ``engine="vllm==RELEASE"``) and SGLang 0.5.23's own pool configurators, run on
CPU with the stubs each runner names. No engine is needed here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from kvgen._deploy.emit import _sglang_mamba_flags
from kvgen._engines import _sglang, _vllm
from kvgen._engines._terms import policy_terms
from kvgen._engines.capacity import ENGINES, POLICY_TERMS, EngineCapacity, engine_capacity
from kvgen._model.engine_rows import engine_tables
from kvgen._spec.loader import load_bytes, load_family
from kvgen._spec.models import Family
from kvgen.sizing.engines_core import NotModelled
from kvgen.sizing.engines_registry import VLLM as VLLM_ENGINE
from kvgen.sizing.engines_registry import release, releases_of
from kvgen.sizing.engines_rows import qkv_split_refusal, split_heads
from kvgen.sizing.engines_sglang import SGLANG_MAMBA_SLOTS_PER_REQUEST, SGLANG_MAMBA_STRATEGIES

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "engines"
GIB40 = 40 << 30  # 42,949,672,960 bytes


@cache
def family(name: str) -> Family:
    shipped = ROOT / "schema" / "families" / f"{name}.yaml"
    return load_family(
        shipped if shipped.exists() else ROOT / "tests/fixtures/specs" / f"{name}.yaml"
    )


def golden(engine: str) -> dict:
    return json.loads((FIXTURES / f"{engine}.json").read_text(encoding="utf-8"))


def case_id(case: dict) -> str:
    i = case["inputs"]
    more = "" if "tp_size" not in i else f"-n{i['max_num_tokens']}-tp{i['tp_size']}"
    if i.get("async_scheduling") is False:
        more += "-sync"
    if "enable_prefix_caching" in i:
        more += {None: "", True: "-pc", False: "-nopc"}[i["enable_prefix_caching"]]
    if i.get("budget_bytes", GIB40) != GIB40:
        more += f"-g{i['budget_bytes']}"
    if i.get("heterogeneous_vocab"):
        more += "-hv"
    return f"{i['model']}-b{i['block_size']}-s{i['max_model_len']}-{i['speculative']}{more}"


def golden_kwargs(inputs: dict, engine: str) -> dict:
    """engine_capacity's keywords for a golden case: vLLM's prefix caching off is
    mamba_cache_mode "none" (MambaModelConfig); unset, the engine's default ("align")."""
    kwargs = {
        "engine": engine,
        "max_seq_len": inputs["max_model_len"],
        "max_num_tokens": inputs["max_num_tokens"],
        "block_size": inputs["block_size"],
        "speculative": inputs["speculative"],
        "tp_size": inputs.get("tp_size", 1),
    }
    if "max_running_requests" in inputs:  # as kvgen plan --emit sglang sets it
        kwargs["max_batch_size"] = inputs["max_running_requests"]
    if "sglang_flags" in inputs:
        # The Mamba radix cache settings the case launched SGLang with: the kvgen strategy
        # whose kvgen plan --emit sglang writes exactly those fields (so emit and the golden
        # are one fact).
        (kwargs["mamba_radix_cache_strategy"],) = (
            strategy for strategy in SGLANG_MAMBA_STRATEGIES
            if _sglang_mamba_flags(strategy)[0] == inputs["sglang_flags"]
        )  # fmt: skip
    if release(engine).engine is VLLM_ENGINE:
        kwargs["async_scheduling"] = inputs.get("async_scheduling", True)
        if inputs.get("heterogeneous_vocab"):  # speculative_config use_heterogeneous_vocab
            kwargs["heterogeneous_vocab"] = True
        if (
            inputs.get("enable_prefix_caching", True) is False
            or "enable_prefix_caching" not in inputs
        ):
            # Cases built from kvgen's rows were run with prefix caching off.
            kwargs["mamba_cache_mode"] = "none"
    return kwargs


# Each vLLM release modelled, with the goldens its own code gave (refresh_goldens.py: the
# first release keeps vllm.json, each later one vllm-<release>.json). A release modelled
# without goldens fails here.
VLLM_GOLDENS = {
    each.version: golden("vllm" if each is releases_of(VLLM_ENGINE)[0] else f"vllm-{each.version}")
    for each in releases_of(VLLM_ENGINE)
}
VLLM = VLLM_GOLDENS["0.33.0"]
VLLM_CASES = [
    (f"vllm=={version}", case) for version, data in VLLM_GOLDENS.items() for case in data["cases"]
]
SGLANG = golden("sglang")


def _engine_modelled(name: str) -> bool:
    """Whether any model of the family has engine rows (a family no engine models, such as
    one with KV sharing, chunked attention or a cache layout with scales, raises NotModelled
    instead and has no engine golden to compare)."""
    return any(not row.unmodelled for row in engine_tables(family(name)).values())


def test_goldens_cover_every_shipped_family_and_state_their_provenance() -> None:
    everything = {p.stem for p in (ROOT / "schema" / "families").glob("*.yaml")}
    # The families whose shared engine rows answer no model: every model refused with
    # NotModelled by vLLM (each refusal is tested with its reason), never sized by a guess.
    # SGLang answers llama3_2_vision from rows of its own (tests/generated/test_cross_attention).
    refused = {"llama3_2_vision"}
    assert {name for name in everything if not _engine_modelled(name)} == refused
    for name in sorted(refused):
        for model in family(name).models:
            with pytest.raises(NotModelled):
                engine_capacity(
                    family(name), model.name, 1 << 36, engine="vllm", max_seq_len=4096,
                    max_num_tokens=4096,
                )  # fmt: skip
    shipped = everything - refused
    for data, version, engine_refused in (
        (VLLM, "0.33.0", set()), (SGLANG, "0.5.23", set())
    ):  # fmt: skip
        assert data["engine_version"] == version
        covered = {c["inputs"]["family"] for c in data["cases"]}
        assert shipped - engine_refused <= covered, sorted(shipped - engine_refused - covered)
        assert data["provenance"]["modules"] and data["provenance"]["functions"]
        sizes = {(c["inputs"]["block_size"]) for c in data["cases"]}
        assert {16, 64} <= sizes
    assert VLLM["provenance"]["produced_by"].startswith("engine code")
    assert SGLANG["provenance"]["produced_by"].startswith("engine code")


def _capacity(engine: str, inputs: dict) -> EngineCapacity:
    return engine_capacity(
        family(inputs["family"]), inputs["model"], inputs["budget_bytes"],
        **golden_kwargs(inputs, engine),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("engine", "case"), VLLM_CASES, ids=[f"{e}-{case_id(c)}" for e, c in VLLM_CASES]
)
def test_vllm_matches_its_own_planner(engine: str, case: dict) -> None:
    inputs, want = case["inputs"], case["engine_output"]
    named = re.escape(release(engine).named)  # every refusal names the release asked
    if "refused" in want and "parallel_drafting is only supported" in want["refused"]:
        # vLLM 0.34.0 refuses PARD's parallel_drafting with a draft_model; kvgen quotes it.
        profile = re.escape(repr(inputs["speculative"]))
        with pytest.raises(ValueError, match=rf"^{named} refuses speculative {profile} \(pard\)"):
            _capacity(engine, inputs)
        with pytest.raises(ValueError) as err:
            _capacity(engine, inputs)
        assert want["refused"] in str(err.value)
        return
    if "refused" in want and "use_heterogeneous_vocab" in want["refused"]:
        # vLLM 0.34.0's SpeculativeConfig has no use_heterogeneous_vocab; kvgen quotes it.
        with pytest.raises(ValueError, match=rf"^{named} refuses heterogeneous_vocab: ") as err:
            _capacity(engine, inputs)
        assert want["refused"] in str(err.value)
        return
    if "refused" in want and "not supported anymore" in want["refused"]:
        # vLLM cannot run the architecture at all; kvgen says so with the same last version.
        last = want["refused"].split("until v")[1].split(",")[0]
        with pytest.raises(ValueError, match=rf"{named} cannot run .*until vLLM {last}"):
            _capacity(engine, inputs)
        return
    if "refused" in want and "are not supported for now" in want["refused"]:
        # The architecture is not in vLLM's registry at all (OpenELM); kvgen names it.
        arch = want["refused"].split("['")[1].split("']")[0]
        assert arch == "OpenELMForCausalLM"
        with pytest.raises(ValueError, match=rf"{named} cannot run OpenELM: " + arch):
            _capacity(engine, inputs)
        return
    if "refused" in want and "same vocabulary size" in want["refused"]:
        # vLLM's SpeculativeConfig refuses a draft of another vocabulary size (Qwen2.5-0.5B's
        # 151,936 for the 7B's 152,064; Gemma-3-1B's 262,144 for the 4B-27B's 262,208, each
        # from config.json or transformers' Gemma3TextConfig default); kvgen names the rule.
        with pytest.raises(NotModelled, match="verify_equal_vocab_size_if_draft_model") as info:
            _capacity(engine, inputs)
        assert info.value.reason == "vllm_draft_vocab"
        return
    if "refused" in want:
        # vLLM refuses the tp size (its reason is in the golden); kvgen names the same count.
        count = (
            want["refused"].split("(")[1].split(")")[0]
            if "Total" in want["refused"]
            else (want["refused"].split("the ")[1].split(" KV")[0])
        )
        with pytest.raises(
            ValueError, match=rf"^{named} refuses tp_size .*the (model's )?{count} "
        ):
            _capacity(engine, inputs)
        return
    if "error" in want:
        # vLLM refuses to start; kvgen says so and names the same longest length that fits.
        with pytest.raises(
            ValueError, match=rf"longest that fits: {want['estimated_max_model_len']}$"
        ):
            _capacity(engine, inputs)
        return
    got = _capacity(engine, inputs)
    assert got.kv_tokens == want["kv_tokens"]
    assert got.num_blocks == want["num_blocks"]
    assert got.request_bytes == want["request_bytes"]
    assert round(got.max_concurrency, 3) == round(want["max_concurrency"], 3)
    fam = family(inputs["family"])
    kwargs = golden_kwargs(inputs, engine)
    plan = _vllm.vllm_plan(
        fam,
        fam.model(inputs["model"]),
        block_size=inputs["block_size"],
        tp_size=kwargs["tp_size"],
        speculative=fam.profile(inputs["speculative"]),
        mamba_cache_mode=kwargs.get("mamba_cache_mode", "align"),
        heterogeneous_vocab=kwargs.get("heterogeneous_vocab", False),
    )
    assert plan.bytes_per_block == want["bytes_per_block"]
    assert plan.block_size == want["attention_block_size"]
    assert sum(g.group_count for g in plan.groups) == want["num_groups"]
    assert plan.padding_layers == want["padding_layers"]


@pytest.mark.parametrize("case", SGLANG["cases"], ids=case_id)
def test_sglang_matches_its_own_pool_configurators(case: dict) -> None:
    inputs, want = case["inputs"], case["engine_output"]
    fam = family(inputs["family"])
    entry = engine_tables(fam)[inputs["model"]]
    tp = inputs.get("tp_size", 1)
    if qkv_split_refusal(entry.query_heads, split_heads(entry.layers), tp):
        # The pool configurators (run on CPU) size any tp; SGLang's model refuses to build
        # (QKVParallelLinear's divide(), sglang/srt/layers/linear.py), and so does kvgen.
        with pytest.raises(ValueError, match=rf"^SGLang 0\.5\.23 refuses tp_size {tp}: "):
            _capacity("sglang", inputs)
        return
    if "error" in want:
        with pytest.raises(ValueError) as refused:
            _capacity("sglang", inputs)
        if "raised_by" in want:  # kvgen names the SGLang function that refuses
            assert want["raised_by"].split(".")[-1] in str(refused.value)
        return
    got = _capacity("sglang", inputs)
    assert got.kv_tokens == want["max_total_num_tokens"]
    if want.get("is_encoder_decoder"):
        # Mllama: one image's tokens (max_num_tiles x num_patches, mllama.py pad_input_ids)
        # take cell-size slots of the one pool before the request's max_model_len text.
        tokens = inputs["max_model_len"] + want["image_tokens_per_image"]
        assert got.request_bytes == tokens * want["cell_size"]
        assert got.max_concurrency == want["max_total_num_tokens"] / tokens
    if "max_running_requests_unset" in want:
        # A hybrid runs at most what resolve_max_num_reqs allows with no request cap of its
        # own (slots // 3), whatever tokens the attention pool holds.
        tokens = want["max_total_num_tokens"] / inputs["max_model_len"]
        assert got.max_concurrency == min(tokens, want["max_running_requests_unset"])
    plan = _sglang.sglang_plan(
        fam, fam.model(inputs["model"]), tp_size=inputs.get("tp_size", 1),
        speculative=fam.profile(inputs["speculative"]),
    )  # fmt: skip
    pools = _sglang.sglang_pools(
        plan, inputs["budget_bytes"], inputs["block_size"],
        max_running_requests=inputs.get("max_running_requests", 8),
        mamba_radix_cache_strategy=golden_kwargs(inputs, "sglang").get(
            "mamba_radix_cache_strategy", "extra_buffer"
        ),
    )  # fmt: skip
    if "mamba_ratio" in want:  # SGLang's _calculate_mamba_ratio for the resolved settings
        strategy = golden_kwargs(inputs, "sglang").get("mamba_radix_cache_strategy")
        assert SGLANG_MAMBA_SLOTS_PER_REQUEST[strategy or "extra_buffer"] == want["mamba_ratio"]
    assert pools.swa_tokens == want.get("swa_max_total_num_tokens", 0)
    assert pools.state_slots == want.get("max_mamba_cache_size", 0)


# ----------------------------------------------------------------------------- vLLM terms


def test_vllm_group_padding_layers_gemma3_27b() -> None:
    # 52 sliding + 10 full layers: group size = min(52, 10) = 10 (52 >= 1.5 x 10), so the
    # sliding layers take ceil(52/10) = 6 groups and the full ones 1: 7 groups, and
    # 6 x 10 - 52 = 8 padding layers. A page is 16 tokens x 16 heads x (128+128) x 2 B =
    # 131,072 B; a block holds one page of the 10 layers of a group: 1,310,720 B.
    g = family("gemma3")
    plan = _vllm.vllm_plan(g, g.model("gemma3_27b"), block_size=16)
    assert (plan.group_size, plan.padding_layers, plan.bytes_per_block) == (10, 8, 1_310_720)
    assert sorted((grp.attention, grp.group_count) for grp in plan.groups) == [
        ("full", 1),
        ("sliding", 6),
    ]


def test_vllm_groups_take_the_largest_count_under_one_and_a_half() -> None:
    # 12 sliding + 13 full (vLLM's own example, gpt-oss + an EAGLE layer): 13 < 1.5 x 12, so
    # the group size is 13: two groups, one padding layer (13 - 12).
    text = b"""schema_version: 1
family: synth
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: m
    max_seq_len: 8192
    layer_kinds:
      s: {attention: sliding, window: 128, kv_heads: 8, head_dim: 64}
      f: {attention: full, kv_heads: 8, head_dim: 64}
    layers: {count: 25, pattern: [s, f]}
"""
    fam = load_bytes("synth.yaml", text).family
    assert fam is not None
    plan = _vllm.vllm_plan(fam, fam.model("m"), block_size=16)
    assert (plan.group_size, plan.padding_layers, len(plan.groups)) == (13, 1, 2)


def test_vllm_per_request_swa_bound_adds_the_in_flight_budget() -> None:
    # gemma3_27b, S = 131,072, N = 8,192, block 16 (vLLM 0.33.0's default). A sliding group reserves
    # ceil(min(1024 - 1 + in_flight, S) / 16) + 1 blocks:
    #   async (2 batches): in_flight 16,384 -> ceil(17,407/16) + 1 = 1,089
    #   sync (1 batch):    in_flight  8,192 -> ceil( 9,215/16) + 1 =   577
    # the full group ceil(131,072/16) = 8,192; 6 sliding groups + 1 full.
    # async: 6 x 1,089 + 8,192 = 14,726 blocks x 1,310,720 B = 19,301,662,720 B
    # sync:  6 x   577 + 8,192 = 11,654 blocks x 1,310,720 B = 15,275,130,880 B
    # num_blocks = 42,949,672,960 // 1,310,720 = 32,768 either way.
    g = family("gemma3")
    kwargs = {"engine": "vllm==0.33.0", "max_seq_len": 131072, "max_num_tokens": 8192}
    on = engine_capacity(g, "gemma3_27b", GIB40, **kwargs)
    off = engine_capacity(g, "gemma3_27b", GIB40, async_scheduling=False, **kwargs)
    assert (on.request_bytes, on.num_blocks) == (19_301_662_720, 32_768)
    assert (off.request_bytes, off.num_blocks) == (15_275_130_880, 32_768)
    # concurrency 32,768 / 14,726 = 2.2252; tokens int(2.2252 x 131,072) = 291,658
    assert on.kv_tokens == 291_658 and round(on.max_concurrency, 3) == 2.225


def test_vllm_null_block_refuses_a_request_that_fills_the_whole_budget() -> None:
    # llama3_1_70b at S = 131,072: 80 layers x 8 heads x 256 x 2 B = 327,680 B per token, a
    # block of 16 tokens 5,242,880 B; one request needs 8,192 blocks = 42,949,672,960 B, the
    # whole 40 GiB, but the null block leaves 8,191 blocks usable: 8,191 x 16 = 131,056 tokens.
    with pytest.raises(ValueError, match=r"longest that fits: 131056$"):
        engine_capacity(
            family("llama3"), "llama3_1_70b", GIB40,
            engine="vllm==0.33.0", max_seq_len=131072, max_num_tokens=8192,
        )  # fmt: skip


def test_vllm_mamba_page_unification_qwen3_next() -> None:
    # Attention: 2 heads x (256+256) x 2 B = 2,048 B per token; a GatedDeltaNet state is
    # 1,097,728 B. Block 16: 16 x ceil(1,097,728 / (16 x 2,048)) = 16 x 34 = 544 tokens, a page
    # of 544 x 2,048 = 1,114,112 B, so each state page is padded by 16,384 B. Block 64:
    # 64 x ceil(1,097,728 / 131,072) = 64 x 9 = 576 tokens.
    # (Prefix caching off, mamba_cache_mode "none": no 64-token checkpoint grid.)
    q = family("qwen3_next")
    model = q.model("qwen3_next_80b_a3b")
    plan16 = _vllm.vllm_plan(q, model, block_size=16, mamba_cache_mode="none")
    assert (plan16.block_size, plan16.mamba_page_padding) == (544, 16_384)
    assert _vllm.vllm_plan(q, model, block_size=64, mamba_cache_mode="none").block_size == 576
    # 36 linear + 12 full: 3 state groups + 1 attention group of 12 layers each;
    # a block is 12 x 1,114,112 = 13,369,344 B.
    assert plan16.bytes_per_block == 13_369_344


# ----------------------------------------------------------------------------- SGLang terms


def test_sglang_sizes_sliding_layers_full_length_outside_its_hybrid_swa_list() -> None:
    # gemma3_27b: all 62 layers x 16 heads x 256 x 2 B = 507,904 B per token;
    # 42,949,672,960 // 507,904 = 84,562 tokens (page 1), 84,560 at page 16.
    g = family("gemma3")
    kwargs = {"engine": "sglang", "max_seq_len": 8192, "max_num_tokens": 8192}
    assert engine_capacity(g, "gemma3_27b", GIB40, **kwargs).kv_tokens == 84_562
    assert engine_capacity(g, "gemma3_27b", GIB40, block_size=16, **kwargs).kv_tokens == 84_560


def test_sglang_swa_ratio_gpt_oss_20b() -> None:
    # 12 sliding + 12 full layers x 8 heads x 128 x 1 B (fp8) = 12,288 B per token each.
    # Per full-pool token: 12,288 + 0.8 x 12,288 = 22,118.4 B; 42,949,672,960 / 22,118.4 =
    # 1,941,807.4 -> 1,941,807 full tokens; sliding pool int(0.8 x 1,941,807) = 1,553,445.
    o = family("gpt_oss")
    pools = _sglang.sglang_pools(_sglang.sglang_plan(o, o.model("gpt_oss_20b")), GIB40, 1)
    assert pools == _sglang.SglangPools(1_941_807, 1_553_445, 0)


def test_sglang_mamba_memory_ratio_and_fp32_ssm_state_qwen3_next() -> None:
    # Per linear layer: conv 24,576 elements in bf16 (49,152 B) + SSM 524,288 in fp32
    # (2,097,152 B) = 2,146,304 B; 36 layers: 77,266,944 B (73.7 MiB; 37.7 MiB in bf16).
    # State share 40 x 0.9/1.9 GiB = 20,344,581,928.4 B = 263.3 slots, one of them padding:
    # 262 usable. The rest, 42,949,672,960 - 263 x 77,266,944 = 22,628,466,688 B, over
    # 12 attention layers x 2,048 B = 24,576 B per token: 920,754 tokens.
    q = family("qwen3_next")
    plan = _sglang.sglang_plan(q, q.model("qwen3_next_80b_a3b"))
    assert (plan.state_bytes_per_request, plan.ssm_extra_bytes) == (77_266_944, 37_748_736)
    assert _sglang.sglang_pools(plan, GIB40, 1) == _sglang.SglangPools(920_754, 0, 262)
    bf16 = _sglang.sglang_plan(q, q.model("qwen3_next_80b_a3b"), ssm_dtype="bf16")
    assert bf16.state_bytes_per_request == 36 * 1_097_728


def test_sglang_mtp_intermediate_states_follow_max_running_requests_qwen3_next() -> None:
    # mtp2 verifies D = 3 tokens; SGLang 0.5.23 (_handle_max_mamba_cache) solves the slots
    # with them at the resolved ratio (extra_buffer, overlap on: 5 slots a running request):
    # K = floor((share - 4 S) / (S x (1 + 3/5))) = floor(20,035,514,152.4 / 123,627,110.4) =
    # 162 (S = 77,266,944 B, share as above), and reserves S x 3 x (min(max_running_requests,
    # 162 // 5 = 32) + 1) more; the slots take 163 S = 12,594,511,872 B. 8 requests: 27 S =
    # 2,086,207,488 B, 40 GiB - 27 S - 163 S = 28,268,953,600 B / 24,576 = 1,150,266 tokens.
    # 64 requests are capped at 32: 99 S = 7,649,427,456 B, 40 GiB - 99 S - 163 S =
    # 22,705,733,632 B / 24,576 = 923,898 tokens; 1 request: 6 S = 463,601,664 B,
    # 29,891,559,424 B / 24,576 = 1,216,290 tokens. (SGLang's own KVCacheConfigurator on
    # resolved ServerArgs, bench/engines/closed_loop_sglang.py and the probe, gave 162 slots,
    # 1,150,266 and 923,898 tokens.) tp 2: S/2 = 38,633,472 B, 12,288 B a token: K =
    # floor((share - 4 x S/2) / (1.6 x S/2)) = floor(20,190,048,040.4 / 61,813,555.2) = 326,
    # 40 GiB - 27 x S/2 - 327 x S/2 = 29,273,423,872 B / 12,288 = 2,382,277 tokens, 326 // 5 =
    # 65 requests.
    q = family("qwen3_next")
    plan = {"engine": "sglang", "max_seq_len": 8192, "max_num_tokens": 8192, "speculative": "mtp2"}
    got = {
        batch: engine_capacity(q, "qwen3_next_80b_a3b", GIB40, max_batch_size=batch, **plan)
        for batch in (1, 8, 64)
    }
    assert {b: c.kv_tokens for b, c in got.items()} == {1: 1_216_290, 8: 1_150_266, 64: 923_898}
    # SGLang runs at most 162 // 5 = 32 requests at once (resolve_max_num_reqs), below
    # 1,150,266 / 8,192 = 140.4 and 923,898 / 8,192 = 112.8 requests' tokens.
    assert got[8].max_concurrency == got[64].max_concurrency == 32.0
    tp2 = engine_capacity(q, "qwen3_next_80b_a3b", GIB40, tp_size=2, **plan)
    assert (tp2.kv_tokens, tp2.max_concurrency) == (2_382_277, 65.0)
    with pytest.raises(ValueError, match="max_batch_size must be a positive int"):
        engine_capacity(q, "qwen3_next_80b_a3b", GIB40, max_batch_size=0, **plan)
    # 2 GiB: share 1,017,229,096.4 B, K = floor((share - 4 S) / 1.6 S) = floor(5.73) = 5,
    # min(8, 5 // 5) = 1 request verifies: 2,147,483,648 - 2 x 3 S - 6 S = 1,220,280,320 B /
    # 24,576 = 49,653 tokens. 1 GiB: K = floor((508,614,548.2 - 4 S) / 1.6 S) = 1, and
    # 1 // 5 = 0 requests: SGLang refuses (resolve_max_num_reqs).
    two = engine_capacity(q, "qwen3_next_80b_a3b", 2 << 30, **plan)
    assert (two.kv_tokens, two.max_concurrency) == (49_653, 1.0)  # 5 slots run 5 // 5 = 1
    with pytest.raises(ValueError, match="leaves SGLang 1 recurrent state slots"):
        engine_capacity(q, "qwen3_next_80b_a3b", 1 << 30, **plan)
    # kvgen compare names the policy: 3 intermediate states of S = 73.7 MiB per request.
    terms = policy_terms(q, "qwen3_next_80b_a3b", **plan)
    assert [t.name for t in terms] == [
        "mamba_memory_ratio", "mamba_running_requests", "mamba_spec_states", "fp32_ssm_state"
    ]  # fmt: skip
    assert terms[1].detail == "at most 1 running request per 5 state slots (extra_buffer)"
    assert terms[2].detail == "3 intermediate states of 73.7 MiB per running request"


def test_sglang_allocates_kv_shared_layers_gemma3n() -> None:
    # Gemma 3n E2B: 30 hidden layers, the last 10 KV-shared. vLLM gives those no cache; SGLang
    # 0.5.23 sizes its pool for every hidden layer (resolve_layer_indices: num_hidden_layers)
    # and the shared layers only skip the write (gemma3n_causal.py save_kv_cache), and
    # Gemma3nForCausalLM is not hybrid SWA there: 30 x 2 KV heads x (256 + 256) x 2 B =
    # 61,440 B a token, 42,949,672,960 / 61,440 = 699,050.7 -> 699,040 tokens on 16-token pages
    # (SGLang's own pool configurator from config.json: 699,040), 699,040 / 8,192 = 85.332
    # requests. E4B, 35 layers: 71,680 B a token, 599,186.3 -> 599,184 tokens.
    g = family("gemma3n")
    kwargs = {"engine": "sglang", "max_seq_len": 8192, "max_num_tokens": 8192, "block_size": 16}
    e2b = engine_capacity(g, "gemma3n_e2b", GIB40, **kwargs)
    assert (e2b.kv_tokens, round(e2b.max_concurrency, 3)) == (699_040, 85.332)
    assert e2b.request_bytes == 8192 * 61_440
    assert engine_capacity(g, "gemma3n_e4b", GIB40, **kwargs).kv_tokens == 599_184
    # vLLM's pool for the same model charges only the 20 layers that hold a cache.
    assert engine_capacity(g, "gemma3n_e2b", GIB40, engine="vllm", max_seq_len=8192,
                           max_num_tokens=8192).request_bytes < e2b.request_bytes  # fmt: skip


def test_sglang_eagle3_draft_joins_the_full_pool_of_a_hybrid_swa_model_gpt_oss() -> None:
    # gpt-oss-20b in SGLang 0.5.23 (HybridSWAPoolConfigurator): 12 full + 12 sliding layers of
    # 1,024 B a token (derived above: the sliding pool is 0.8 of the full one). The EAGLE3
    # drafter's one full-attention layer joins the full pool at the target's full-layer size
    # (_draft_full_layers_num x _full_per_token): 13 x 1,024 + 0.8 x 12 x 1,024 = 23,142.4 B
    # per full token; 42,949,672,960 / 23,142.4 = 1,855,886.7 -> 1,855,872 on 16-token pages,
    # the sliding pool int(0.8 x 1,855,872) = 1,484,697 -> 1,484,688. (SGLang's own
    # configurator on the spec's layers with eagle_draft_num_layers 1: the same two counts.)
    o = family("gpt_oss")
    kwargs = {"engine": "sglang", "max_seq_len": 8192, "max_num_tokens": 8192, "block_size": 16}
    got = engine_capacity(o, "gpt_oss_20b", GIB40, speculative="eagle3", **kwargs)
    assert got.kv_tokens == 1_855_872
    plan = _sglang.sglang_plan(o, o.model("gpt_oss_20b"), speculative=o.profile("eagle3"))
    assert (plan.full_bytes_per_token, plan.swa_bytes_per_token) == (13 * 1024, 12 * 1024)
    pools = _sglang.sglang_pools(plan, GIB40, 16)
    assert (pools.full_tokens, pools.swa_tokens) == (1_855_872, 1_484_688)


def test_sglang_runs_a_fifth_of_its_state_slots_and_refuses_below_five_qwen3_next() -> None:
    # SGLang 0.5.23 runs at most K // ratio requests of a recurrent hybrid at once
    # (kv_cache_configurator.py resolve_max_num_reqs, _calculate_mamba_ratio), and refuses to
    # start where that is 0. On an H100/H200, ServerArgs.resolve_once picks the extra_buffer
    # Mamba radix cache for Qwen3-Next (arg_groups/overrides.py _mamba_radix_cache_resolution:
    # overlap scheduler on, linear_attn_backend triton, CUDA keeps state snapshots), so the
    # ratio is MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO 3 + get_mamba_tracking_slots 2 = 5;
    # no_buffer (also --disable-overlap-schedule, page 1 only) keeps 3. S = 77,266,944 B a
    # slot (derived above), share = budget x 0.9 / 1.9, K = floor(share / S - 1).
    q = family("qwen3_next")
    plan = {"engine": "sglang", "max_seq_len": 8192, "max_num_tokens": 8192}
    # 40 GiB: K = 262, 262 // 5 = 52 requests, below 920,754 / 8,192 = 112.4 requests' tokens
    # (SGLang's own resolved ServerArgs: 52; fec6846 answered 262 // 3 = 87).
    got = engine_capacity(q, "qwen3_next_80b_a3b", GIB40, **plan)
    assert (got.kv_tokens, got.max_concurrency) == (920_754, 52.0)
    nobuf = engine_capacity(q, "qwen3_next_80b_a3b", GIB40, mamba_radix_cache_strategy="no_buffer",
                            **plan)  # fmt: skip
    assert (nobuf.kv_tokens, nobuf.max_concurrency) == (920_754, 87.0)
    # 2 GiB: share 1,017,229,096.4 B, K = floor(13.17 - 1) = 12, 12 // 5 = 2 requests; the
    # tokens (2 GiB - 13 S) / 24,576 = 46,509.
    got = engine_capacity(q, "qwen3_next_80b_a3b", 2 << 30, **plan)
    assert (got.kv_tokens, got.max_concurrency) == (46_509, 2.0)
    # 1 GiB: share 508,614,548.2 B, K = floor(6.58 - 1) = 5: 1 request, though the tokens,
    # (1 GiB - 6 S) / 24,576 = 24,826, hold 24,826 / 8,192 = 3.03.
    got = engine_capacity(q, "qwen3_next_80b_a3b", 1 << 30, **plan)
    assert (got.kv_tokens, got.max_concurrency) == (24_826, 1.0)
    # 768 MiB: share 381,460,911.2 B, K = floor(4.94 - 1) = 3 slots: 3 // 5 = 0 requests under
    # extra_buffer (refused; fec6846 ran 3 // 3 = 1), 1 under no_buffer with (805,306,368 -
    # 4 S) / 24,576 = 20,192 tokens.
    with pytest.raises(ValueError, match=r"leaves SGLang 3 recurrent state slots, fewer than the "
                       r"5 .* SGLang 0.5.23 refuses .*resolve_max_num_reqs: 3 // 5"):  # fmt: skip
        engine_capacity(q, "qwen3_next_80b_a3b", 768 << 20, **plan)
    nobuf = {**plan, "mamba_radix_cache_strategy": "no_buffer"}
    got = engine_capacity(q, "qwen3_next_80b_a3b", 768 << 20, **nobuf)
    assert (got.kv_tokens, got.max_concurrency) == (20_192, 1.0)
    # 512 MiB: share 254,307,274.1 B, K = floor(3.29 - 1) = 2 slots, 2 // 5 = 0 requests.
    with pytest.raises(ValueError, match=r"leaves SGLang 2 recurrent state slots, fewer than the "
                       r"5 .* SGLang 0.5.23 refuses .*resolve_max_num_reqs"):  # fmt: skip
        engine_capacity(q, "qwen3_next_80b_a3b", 1 << 29, **plan)
    # 256 MiB: share 127,153,637.1 B, K = floor(1.65 - 1) = 0 slots (_handle_max_mamba_cache).
    with pytest.raises(ValueError, match=r"leaves SGLang 0 .*_handle_max_mamba_cache"):
        engine_capacity(q, "qwen3_next_80b_a3b", 1 << 28, **plan)


@pytest.mark.parametrize(
    ("strategy", "block_size", "message"),
    [
        ("no_buffer", 16, "no_buffer strategy takes page_size 1 only"),
        ("extra_buffer", 3, "does not divide mamba_track_interval 256"),
        ("lazy", 1, "mamba_radix_cache_strategy must be one of"),
        (["extra_buffer"], 1, "mamba_radix_cache_strategy must be one of"),
    ],
)
def test_sglang_refuses_the_mamba_strategies_it_refuses(strategy, block_size, message) -> None:
    # mamba_hook.py: validate_mamba_no_buffer asserts page_size 1; validate_mamba_extra_buffer
    # asserts mamba_track_interval (256) % page_size == 0. A name that is no strategy is named,
    # on an attention-only model too.
    kwargs = {"engine": "sglang", "max_seq_len": 8192, "max_num_tokens": 8192,
              "block_size": block_size, "mamba_radix_cache_strategy": strategy}  # fmt: skip
    with pytest.raises(ValueError, match=message):
        engine_capacity(family("qwen3_next"), "qwen3_next_80b_a3b", GIB40, **kwargs)
    if "must be one of" in message:
        with pytest.raises(ValueError, match=message):
            engine_capacity(family("llama3"), "llama3_1_8b", GIB40, **kwargs)


# ----------------------------------------------------------------------------- TensorRT-LLM


def test_trtllm_v2_gemma3_27b_at_batch_8() -> None:
    # tpb 16, B 8, N 8,192: TensorRT-LLM V2's own split (docs/cost-model.md §4). Slots: 52
    # sliding layers x 8,192 B x 16 = 6,815,744 B (6.5 MiB), 10 full layers 1,310,720 B (1.25
    # MiB). 40 GiB is 1,280 grains of 32 MiB (the grain from 16 GiB); the full group's ratio
    # is 1.25 / 7.75 = 5/31 and goes first: round(1,280 x 5/31) = round(206.45) = 206 grains =
    # 6,592 MiB / 1.25 MiB = 5,273 slots; the window group 1,074 grains = 34,368 MiB / 6.5 MiB
    # = 5,287 slots, of which kvgen's pools need 8 x (ceil((1024 + 1 - 2)/16) + 1 = 65) +
    # 8,192/16 = 1,032. So the full slots bound T: 5,273 x 16 = 84,368 tokens (kvgen's own
    # pools for the same bytes, the affine estimate, would hold 438,425).
    cap = engine_capacity(
        family("gemma3"), "gemma3_27b", GIB40,
        engine="trtllm==early-2026", max_seq_len=8192, max_num_tokens=8192, block_size=16,
    )  # fmt: skip
    assert cap.kv_tokens == 84_368
    assert cap.num_blocks == 5_273
    # 84,368 / 8,192 = 10.3 requests' worth of tokens, but at most B = 8 reside.
    assert cap.max_concurrency == 8.0
    # one request: 8,192 x 81,920 + 443,023,360 + 8,192 x 425,984 = 4,603,772,928 B
    assert cap.request_bytes == 4_603_772_928


# ----------------------------------------------------------------------------- API


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"engine": "tgi"}, "engine must be one of"),
        ({"engine": "vllm", "block_size": 0}, "block_size must be a positive int"),
        ({"engine": "vllm", "speculative": "pard9"}, "speculative must be one of none, eagle3"),
        ({"engine": "vllm", "mamba_cache_mode": "all"}, "mamba_cache_mode must be one of"),
        ({"engine": "vllm", "mamba_cache_mode": ["align"]}, "mamba_cache_mode must be one of"),
        ({"engine": "vllm", "gdn_prefill_backend": "cuda"}, "gdn_prefill_backend must be one of"),
        ({"engine": "vllm", "ssm_dtype": "fp8"}, "ssm_dtype must be one of"),
        ({"engine": "vllm", "ssm_dtype": ["fp32"]}, "ssm_dtype must be one of"),
        ({"engine": "sglang", "ssm_dtype": "fp8"}, "ssm_dtype must be one of"),
        ({"engine": "sglang", "max_seq_len": 0}, "max_seq_len must be a positive int"),
        # gpt_oss_20b's native context is 131,072 tokens
        ({"engine": "vllm", "max_seq_len": 131073}, "max_seq_len must be <= 131072"),
        ({"engine": "sglang", "max_seq_len": 131073}, "max_seq_len must be <= 131072"),
        ({"engine": "trtllm-v2", "max_seq_len": 131073}, "max_seq_len must be <= 131072"),
        ({"engine": "vllm", "max_num_tokens": True}, "max_num_tokens must be a positive int"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs: dict, message: str) -> None:
    args = {"max_seq_len": 8192, "max_num_tokens": 8192, **kwargs}
    with pytest.raises(ValueError, match=message):
        engine_capacity(family("gpt_oss"), "gpt_oss_20b", GIB40, **args)


def test_unknown_model_lists_the_models() -> None:
    with pytest.raises(ValueError, match="model must be one of gpt_oss_20b, gpt_oss_120b"):
        engine_capacity(
            family("gpt_oss"), "gpt_oss_1b", GIB40,
            engine="vllm", max_seq_len=8192, max_num_tokens=8192,
        )  # fmt: skip


def test_every_engine_answers_for_a_plain_model_and_terms_are_named() -> None:
    for engine in ENGINES:
        cap = engine_capacity(
            family("llama3"), "llama3_1_8b", GIB40,
            engine=engine, max_seq_len=8192, max_num_tokens=8192, block_size=16,
        )  # fmt: skip
        # 32 layers x 8 heads x 256 x 2 B = 131,072 B per token: 327,680 tokens in 40 GiB
        # (vLLM and SGLang exactly; TensorRT-LLM has no sliding layers either).
        assert cap.kv_tokens == 327_680
    assert {"null_block", "swa_ratio", "mamba_memory_ratio"} <= set(POLICY_TERMS)


def test_engine_models_import_no_engine_and_no_torch() -> None:
    code = (
        "import sys, kvgen._engines.capacity; "
        "print(sorted(m for m in ('torch', 'vllm', 'sglang') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _synthetic(window: int) -> Family:
    text = f"""schema_version: 1
family: synth
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: m
    max_seq_len: 8192
    layer_kinds:
      s: {{attention: sliding, window: {window}, kv_heads: 8, head_dim: 64}}
      f: {{attention: full, kv_heads: 8, head_dim: 64}}
    layers: {{count: 2, pattern: [s, f]}}
""".encode()
    fam = load_bytes("synth.yaml", text).family
    assert fam is not None
    return fam


def test_plans_are_cached_per_family_object_not_per_name(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two specs named synth/m that differ only in the window. Block 16, S = 8,192, N = 8,192
    # (in flight 16,384): window 128 -> sliding blocks ceil(min(127 + 16,384, 8,192)/16) + 1 =
    # 513 either way, so use N = 1 (in flight 2): window 128 -> ceil(129/16) + 1 = 10 blocks,
    # window 4,096 -> ceil(4,097/16) + 1 = 258 blocks; the full layer 512 blocks. One running
    # request (max_batch_size 1): vLLM refuses max_num_batched_tokens below max_num_seqs.
    import kvgen._engines.capacity as engines

    monkeypatch.setattr(engines, "_CACHE_BOUND", 2)
    kwargs = {"engine": "vllm", "max_seq_len": 8192, "max_num_tokens": 1, "block_size": 16,
              "max_batch_size": 1}  # fmt: skip
    narrow = engine_capacity(_synthetic(128), "m", GIB40, **kwargs)
    wide = engine_capacity(_synthetic(4096), "m", GIB40, **kwargs)
    # a block is one page of 16 x 8 x 128 x 2 B = 32,768 B per group (2 groups of 1 layer)
    assert narrow.request_bytes == (10 + 512) * 32_768
    assert wide.request_bytes == (258 + 512) * 32_768
    for window in (64, 256, 512):
        engine_capacity(_synthetic(window), "m", GIB40, **kwargs)
    assert len(engines._CACHE) <= 2


def test_vllm_mamba_align_mode_keeps_a_checkpoint_block_under_flashinfer_gdn() -> None:
    # qwen3_next at block 16 without the 64-token grid -> 544-token blocks (see above); S = 8,192:
    # the full group needs ceil(8,192/544) = 16 blocks. Three state groups take 1 block each
    # ("none": prefix caching off) or 2 each ("align" under the Triton GDN prefill, which exports
    # no prefill checkpoint): 19 or 22 blocks per request, of 13,369,344 B. Under FlashInfer
    # (the H100/H200 default) align mode puts blocks on 64 tokens: 64 x ceil(1,097,728 /
    # (64 x 2,048)) = 576-token blocks of 12 x 576 x 2,048 = 14,155,776 B, ceil(8,192/576) = 15
    # full blocks, and each state group keeps 3 blocks (the checkpoint): 24 blocks.
    q = family("qwen3_next")
    kwargs = {"engine": "vllm==0.33.0", "max_seq_len": 8192, "max_num_tokens": 8192}
    none = engine_capacity(q, "qwen3_next_80b_a3b", GIB40, mamba_cache_mode="none", **kwargs)
    triton = engine_capacity(q, "qwen3_next_80b_a3b", GIB40, gdn_prefill_backend="triton", **kwargs)
    flashinfer = engine_capacity(q, "qwen3_next_80b_a3b", GIB40, **kwargs)
    assert none.request_bytes == 19 * 13_369_344
    assert triton.request_bytes == 22 * 13_369_344
    assert flashinfer.request_bytes == 24 * 14_155_776


def test_vllm_splits_kv_heads_by_floor_never_below_one() -> None:
    # gemma3_1b has 1 KV head: at tp 2 each rank still holds one head (256 x 2 x 2 B = 1,024 B
    # per token per layer), so a rank's block is as big as at tp 1. llama3_1_8b's 8 heads at
    # tp 2: 4 heads per rank, half the block (32 layers x 16 x 4 x 256 x 2 B = 1,048,576 B).
    g, ll = family("gemma3"), family("llama3")
    one = _vllm.vllm_plan(g, g.model("gemma3_1b"), block_size=16, tp_size=1)
    two = _vllm.vllm_plan(g, g.model("gemma3_1b"), block_size=16, tp_size=2)
    assert one.bytes_per_block == two.bytes_per_block
    llama = _vllm.vllm_plan(ll, ll.model("llama3_1_8b"), block_size=16, tp_size=2)
    assert llama.bytes_per_block == 1_048_576


def test_vllm_eagle_layer_joins_the_pool_and_regroups_gpt_oss() -> None:
    # gpt_oss_20b + EAGLE3: 12 sliding + 12 full + 1 draft full layer (same shape). 13 < 1.5 x 12,
    # so groups hold 13 layers: one sliding group with 1 padding layer, one full group.
    # A block: 13 layers x 16 tokens x 8 heads x 128 x 1 B (fp8) = 212,992 B.
    o = family("gpt_oss")
    plan = _vllm.vllm_plan(
        o, o.model("gpt_oss_20b"), block_size=16, speculative=o.profile("eagle3")
    )
    assert (plan.group_size, plan.padding_layers, plan.bytes_per_block) == (13, 1, 212_992)


def test_vllm_mamba_keeps_one_state_block_per_draft_token() -> None:
    # qwen3_next + ngram4 (K = 4, no drafter layers), prefix caching off: the conv window holds
    # 3 + 4 rows, 8,192 x 7 x 2 B = 114,688 B, + the SSM 1,048,576 B = 1,163,264 B per state;
    # 16 x ceil(1,163,264 / 32,768) = 576-token blocks of 12 x 576 x 2,048 = 14,155,776 B.
    # Each of the 3 state groups takes 1 + 4 blocks, the full group ceil(8,192/576) = 15:
    # 30 blocks x 14,155,776 B = 424,673,280 B.
    q = family("qwen3_next")
    cap = engine_capacity(
        q, "qwen3_next_80b_a3b", GIB40, engine="vllm", max_seq_len=8192,
        max_num_tokens=8192, speculative="ngram4", mamba_cache_mode="none",
    )  # fmt: skip
    assert cap.request_bytes == 424_673_280


def test_sglang_pools_are_kept_by_plan_identity_and_never_answer_for_another_plan():
    # sglang_capacity keeps each plan's pools by (id(plan), budget, page, ratios, running
    # requests, strategy) with the plan itself: a stale entry whose id a new plan reuses
    # (planted here) is not read. Plain full attention, 1 GiB = 1,073,741,824 B at 1,024 B
    # per token, page 1: 1,048,576 tokens; 2,048 B per token: 524,288 tokens.
    from kvgen.sizing import engines_sglang

    small = engines_sglang.SglangPlan(1024, 0, None, 0, 0, 131072)
    large = engines_sglang.SglangPlan(2048, 0, None, 0, 0, 131072)
    engines_sglang._SGLANG_POOLS.clear()
    first = engines_sglang.sglang_capacity(small, 1 << 30, 4096, 1)
    assert first.kv_tokens == 1_048_576
    assert engines_sglang.sglang_capacity(small, 1 << 30, 8192, 1).kv_tokens == 1_048_576
    assert len(engines_sglang._SGLANG_POOLS) == 1  # one pools entry for both lengths
    ((key, (plan, pools)),) = engines_sglang._SGLANG_POOLS.items()
    assert plan is small
    stale = (id(large), *key[1:])
    engines_sglang._SGLANG_POOLS[stale] = (small, pools)  # as if large reused small's id
    assert engines_sglang.sglang_capacity(large, 1 << 30, 4096, 1).kv_tokens == 524_288
