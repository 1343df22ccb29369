"""KV sharing across layers (a kind with ``reads: <layer index>``, Gemma 3n's
``num_kv_shared_layers``): a reading layer holds no cache and costs nothing, keeps its index
(pipeline ranks split by it), and sees the cache of the layer it reads. Every number has its
hand derivation beside it (docs/cost-model.md §1, §3, §4).

Notation: b = bytes per token of one layer = 2 (K and V) * kv_heads 2 * head_dim 16 * 2 B
(bf16) = 128; tpb = 16; w = 64; H = 1 (no speculation):
pages(w, H) = ceil((64 + 1 - 2) / 16) + 1 = 4 + 1 = 5 pages per request per sliding layer.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from kvgen._engines.capacity import engine_capacity

from tests.reference import layers as shapes
from tests.sizing_support import Implementation, family_from_text
from tests.workloads import DiffError, Harness, render_family, run_adversarial

# Layers 0..7 are l g l g l g sl sg: the shared kinds read the last earlier layer of their
# type (4 and 5), as Gemma 3n does.
SHARING = """
schema_version: 1
family: sharing
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: m
    max_seq_len: 4096
    layer_kinds:
      local: {attention: sliding, window: 64, kv_heads: 2, head_dim: 16}
      global: {attention: full, kv_heads: 2, head_dim: 16}
      shared_local: {attention: sliding, window: 64, kv_heads: 2, head_dim: 16, reads: 4}
      shared_global: {attention: full, kv_heads: 2, head_dim: 16, reads: 5}
    layers:
      count: 8
      pattern: [local, global, local, global, local, global, shared_local, shared_global]
speculative:
  - {name: ngram4, mode: ngram, max_draft_len: 4}
