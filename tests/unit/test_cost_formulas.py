"""The sizing formulas of docs/cost-model.md, term by term, for the generated module and the generic
cost model alike. Every number has its hand derivation beside it.

Notation: b = bytes per token of one layer, tpb = tokens per block, B = max_batch_size,
N = max_num_tokens, S = max_seq_len, pages(w, H) = ceil((w + H - 2) / tpb) + 1.
"""

from __future__ import annotations

import pytest

from tests.reference import costmodel
from tests.sizing_support import Implementation

# near: 2 * 2 heads * 8 dim * 2 B = 64;  far: 2 * 4 * 8 * 2 = 128;  glob: 2 * 8 * 16 * 2 = 512.
THREE_LAYERS = """
schema_version: 1
family: three
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: tri
    max_seq_len: 1024
    layer_kinds:
      near: {attention: sliding, window: 40, kv_heads: 2, head_dim: 8}
      far: {attention: sliding, window: 100, kv_heads: 4, head_dim: 8}
      glob: {attention: full, kv_heads: 8, head_dim: 16}
    layers: {count: 3, pattern: [near, far, glob]}
"""


@pytest.fixture(params=["generated", "generic"])
def kind(request):
    return request.param


def impl(kind, text, tmp_path):
    return Implementation(kind, text, tmp_path)


def test_three_layers_two_windows_and_a_full_layer(kind, tmp_path):
    # slope = 512 (glob). pages(40, 1) = ceil(39/16) + 1 = 4; pages(100, 1) = ceil(99/16) + 1 = 8.
    # per_request = 16 * (64*4 + 128*8) = 20480; ctx_swa = 64 + 128 = 192.
    # intercept = B*per_request + N*ctx_swa = 4*20480 + 64*192 = 81920 + 12288 = 94208.
    terms = impl(kind, THREE_LAYERS, tmp_path).terms(
        "tri", max_batch_size=4, max_num_tokens=64, max_seq_len=1024
    )
    assert terms == {
        "target": {"slope": 512, "per_request": 20480, "ctx_swa": 192, "intercept": 94208}
    }


def test_window_reaching_max_seq_len_is_full_attention(kind, tmp_path):
    model = impl(kind, THREE_LAYERS, tmp_path)
    # S = 100: far's window 100 >= S, so far joins the slope: 512 + 128 = 640.
    # near alone is SWA: per_request = 16*64*4 = 4096, ctx = 64; intercept = 4*4096 + 64*64.
    assert model.costs("tri", max_batch_size=4, max_num_tokens=64, max_seq_len=100) == {
        "target": (640, 4 * 4096 + 64 * 64)
    }
    # S = 40: both windows reach S, everything is full attention: 64 + 128 + 512 = 704.
    assert model.costs("tri", max_batch_size=4, max_num_tokens=64, max_seq_len=40) == {
        "target": (704, 0)
    }


SCRATCH = """
schema_version: 1
family: scratch
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: five
    max_seq_len: 4096
    layer_kinds:
      small: {attention: sliding, window: 64, kv_heads: 2, head_dim: 8}
      wide: {attention: sliding, window: 64, kv_heads: 4, head_dim: 8}
      glob: {attention: full, kv_heads: 8, head_dim: 16}
    layers: {count: 5, pattern: [small, small, small, wide, glob]}
"""


def test_scratch_reuse_charges_one_layer_per_window_and_size_key(kind, tmp_path):
    model = impl(kind, SCRATCH, tmp_path)
    common = {"max_batch_size": 2, "max_num_tokens": 32, "max_seq_len": 4096}
    # pages(64, 1) = ceil(63/16) + 1 = 5; per_request = 5*16*(3*64 + 128) = 80*320 = 25600.
    # Without reuse ctx = 3*64 + 128 = 320: intercept = 2*25600 + 32*320 = 61440.
    off = model.terms("five", **common)["target"]
    assert (off["ctx_swa"], off["intercept"]) == (320, 61440)
    # With reuse the keys are (64, 64) and (64, 128): ctx = 192, intercept = 51200 + 6144.
    on = model.terms("five", scratch_reuse=True, **common)["target"]
    assert (on["ctx_swa"], on["intercept"]) == (192, 57344)
    assert on["per_request"] == off["per_request"] == 25600