"""
# The same model with the readers as cache-less layers, and with the readers owning a cache.
AS_NONE = SHARING.replace(
    "{attention: sliding, window: 64, kv_heads: 2, head_dim: 16, reads: 4}", "{attention: none}"
).replace("{attention: full, kv_heads: 2, head_dim: 16, reads: 5}", "{attention: none}")
AS_OWN = SHARING.replace(", reads: 4}", "}").replace(", reads: 5}", "}")
KW = {"max_batch_size": 4, "max_num_tokens": 32, "max_seq_len": 4096}

# 3 global layers: slope = 3 * 128 = 384. 3 local layers: per_request = 3 * b * tpb * pages
# = 3 * 128 * 16 * 5 = 30,720; ctx_swa = 3 * 128 = 384;
# intercept = B * 30,720 + N * 384 = 122,880 + 12,288 = 135,168.
SHARED_COSTS = (384, 135_168)
# Readers owning their cache: 4 global (slope 512), 4 local: per_request 40,960, ctx 512,
# intercept = 4 * 40,960 + 32 * 512 = 163,840 + 16,384 = 180,224.
OWN_COSTS = (512, 180_224)
# pp 2 keeps the readers' index: ranks [0, 4) = l g l g and [4, 8) = l g sl sg.
# Rank 0: slope 2 * 128 = 256; 2 local: 4 * (2 * 128 * 16 * 5) + 32 * 256 = 81,920 + 8,192.
# Rank 1: slope 128; 1 local: 4 * 10,240 + 32 * 128 = 40,960 + 4,096 = 45,056.
PP2_COSTS = [(256, 90_112), (128, 45_056)]
# Were the readers dropped from the index, 6 layers l g l g l g would split [0, 3) = l g l
# and [3, 6) = g l g: (128, 90,112) and (256, 45,056), not where the model's layers live.
PP2_DROPPED = [(128, 90_112), (256, 45_056)]


def _render(text: str, tmp_path, name: str):
    family = family_from_text(text).model_copy(update={"family": name})
    return render_family(family, textwrap.dedent(text).encode(), tmp_path, f"{name}.yaml")


@pytest.fixture(params=["generated", "generic"])
def impl(request, tmp_path):
    return Implementation(request.param, SHARING, tmp_path)


def test_readers_cost_nothing_in_both_semantics(impl, tmp_path):
    assert impl.costs("m", **KW) == {"target": SHARED_COSTS}
    # "exact" adds whole pages of the owning layers only (§4): full_page_rounding =
    # B * (tpb - 1) * slope = 4 * 15 * 384 = 23,040, and context_page_rounding =
    # min(B, N) * (tpb - 1) * ctx_swa = 4 * 15 * 384 = 23,040 (pages(64, H=1) == pages(64,
    # E=0) = 5, so the headroom reserves no spare page): 135,168 + 46,080 = 181,248.
    assert impl.costs("m", semantics="exact", **KW) == {"target": (384, 181_248)}
    none = Implementation(impl.kind, AS_NONE, tmp_path / "none")
    for semantics in ("trtllm-v2", "exact"):
        assert impl.terms("m", semantics=semantics, speculative="ngram4", **KW) == none.terms(
            "m", semantics=semantics, speculative="ngram4", **KW
        )


def test_readers_would_cost_a_layer_each_if_they_owned_a_cache(tmp_path):
    own = Implementation("generic", AS_OWN, tmp_path)
    assert own.costs("m", **KW) == {"target": OWN_COSTS}


def test_pipeline_ranks_count_the_readers(impl):
    got = [impl.costs("m", pp_size=2, pp_rank=r, **KW)["target"] for r in range(2)]
    assert got == PP2_COSTS
    assert got != PP2_DROPPED


@pytest.mark.parametrize(
    ("pp_size", "refused_rank", "layer"),
    [
        # pp 4: [0, 2) [2, 4) [4, 6) [6, 8): layers 6 and 7 read 4 and 5 on rank 2.
        (4, 3, 6),
        # pp 3: [0, 3) [3, 6) [6, 8): the same readers, rank 2.
        (3, 2, 6),
    ],
)
def test_a_reader_on_another_rank_than_its_cache_is_refused(impl, pp_size, refused_rank, layer):
    for rank in range(pp_size):
        if rank != refused_rank:
            impl.costs("m", pp_size=pp_size, pp_rank=rank, **KW)  # no error
    with pytest.raises(ValueError, match=f"layer {layer} .*reads the cache of layer 4"):
        impl.costs("m", pp_size=pp_size, pp_rank=refused_rank, **KW)


def test_the_shim_gives_readers_no_pages_and_the_views_they_read(tmp_path):
    rendered = _render(SHARING, tmp_path, "sharing")
    kw = {"max_tokens": 32, "device": "meta", "semantics": "exact", **KW}
    shim = rendered.allocator.KVCacheShim("m", **kw)
    # The pools are those of the model whose readers are cache-less, and the static "exact"
    # quota is their bytes (the diff suite proves the rest of that equality on the grid).
    none = _render(AS_NONE, tmp_path, "sharing_none").allocator.KVCacheShim("m", **kw)
    assert _pool_pages(shim) == _pool_pages(none)
    assert shim.quota_bytes() == none.quota_bytes()
    quota = rendered.sizing.quota_from_max_tokens("m", 32, semantics="exact", **KW)
    assert shim.quota_bytes() == quota
    for pool in shim.managers["target"].pools.values():
        assert set(pool.views) <= {f"layers.{i}" for i in range(6)}, pool.name
    assert shim.layer_views(6) is shim.layer_views(4)
    assert shim.layer_views("layers.7") is shim.layer_views(5)
    assert shim.layer_views(6)["k"].shape[1:] == (16, 2, 16)  # (pages, tpb, heads, head_dim)


def test_the_shim_refuses_a_reader_away_from_its_cache(tmp_path):
    rendered = _render(SHARING, tmp_path, "sharing_pp")
    shim_cls = rendered.allocator.KVCacheShim
    shim_cls("m", max_tokens=32, device="meta", pp_size=4, pp_rank=2, **KW)  # 4, 5 (+ 6, 7 no)
    with pytest.raises(ValueError, match=r"layer 6 .*reads the cache of layer 4") as shim_refusal:
        shim_cls("m", max_tokens=32, device="meta", pp_size=4, pp_rank=3, **KW)
    # One refusal, worded once (kvgen.sizing.facts.kv_sharing_rank): the interpreter's sentence.
    with pytest.raises(ValueError) as static_refusal:
        rendered.sizing.cache_costs("m", pp_size=4, pp_rank=3, **KW)
    assert str(shim_refusal.value) == str(static_refusal.value)
    assert str(shim_refusal.value).startswith("pp_size 4: layer 6 (pipeline rank 3) reads")


def test_runtime_tables_refuse_a_bad_reader():
    from kvgen.runtime._tables import FamilyTables, LayerKind, LayerStack, ModelTable

    own = LayerKind("full", kv_heads=2, head_dim=16)

    def tables(reader: LayerKind, pattern=("g", "r"), **more: LayerKind) -> FamilyTables:
        stack = LayerStack(len(pattern), pattern, {"g": own, "r": reader, **more})
        return FamilyTables("t", 16, {"m": ModelTable(4096, stack)})

    tables(own._replace(reads=0))  # layer 1 reads layer 0: valid
    with pytest.raises(ValueError, match="reads layer 5, which does not exist"):
        tables(own._replace(reads=5))
    with pytest.raises(ValueError, match="reads layer 1, which is not before layer 1"):
        tables(own._replace(reads=1))
    with pytest.raises(ValueError, match="reads layer 0, which has another shape"):
        tables(own._replace(reads=0, head_dim=32))
    with pytest.raises(ValueError, match="reads layer 1, which holds no attention cache"):
        tables(own._replace(reads=0), ("g", "r", "c"), c=own._replace(reads=1))  # a chain


def test_vllm_gives_readers_no_cache_and_sglang_a_buffer(tmp_path):
    # vLLM builds no KV spec for a layer with kv_sharing_target_layer_name: the model is the
    # same as with the readers cache-less (AS_NONE), exactly. SGLang 0.5.23 sizes its pool for
    # every hidden layer (resolve_layer_indices), the readers too: as if each held its own
    # cache (AS_OWN), the generated module and kvgen alike.
    family = family_from_text(SHARING)
    engine_kw = {"engine": "vllm", "max_seq_len": 4096, "max_num_tokens": 32}
    shared = engine_capacity(family, "m", 1 << 30, **engine_kw)
    assert shared == engine_capacity(family_from_text(AS_NONE), "m", 1 << 30, **engine_kw)
    assert shared != engine_capacity(family_from_text(AS_OWN), "m", 1 << 30, **engine_kw)
    sglang_kw = {**engine_kw, "engine": "sglang"}
    in_sglang = engine_capacity(family, "m", 1 << 30, **sglang_kw)
    assert in_sglang == engine_capacity(family_from_text(AS_OWN), "m", 1 << 30, **sglang_kw)
    assert in_sglang != engine_capacity(family_from_text(AS_NONE), "m", 1 << 30, **sglang_kw)
    sizing = _render(SHARING, tmp_path, "sharing_engines").sizing
    assert sizing.engine_capacity("m", 1 << 30, **engine_kw) == shared
    assert sizing.engine_capacity("m", 1 << 30, **sglang_kw) == in_sglang
    # TensorRT-LLM's answer is the static cost, which models the readers (nothing).
    sizing.engine_capacity("m", 1 << 30, engine="trtllm-v2", max_seq_len=4096, max_num_tokens=32)


def _pool_pages(shim) -> list[tuple[str, int, int]]:
    """(pool, pages built, pages in use) of the target manager."""
    pools = shim.managers["target"].pools.items()
    return sorted((name, pool.pages, pool.used) for name, pool in pools)


class _Recorder(Harness):
    """A harness that records every pool's pages in use after each checked operation."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.trace: list[list[tuple[str, int]]] = []

    def check(self, where: str = "") -> None:
        super().check(where)
        self.trace.append(_pool_pages(self.shim))


def _trace(rendered, profile: str) -> tuple[list, dict]:
    params = {**KW, "max_seq_len": 256}
    shim = rendered.allocator.KVCacheShim(
        "m",
        speculative=profile,
        max_tokens=4 * (256 + 64),
        device="meta",
        semantics="exact",
        reserve_pages=16,
        **params,
    )
    h = _Recorder(shim, rendered.sizing, params)
    run_adversarial(h, seed=3, thorough=False)
    pools = shim.managers["target"].pools
    return h.trace, {name: pool.page_bytes for name, pool in pools.items()}


@pytest.mark.parametrize("profile", ["none", "ngram4"])
def test_brute_force_readers_hold_no_page_at_any_step(tmp_path, profile):
    """By brute force over the adversarial workloads (every alignment, chunking, acceptance,
    suspend/resume, random operations), checked against the static cost at every step: the
    model with readers holds, in every pool and after every operation, exactly the pages of
    the model whose readers are cache-less, and exactly the pages of the model whose readers
    own a cache, each page of the latter being the readers' tpb * b bytes larger. So a
    reader adds 0 pages to pages(w, H) (§3) and 0 bytes to the cost, at every history."""
    shared, shared_bytes = _trace(_render(SHARING, tmp_path, f"sh_{profile}"), profile)
    none, none_bytes = _trace(_render(AS_NONE, tmp_path, f"no_{profile}"), profile)
    own, own_bytes = _trace(_render(AS_OWN, tmp_path, f"ow_{profile}"), profile)
    assert len(shared) > 100  # the workload really ran
    assert shared == none == own
    assert shared_bytes == none_bytes
    # One reader per life cycle: its page is 16 tokens * 128 B = 2,048 B more when it owns.
    assert {name: own_bytes[name] - b for name, b in shared_bytes.items()} == {
        "full": 2048,
        "w64": 2048,
    }