DEEPSEEK_LIKE = """
schema_version: 1
family: mla
tokens_per_block: 64
kv_cache_dtype: bf16
models:
  - name: v3
    max_seq_len: 163840
    layer_kinds:
      latent: {attention: full, kv_lora_rank: 512, qk_rope_head_dim: 64}
    layers: {count: 61, pattern: [latent]}
"""


@pytest.mark.parametrize("tp_size", [1, 8])
def test_mla_latent_is_not_split_by_tensor_parallelism(kind, tmp_path, tp_size):
    # (512 + 64) * 2 B = 1152 per layer; 61 layers -> 70272 B per token, at any tp.
    costs = impl(kind, DEEPSEEK_LIKE, tmp_path).costs(
        "v3", max_batch_size=8, max_num_tokens=8192, max_seq_len=163840, tp_size=tp_size
    )
    assert costs == {"target": (70272, 0)}


NVFP4 = """
schema_version: 1
family: fp4
tokens_per_block: 32
kv_cache_dtype: nvfp4
models:
  - name: m
    max_seq_len: 8192
    layer_kinds:
      a: {attention: full, kv_heads: 8, head_dim: 128}
    layers: {count: 4, pattern: [a]}
"""


@pytest.mark.parametrize(
    ("tp_size", "slope"),
    [
        # n = 8*128 = 1024 elements per K: 1024/2 + 1024/16 = 576 B; K+V = 1152; 4 layers.
        (1, 4 * 1152),
        # n = 4*128 = 512: 256 + 32 = 288; K+V = 576; 4 layers.
        (2, 4 * 576),
    ],
)
def test_nvfp4_packs_half_a_byte_plus_fp8_block_scales(kind, tmp_path, tp_size, slope):
    costs = impl(kind, NVFP4, tmp_path).costs(
        "m", max_batch_size=1, max_num_tokens=128, max_seq_len=8192, tp_size=tp_size
    )
    assert costs == {"target": (slope, 0)}


MQA = """
schema_version: 1
family: mqa
tokens_per_block: 32
kv_cache_dtype: bf16
models:
  - name: m
    max_seq_len: 8192
    layer_kinds:
      one: {attention: full, kv_heads: 1, head_dim: 128}
    layers: {count: 32, pattern: [one]}
"""


@pytest.mark.parametrize("tp_size", [1, 2, 8])
def test_mqa_heads_are_replicated_not_divided(kind, tmp_path, tp_size):
    # ceil(1 / tp) = 1 head on every rank: 2*1*128*2 = 512 B per layer, 32 layers = 16384.
    # The naive kv_heads*head_dim/tp would say 16384/8 = 2048 at tp=8 (drift source 9).
    costs = impl(kind, MQA, tmp_path).costs(
        "m", max_batch_size=1, max_num_tokens=128, max_seq_len=8192, tp_size=tp_size
    )
    assert costs == {"target": (16384, 0)}


PHASE = """
schema_version: 1
family: phase
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: m
    max_seq_len: 4096
    layer_kinds:
      l: {attention: sliding, window: 64, kv_heads: 2, head_dim: 8}
      g: {attention: full, kv_heads: 8, head_dim: 16}
    layers: {count: 7, pattern: [l, l, g]}
"""


def test_pipeline_ranks_keep_the_pattern_phase(kind, tmp_path):
    # Layers 0..6 are l l g l l g l. pp=3 splits 7 as 3, 2, 2: [0,3) [3,5) [5,7).
    # rank 0: l l g -> slope 512; rank 1: l l -> 0; rank 2: g l -> 512 (a pattern restarted
    # per rank would give rank 2 "l l" and slope 0). pages(64, 1) = 5, one SWA layer b = 64:
    # per_request per SWA layer = 5*16*64 = 5120.
    model = impl(kind, PHASE, tmp_path)
    common = {"max_batch_size": 1, "max_num_tokens": 16, "max_seq_len": 4096, "pp_size": 3}
    got = [model.terms("m", pp_rank=r, **common)["target"] for r in range(3)]
    assert [t["slope"] for t in got] == [512, 0, 512]
    assert [t["per_request"] for t in got] == [2 * 5120, 2 * 5120, 5120]