def test_generic_costmodel_layers_leave_readers_out():
    family = family_from_text(SHARING)
    model = family.model("m")
    layers = shapes.stack_layers(
        model, "bf16", range(8), tp_size=1, max_seq_len=4096, backoff=0, shape_of=model
    )
    assert [layer.index for layer in layers] == [0, 1, 2, 3, 4, 5]


# --------------------------------------------------------------------------- drift (§7)
# The plausible mistakes of a KV-sharing model each make the diff fail when the static side
# carries them, and pass when it does not (the tests/generated/test_drift.py pattern).

DRIFT = {**KW, "max_seq_len": 256}


def _harness(rendered, buggy=None) -> Harness:
    shim = rendered.allocator.KVCacheShim(
        "m", max_tokens=4 * (256 + 64), device="meta", semantics="exact", reserve_pages=16, **DRIFT
    )
    h = Harness(shim, rendered.sizing, DRIFT)
    if buggy is not None:
        h.cost_override["exact"] = buggy
    return h


def _exact(h: Harness, manager: str, tokens: int) -> int:
    t = h.terms["exact"][manager]
    return t["slope"] * tokens + t["intercept"]


def test_drift_an_owner_counted_as_a_reader_is_caught(tmp_path):
    # Off by one in first_shared = num_hidden_layers - num_kv_shared_layers (one layer too
    # early): the global owner (layer 5) is charged nothing, so the static slope is 384 - 128
    # and the runtime, which holds layer 5's pages, exceeds it.
    rendered = _render(SHARING, tmp_path, "drift_owner")
    run_adversarial(_harness(rendered), seed=1, thorough=False)
    h = _harness(rendered)
    h.cost_override["exact"] = lambda manager, tokens: _exact(h, manager, tokens) - 128 * tokens
    with pytest.raises(DiffError):
        run_adversarial(h, seed=1, thorough=False)


def test_drift_a_sliding_owner_dropped_is_caught(tmp_path):
    # The sliding owner (layer 4) charged nothing: per_request loses 128 * 16 * 5 = 10,240 and
    # ctx_swa 128, so the intercept is B * 10,240 + N * 128 = 40,960 + 4,096 = 45,056 short.
    rendered = _render(SHARING, tmp_path, "drift_swa_owner")
    h = _harness(rendered)
    h.cost_override["exact"] = lambda manager, tokens: _exact(h, manager, tokens) - 45_056
    with pytest.raises(DiffError):
        run_adversarial(h, seed=2, thorough=False)


@pytest.mark.parametrize("tokens", [0, 1, 15, 16, 31, 32, 33, 83, 1024])
def test_drift_readers_charged_as_owners_breaks_page_exactness(tmp_path, tokens):
    # Readers charged as if they owned a cache: the static quota is the AS_OWN model's, above
    # the bytes of the pools the shim builds for T (page-exact "exact", §4), at every T.
    rendered = _render(SHARING, tmp_path, "drift_own")
    own = _render(AS_OWN, tmp_path, "drift_own_buggy").sizing
    kw = {"device": "meta", "semantics": "exact", **KW}
    built = rendered.allocator.KVCacheShim("m", max_tokens=tokens, **kw).quota_bytes()
    assert rendered.sizing.quota_from_max_tokens("m", tokens, semantics="exact", **KW) == built
    # At least one page of each life cycle's readers: 16 * 128 per full page and the
    # reader's 5 pages per request on w64, so the buggy quota is strictly above.
    assert (
        own.quota_from_max_tokens("m", tokens, semantics="exact", **KW)["target"] > built["target"]
    )