def _modes_spec(k: int) -> str:
    draft = "draft: {layer_kinds: {d: {attention: full, kv_heads: 1, head_dim: 8}}, layers: {count: 1, pattern: [d]}}"  # noqa: E501
    return f"""
schema_version: 1
family: modes
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: m
    max_seq_len: 4096
    layer_kinds:
      g: {{attention: full, kv_heads: 1, head_dim: 8}}
    layers: {{count: 1, pattern: [g]}}
speculative:
  - {{name: eagle3, mode: eagle3, max_draft_len: {k}}}
  - {{name: tree, mode: eagle3, max_draft_len: {k}, tree_draft_tokens: 10}}
  - {{name: mtp, mode: mtp, max_draft_len: {k}}}
  - {{name: mtp_eagle, mode: mtp_eagle, max_draft_len: {k}}}
  - {{name: dt, mode: draft_target, max_draft_len: {k}, {draft}}}
  - {{name: dflash, mode: dflash, max_draft_len: {k}, {draft}}}
  - {{name: pard, mode: pard, max_draft_len: {k}, {draft}}}
  - {{name: eagle3_2m, mode: eagle3_two_model, max_draft_len: {k}}}
  - {{name: mtp_eagle_2m, mode: mtp_eagle_two_model, max_draft_len: {k}}}
  - {{name: dt_2m, mode: draft_target_two_model, max_draft_len: {k}}}
  - {{name: ngram, mode: ngram, max_draft_len: {k}}}
"""


def _expected_headroom(profile: str, k: int) -> int:
    # docs/cost-model.md §2: H = E + G.
    return {
        "none": 1,  # E = 0, G = 1
        "eagle3": 2 * k,  # E = K-1, G = K+1
        "tree": k + 10,  # E = K-1, G = 1+T with T = 10
        "mtp": 2 * k,
        "mtp_eagle": 2 * k,
        "dt": 2 * k,
        "dflash": 2 * k,
        "pard": 3 * k - 1,  # E = K-1, G = 2K (2K-1 draft tokens + 1)
        "eagle3_2m": k + 1,  # E = 0, G = K+1
        "mtp_eagle_2m": k + 1,
        "dt_2m": k + 1,
        "ngram": k + 1,
    }[profile]


@pytest.mark.parametrize("k", range(1, 7))
def test_every_mode_headroom_at_k_1_to_6(tmp_path, k):
    module = Implementation("generated", _modes_spec(k), tmp_path).module
    family = Implementation("generic", _modes_spec(k), tmp_path).family
    for profile in module.SPECULATIVE:
        expected = _expected_headroom(profile, k)
        assert module.headroom(profile) == expected, profile
        assert costmodel.headroom(family.profile(profile)).total == expected, profile
        # The opt-in overlap slack adds the draft width K (none has no drafts).
        slack = 0 if profile == "none" else k
        assert module.headroom(profile, overlap_slack=True) == expected + slack, profile


def test_pard_at_k4_leads_by_eleven_tokens(tmp_path):
    # docs/cost-model.md §2 table: PARD at K=4 has E = 3, G = 8, H = 11 (sizing with K gives 8).
    module = Implementation("generated", _modes_spec(4), tmp_path).module
    assert module.headroom("pard") == 11


def _reuse_spec(window: int, mode: str, k: int) -> str:
    return f"""
schema_version: 1
family: reuse
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: m
    max_seq_len: 1024
    layer_kinds:
      s: {{attention: sliding, window: {window}, kv_heads: 1, head_dim: 8}}
    layers: {{count: 1, pattern: [s]}}
speculative:
  - {{name: p, mode: {mode}, max_draft_len: {k}}}
"""


@pytest.mark.parametrize(
    ("mode", "k", "window", "pages_off", "pages_on"),
    [
        # EAGLE3 K=4: H = 8, D = 1. w=106: ceil(112/16)+1 = 8; w+D=107: ceil(113/16)+1 = 9.
        ("eagle3", 4, 106, 8, 9),
        # MTP-Eagle K=3: H = 6, D = 1. w=108: ceil(112/16)+1 = 8; 109: ceil(113/16)+1 = 9.
        ("mtp_eagle", 3, 108, 8, 9),
        # vanilla MTP K=3: H = 6, D = K = 3. w=108: 8; w+3=111: ceil(115/16)+1 = 9.
        ("mtp", 3, 108, 8, 9),
        # vanilla MTP K=3 at w=105: 105+4=109 -> ceil(109/16)+1 = 8; 108+4=112 -> 8: same page
        # count, the extension only shows when it crosses a page boundary.
        ("mtp", 3, 105, 8, 8),
        # PARD has no re-match backoff (D = 0): H = 11, w=100: ceil(109/16)+1 = 8 both ways.
        ("pard", 4, 100, 8, 8),
    ],
)
def test_block_reuse_backoff_extends_windows(tmp_path, mode, k, window, pages_off, pages_on):
    text = _reuse_spec(window, mode, k)
    if mode == "pard":
        text = text.replace(
            "max_draft_len: 4}",
            "max_draft_len: 4, draft: {layer_kinds: {d: {attention: full, kv_heads: 1, "
            "head_dim: 8}}, layers: {count: 1, pattern: [d]}}}",
        )
    module = Implementation("generated", text, tmp_path).module
    for block_reuse, pages in ((False, pages_off), (True, pages_on)):
        got = module.pages_per_request(
            "m", speculative="p", max_seq_len=1024, block_reuse=block_reuse
        )
        assert list(got["target"].values()) == [pages]
        # b = 2*1*8*2 = 32: per_request = pages * 16 * 32.
        generic = Implementation("generic", text, tmp_path).terms(
            "m",
            speculative="p",
            max_batch_size=1,
            max_num_tokens=16,
            max_seq_len=1024,
            block_reuse=block_reuse,
        )
        assert generic["target"]["per_request"] == pages * 16 * 32


def test_block_reuse_extension_reaching_max_seq_len_becomes_full(kind, tmp_path):
    # vanilla MTP K=4 (D = 4): window 1020 + 4 = 1024 >= S = 1024, so the layer is full
    # attention: slope = 2*1*8*2 = 32 and no per-request window cost.
    model = impl(kind, _reuse_spec(1020, "mtp", 4), tmp_path)
    common = {"speculative": "p", "max_batch_size": 2, "max_num_tokens": 16, "max_seq_len": 1024}
    assert model.costs("m", block_reuse=True, **common) == {"target": (32, 0)}
    # Without reuse: H = 8, pages(1020, 8) = ceil(1026/16) + 1 = 65 + 1 = 66;
    # intercept = 2 * 66*16*32 + 16*32 = 67584 + 512.
    assert model.costs("m", block_reuse=False, **common) == {"target": (0, 67584 + 512)}


RESUME = """
schema_version: 1
family: resume
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: m
    max_seq_len: 4096
    layer_kinds:
      g: {attention: full, kv_heads: 8, head_dim: 16}
    layers: {count: 2, pattern: [g]}
speculative:
  - name: pard2
    mode: pard
    max_draft_len: 2
    draft:
      layer_kinds: {d: {attention: sliding, window: 32, kv_heads: 1, head_dim: 16}}
      layers: {count: 2, pattern: [d]}
"""


def test_single_swa_draft_pool_rounds_for_resume_with_float32_util(kind, tmp_path):
    # Draft: two SWA layers, b = 2*1*16*2 = 64 each; slot = 16 * 128 = 2048 B.
    # PARD K=2: H = 3K-1 = 5; pages(32, 5) = ceil(35/16) + 1 = 4 -> per_request = 4*2048 = 8192.
    # B = 4, N = 48: intercept = 4*8192 + 48*128 = 32768 + 6144 = 38912 = 19 slots.
    # float32(0.95) = 0.949999988..., 19 / that = 20.00000025 -> 21 slots (a float64 0.95
    # would give exactly 20). Rounded intercept = 21 * 2048 = 43008.
    terms = impl(kind, RESUME, tmp_path).terms(
        "m", speculative="pard2", max_batch_size=4, max_num_tokens=48, max_seq_len=4096
    )
    draft = terms["draft"]
    assert draft["intercept"] == 43008
    assert draft["resume_rounding"] == 43008 - 38912
    # The target has full layers only: slope = 2 layers * 512, no rounding.
    assert terms["target"] == {"slope": 1024, "per_request": 0, "ctx_swa": 0, "intercept": 0}


def test_resume_rounding_follows_max_util(kind, tmp_path):
    # u = 0.5: 19 slots / 0.5 = 38 slots = 77824 B.
    terms = impl(kind, RESUME, tmp_path).terms(
        "m",
        speculative="pard2",
        max_batch_size=4,
        max_num_tokens=48,
        max_seq_len=4096,
        max_util_for_resume=0.5,
    )
    assert terms["draft"]["intercept"] == 38 * 2048