@pytest.mark.parametrize("rank", [0, 1])
def test_drift_readers_dropped_from_the_index_misplace_pipeline_ranks(tmp_path, rank):
    # Readers dropped from the index: a 6-layer l g l g l g model, whose pp 2 ranks hold
    # [0, 3) and [3, 6) (PP2_DROPPED) instead of [0, 4) and [4, 8) (PP2_COSTS).
    dropped = SHARING.replace("count: 8", "count: 6").replace(
        "[local, global, local, global, local, global, shared_local, shared_global]",
        "[local, global, local, global, local, global]",
    )
    dropped = "\n".join(line for line in dropped.splitlines() if "reads:" not in line)
    buggy = Implementation("generic", dropped, tmp_path)
    assert buggy.costs("m", pp_size=2, pp_rank=rank, **KW)["target"] == PP2_DROPPED[rank]
    rendered = _render(SHARING, tmp_path, f"drift_pp{rank}")
    kw = {"device": "meta", "semantics": "exact", "pp_size": 2, "pp_rank": rank, **KW}
    built = rendered.allocator.KVCacheShim("m", max_tokens=100, **kw).quota_bytes()
    static = rendered.sizing.quota_from_max_tokens(
        "m", 100, semantics="exact", pp_size=2, pp_rank=rank, **KW
    )
    assert static == built
    wrong = _render(dropped, tmp_path, f"drift_dropped{rank}").sizing
    assert (
        wrong.quota_from_max_tokens("m", 100, semantics="exact", pp_size=2, pp_rank=rank, **KW)
        != built
    )


def test_reading_layer_zero_survives_rendering(tmp_path):
    # reads: 0 is falsy: the allocator table must still carry it (a table that dropped it
    # would give layer 1 its own pages: 2 pages * 16 * 128 B more in the full pool).
    text = """
schema_version: 1
family: sharing_zero
tokens_per_block: 16
kv_cache_dtype: bf16
models:
  - name: m
    max_seq_len: 4096
    layer_kinds:
      g: {attention: full, kv_heads: 2, head_dim: 16}
      r: {attention: full, kv_heads: 2, head_dim: 16, reads: 0}
    layers: {count: 2, pattern: [g, r]}
"""
    rendered = _render(text, tmp_path, "sharing_zero")
    assert "reads=0" in (tmp_path / "sharing_zero" / "allocator.py").read_text()
    shim = rendered.allocator.KVCacheShim("m", max_tokens=32, device="meta", **KW)
    assert shim.layer_views(1) is shim.layer_views(0)
    # One owning layer: T = 32 -> 2 pages * 16 tokens * 128 B = 4,096 B.
    assert shim.quota_bytes() == {"target": 4096}


def test_plan_on_shipped_gemma3n_charges_only_the_owning_layers(capsys):
    from kvgen._cli.main import main

    from tests.workloads import ROOT

    # gemma3n_e4b: 20 owning layers (16 local w512, 4 global), b = 2 * 2 * 256 * 2 = 2,048;
    # the 15 readers add nothing. slope = 4 * 2,048 = 8,192; pages(512, 1) at tpb 64 =
    # ceil(511 / 64) + 1 = 9; per_request = 16 * 2,048 * 64 * 9 = 18,874,368; ctx_swa =
    # 16 * 2,048 = 32,768. 8 requests of 32,768 tokens with N = 2,048:
    # 8 * 32,768 * 8,192 + 8 * 18,874,368 + 2,048 * 32,768 = 2,147,483,648 + 150,994,944 +
    # 67,108,864 = 2,365,587,456 B of pools (owning caches on all 35 layers: slope 7 * 2,048):
    # 8 * 512 = 4,096 full pages of 0.5 MiB and 8 * 9 + 2,048 / 64 = 104 window pages of 2 MiB.
    # Under "trtllm-v2" the quota is the least from which TensorRT-LLM V2's split builds them
    # (docs/cost-model.md §4): the full group's ratio 0.5 / 2.5 = 1/5 must round to its
    # 2,048 MiB / 16 MiB = 128 grains (16 MiB: the grain from 8 GiB): round(G / 5) >= 128
    # first at G = 638 (127.6; 637 gives 127.4), 638 * 16 MiB = 10,703,863,808 B.
    args = ["plan", "gemma3n", "gemma3n_e4b", "--generated", str(ROOT / "generated")]
    args += ["--requests", "8", "--seq-len", "32768", "--max-num-tokens", "2048"]
    assert main([*args, "--max-batch-size", "8", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["managers"] == {"target": 638 * (16 << 20)} == {"target": 10_703_863_808}
    from kvgen._engines.planner import load_sizing
    from kvgen.sizing._trtllm_pools import engine_pool_plan

    plan = engine_pool_plan(load_sizing("gemma3n"), "gemma3n_e4b", requests=8, seq_len=32768,
                            max_num_tokens=2048)  # fmt: skip
    pools = sum(p.slot_bytes * p.planned_pages for p in plan["target"])
    assert pools == 4096 * (1 << 19) + 104 * (2 << 20) == 2_365_587_456