def test_exact_semantics_adds_documented_rounding_terms(kind, tmp_path):
    terms = impl(kind, THREE_LAYERS, tmp_path).terms(
        "tri", max_batch_size=4, max_num_tokens=64, max_seq_len=1024, semantics="exact"
    )["target"]
    # full_page_rounding = B*(tpb-1)*slope = 4*15*512 = 30720.
    assert terms["full_page_rounding"] == 30720
    # near: pages(40, H=1) = 4 == pages(40, E=0) = ceil(38/16)+1 = 4 -> min(B,N)*15*64 = 3840;
    # far: pages(100, 1) = 8 == pages(100, 0) = ceil(98/16)+1 = 8 -> 4*15*128 = 7680.
    assert terms["context_page_rounding"] == 3840 + 7680
    assert terms["intercept"] == 94208 + 30720 + 11520


SINKS_AND_STATE = """
schema_version: 1
family: hybrid
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: m
    max_seq_len: 4096
    layer_kinds:
      s: {attention: sliding, window: 40, sink_tokens: 4, kv_heads: 2, head_dim: 8}
      r: {attention: recurrent, state_bytes: 1000}
    layers: {count: 2, pattern: [s, r]}
"""


def test_sinks_and_recurrent_state(kind, tmp_path):
    # s: b = 64; pages(40, 1) = 4 plus ceil(4/16) = 1 sink block -> 5 pages = 5*16*64 = 5120.
    # r: state 1000 B per request at tp=1, ceil(1000/2) = 500 at tp=2; no per-token cost.
    model = impl(kind, SINKS_AND_STATE, tmp_path)
    common = {"max_batch_size": 3, "max_num_tokens": 16, "max_seq_len": 4096}
    assert model.terms("m", **common)["target"]["per_request"] == 5120 + 1000
    assert model.terms("m", tp_size=2, **common)["target"]["per_request"] == 5120 // 2 + 500


@pytest.mark.parametrize("tokens", [0, 1, 63, 64, 65, 1000, 12345])
def test_quota_and_its_inverse_round_trip(tmp_path, tokens):
    module = Implementation("generated", THREE_LAYERS, tmp_path).module
    common = {"max_batch_size": 4, "max_num_tokens": 64, "max_seq_len": 1024}
    quota = module.quota_from_max_tokens("tri", tokens, **common)["target"]
    # quota(T) = 512*T + 4*20480 + min(T, 64)*192
    assert quota == 512 * tokens + 81920 + min(tokens, 64) * 192
    assert module.max_tokens_from_quota("tri", {"target": quota}, **common) == {"target": tokens}
    # The two are inverse dict to dict: tokens -> quota per manager -> tokens per manager.
    quotas = module.quota_from_max_tokens("tri", tokens, **common)
    assert module.max_tokens_from_quota("tri", quotas, **common) == {"target": tokens}
    # One byte short of quota(T) no longer fits T tokens (T > 0).
    if tokens:
        short = module.max_tokens_from_quota("tri", {"target": quota - 1}, **common)
        assert short == {"target": tokens - 1}


def test_inverse_below_the_fixed_cost_is_zero_and_all_swa_is_unbounded(tmp_path):
    module = Implementation("generated", THREE_LAYERS, tmp_path).module
    common = {"max_batch_size": 4, "max_num_tokens": 64, "max_seq_len": 1024}
    # Below B*per_request = 81920 not even the windows fit.
    assert module.max_tokens_from_quota("tri", {"target": 81919}, **common) == {"target": 0}
    # A manager with no full-attention layer (the RESUME draft: slope 0, one SWA pool) fits
    # nothing below its rounded intercept 43008 and is unbounded (None) at or above it.
    resume = Implementation("generated", RESUME, tmp_path).module
    kw = {"speculative": "pard2", "max_batch_size": 4, "max_num_tokens": 48, "max_seq_len": 4096}
    assert resume.max_tokens_from_quota("m", {"draft": 43007}, **kw) == {"draft": 0}
    assert resume.max_tokens_from_quota("m", {"draft": 43008}, **kw) == {"draft": None}


def test_inverse_without_full_attention_is_unbounded_from_quota_n(tmp_path):
    # An all-SWA target (Mistral-like; here THREE_LAYERS cut down to its one "near" layer):
    # slope 0, so once all N context tokens fit (quota(N)), nothing else grows with T.
    text = THREE_LAYERS.replace("[near, far, glob]", "[near]").replace("count: 3", "count: 1")
    text = text.replace(
        "      far: {attention: sliding, window: 100, kv_heads: 4, head_dim: 8}\n", ""
    )
    text = text.replace("      glob: {attention: full, kv_heads: 8, head_dim: 16}\n", "")
    module = Implementation("generated", text, tmp_path).module
    common = {"max_batch_size": 4, "max_num_tokens": 64, "max_seq_len": 1024}
    # quota(N) = 4 * (4 pages * 16 * 64) + 64 * 64 = 16384 + 4096 = 20480.
    assert module.quota_from_max_tokens("tri", 64, **common)["target"] == 20480
    assert module.max_tokens_from_quota("tri", {"target": 20480}, **common) == {"target": None}
    assert module.max_tokens_from_quota("tri", {"target": 20479}, **common) == {"target": 63}


def test_budget_split_shares_sum_to_the_budget(tmp_path):
    module = Implementation("generated", RESUME, tmp_path).module
    kw = {"speculative": "pard2", "max_batch_size": 4, "max_num_tokens": 48, "max_seq_len": 4096}
    # target (s_t, i_t) = (1024, 0); draft (s_d, i_d) = (0, 43008).
    # M = 1 MiB: R = 1048576 - 43008 = 1005568; draft = 43008 + floor(R*0/1024) = 43008.
    assert module.split_budget("m", 1 << 20, **kw) == {"target": 1048576 - 43008, "draft": 43008}
    # Host tier splits by slope alone: the draft's slope is 0.
    assert module.split_budget("m", 1 << 20, tier="host", **kw) == {"target": 1 << 20, "draft": 0}


def test_budget_split_by_slopes(tmp_path):
    module = Implementation("generated", _modes_spec(4), tmp_path).module
    kw = {"speculative": "pard", "max_batch_size": 2, "max_num_tokens": 16, "max_seq_len": 4096}
    # target slope 2*1*8*2 = 32, draft slope 32, both intercepts 0:
    # draft = 0 + floor(1000 * 32 / 64) = 500.
    assert module.split_budget("m", 1000, **kw) == {"target": 500, "draft": 500}
    # 1001: floor(1001*32/64) = 500, target takes the remainder 501.
    assert module.split_budget("m", 1001, **kw) == {"target": 501, "draft": 500}


def test_budget_split_errors(tmp_path):
    resume = Implementation("generated", RESUME, tmp_path).module
    kw = {"speculative": "pard2", "max_batch_size": 4, "max_num_tokens": 48, "max_seq_len": 4096}
    with pytest.raises(ValueError, match="does not cover the fixed costs"):
        resume.split_budget("m", 43007, **kw)  # R < 0
    with pytest.raises(ValueError, match="does not cover the fixed costs"):
        resume.split_budget("m", 43008, **kw)  # R == 0 while s_t + s_d = 1024 > 0
    with pytest.raises(ValueError, match="tier must be one of gpu, host"):
        resume.split_budget("m", 1 << 20, tier="disk", **kw)
    # A profile without a separate pool keeps the whole budget.
    assert resume.split_budget("m", 5, max_batch_size=1, max_num_tokens=1, max_seq_len=64) == {
        "target": 5
    }


@pytest.mark.parametrize(
    ("speculative", "max_seq_len", "expected"),
    [
        ("none", 1024, 68),  # ceil((1024 + 1)/16) = 65 -> next multiple of 4 = 68
        ("pard", 1000, 64),  # H = 11: ceil(1011/16) = 64, already a multiple of 4
        ("eagle3", 1000, 64),  # H = 8: ceil(1008/16) = 63 -> 64
        ("ngram", 1011, 64),  # H = 5: ceil(1016/16) = 64
        ("ngram", 1020, 68),  # ceil(1025/16) = 65 -> 68
    ],
)
def test_max_blocks_per_seq(tmp_path, speculative, max_seq_len, expected):
    module = Implementation("generated", _modes_spec(4), tmp_path).module
    assert (
        module.max_blocks_per_seq("m", speculative=speculative, max_seq_len=max_seq_len) == expected
    )
