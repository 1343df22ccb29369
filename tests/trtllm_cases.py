"""The workloads compared with TensorRT-LLM's KV cache manager V2, and the shim side of them.

Used by ``bench/engines/trtllm_runner.py`` (which also drives the engine) and by
``tests/generated/test_trtllm_goldens.py`` (which replays the recorded engine rows against the
shim, without the engine). A case names a family's tables (a generated allocator's
``TABLES``, or a synthetic table built here), a model, a speculative profile and a workload.

The engine's layers are given as spec dimensions (kv_heads, head_dim, dtype, window, sinks:
the model's config.json values in the family spec), never as kvgen's computed bytes; the
window each life cycle keeps is resolved as the PyTorch backend's wrapper does (w + D with
block reuse, full attention once it reaches max_seq_len; docs/cost-model.md §1, §5).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from kvgen.runtime import allocator as rt
from kvgen.runtime._pages import mode_headroom

from tests.trtllm_traces import TraceParams

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
SEEDS = (1, 2, 3)
AMPLE = 8  # engine quota: AMPLE x the shim's pools for the workload (nothing runs out)
RESERVE_PAGES = 4096  # spare pages of every shim pool in the ample cases


def synthetic_tables() -> rt.FamilyTables:
    """Sliding windows with 0, 5 and 20 sink tokens beside full attention, and MTP K=3."""
    kinds = {
        "s0": rt.LayerKind("sliding", window=100, kv_heads=2, head_dim=64),
        "s5": rt.LayerKind("sliding", window=100, sink_tokens=5, kv_heads=2, head_dim=64),
        "s20": rt.LayerKind("sliding", window=70, sink_tokens=20, kv_heads=1, head_dim=64),
        "g": rt.LayerKind("full", kv_heads=2, head_dim=64),
    }
    stack = rt.LayerStack(8, ("s0", "s5", "s20", "g"), kinds)
    mtp = rt.LayerStack(1, ("g",), {"g": kinds["g"]})
    return rt.FamilyTables(
        family="fx_trtllm_sinks",
        tokens_per_block=16,
        models={"sinks": rt.ModelTable(4096, stack, ("none", "mtp3"))},
        profiles={"mtp3": rt.SpeculativeProfile("mtp", 3)},
        extra_layers={("sinks", "mtp3"): mtp},
    )


def kvgen_pools_bytes(sizing: Any, model: str, serving: dict[str, Any]) -> dict[str, int]:
    """Per manager, the bytes of kvgen's planned pools for a serving run (pages x slot bytes
    of every pool group, ``kvgen.sizing._trtllm_pools.engine_pool_plan``)."""
    from kvgen.sizing._trtllm_pools import engine_pool_plan

    plan = engine_pool_plan(sizing, model, **serving)
    return {
        name: sum(p.slot_bytes * p.planned_pages for p in pools) for name, pools in plan.items()
    }


@dataclass(frozen=True)
class Case:
    name: str
    family: str  # a generated family, or "synthetic"
    model: str
    speculative: str = "none"
    requests: int = 6
    batch: int = 4
    max_seq_len: int = 1024
    max_num_tokens: int = 256
    prompt: tuple[int, int] = (1, 500)
    decode: tuple[int, int] = (1, 150)
    suspend_every: int = 0
    block_reuse: bool = False
    max_util_for_resume: float = 0.95
    engine_quota: dict[str, int] | None = None  # bytes per manager; None: AMPLE x the shim's
    # The engine gets quota_for_requests(batch, max_seq_len) of the generated sizing module
    # under "trtllm-v2" (finding 6 of the V2 comparison: it must be enough).
    quota_for_requests: bool = False
    # The engine gets the bytes of kvgen's own planned pools for that serving run (what
    # quota_for_requests answered under "trtllm-v2" before it followed the engine's split).
    kvgen_pools_quota: bool = False
    # The engine runs out of pages on this quota (a finding the golden records, not a bug).
    engine_runs_out: bool = False
    # A host tier: bytes per manager of the engine's HostCacheTierConfig, the shim's
    # host_cache_bytes (suspended requests' pages evictable to host memory).
    host_quota: dict[str, int] | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def tables(self) -> rt.FamilyTables:
        if self.family == "synthetic":
            return synthetic_tables()
        return importlib.import_module(f"generated.{self.family}.allocator").TABLES

    def shim(self, pool_pages: dict[tuple[str, str], int] | None = None) -> rt.KVCacheShim:
        """The shim for this workload: pools for every request at max_seq_len (nothing runs
        out) unless ``pool_pages`` sizes them as the engine built them."""
        probe = rt.KVCacheShim(self.tables(), self.model, **self._runtime(), max_tokens=0)
        tokens = self.batch * (self.max_seq_len + probe.headroom + probe.tokens_per_block)
        # Sliding-window pools hold B requests' windows; the block-reuse cache outgrows them
        # (the engine's ample quota keeps it whole), so ample cases get spare pages too.
        spare = 0 if pool_pages is not None else RESERVE_PAGES
        return rt.KVCacheShim(
            self.tables(),
            self.model,
            **self._runtime(),
            max_tokens=tokens,
            pool_pages=pool_pages,
            reserve_pages=spare,
        )

    def quota(self) -> dict[str, int] | None:
        """The engine's quota per manager, when the case sets one."""
        if not self.quota_for_requests and not self.kvgen_pools_quota:
            return self.engine_quota
        sizing = importlib.import_module(f"generated.{self.family}.sizing")
        serving = {
            "requests": self.batch,
            "seq_len": self.max_seq_len,
            "speculative": self.speculative,
            "max_num_tokens": self.max_num_tokens,
        }
        if self.kvgen_pools_quota:
            return kvgen_pools_bytes(sizing, self.model, serving)
        quota: dict[str, int] = sizing.quota_for_requests(
            self.model, semantics="trtllm-v2", **serving
        )
        return quota

    def shim_for_tokens(self, tokens: int) -> rt.KVCacheShim:
        return rt.KVCacheShim(self.tables(), self.model, **self._runtime(), max_tokens=tokens)

    def pool_pages(self, engine: dict[str, Any]) -> dict[tuple[str, str], int] | None:
        """With an engine quota, the shim's pools get the pages the engine built: a pool
        group's slots go to its first life cycle (the shim's shared pool sums its cycles)."""
        if self.quota() is None:
            return None
        shim = self.shim()
        tpb = shim.tokens_per_block
        pages = {}
        for name, described in engine["managers"].items():
            cycles = {
                (c.window, -(-c.sink_tokens // tpb)): c.name for c in shim.managers[name].cycles
            }
            group_of = described["pool_group_of"]
            for lc, (window, sink_blocks) in enumerate(described["life_cycles"]):
                first = group_of.index(group_of[lc]) == lc
                slots = described["slots"][group_of[lc]] if first else 0
                pages[(name, cycles[(window, sink_blocks)])] = slots
        return pages

    def _runtime(self) -> dict[str, Any]:
        return {
            "speculative": self.speculative,
            "max_batch_size": self.batch,
            "max_num_tokens": self.max_num_tokens,
            "max_seq_len": self.max_seq_len,
            "block_reuse": self.block_reuse,
            "max_util_for_resume": self.max_util_for_resume,
            "device": "meta",
            "host_cache_bytes": self.host_quota,
        }

    def params(self, seed: int, shim: rt.KVCacheShim) -> TraceParams:
        return TraceParams(
            seed=seed,
            requests=self.requests,
            batch=self.batch,
            max_num_tokens=self.max_num_tokens,
            max_seq_len=self.max_seq_len,
            prompt=self.prompt,
            decode=self.decode,
            extra_tokens=shim.extra_tokens,
            draft_slots=shim.draft_slots,
            step_tokens=shim.step_tokens,
            suspend_every=self.suspend_every,
        )

    def engine_managers(self, shim: rt.KVCacheShim) -> list[dict[str, Any]]:
        """Each cache manager's layers as spec dimensions, in the order the shim holds them."""
        tables = self.tables()
        stacks = {"target": [tables.models[self.model].stack]}
        extra = tables.extra_layers.get((self.model, self.speculative))
        if extra is not None:
            stacks["target"].append(extra)
        draft = tables.drafts.get(self.speculative)
        if draft is not None:
            stacks["draft"] = [draft]
        mode, k, tree = tables.profiles[self.speculative]
        backoff = mode_headroom(mode, k, tree).backoff if self.block_reuse else 0
        out = []
        for name, manager_stacks in stacks.items():
            layers = []
            for stack in manager_stacks:
                for index in range(stack.count):
                    kind = stack.kinds[stack.pattern[index % len(stack.pattern)]]
                    layers.append(self._layer(len(layers), kind, backoff))
            out.append({"name": name, "layers": layers})
        return out

    def _layer(self, layer_id: int, kind: rt.LayerKind, backoff: int) -> dict[str, Any]:
        if kind.attention not in ("full", "sliding"):
            raise ValueError(f"{self.name}: the V2 comparison covers attention layers only")
        window = None
        if kind.attention == "sliding" and kind.window is not None:
            extended = kind.window + backoff
            window = extended if extended < self.max_seq_len else None
        latent = kind.kv_lora_rank + kind.qk_rope_head_dim
        return {
            "id": layer_id,
            "kv_heads": kind.kv_heads,
            "head_dim": kind.head_dim,
            "latent": latent,
            "dtype_bytes": DTYPE_BYTES[kind.dtype],
            "window": window,
            "sinks": kind.sink_tokens if window is not None else 0,
        }


# Watermark: llama3_1_8b pages are 32 tokens x 128 KiB = 4 MiB, so 80 MiB is a 20-page pool.
WATERMARK_QUOTA = {"target": 80 << 20}
# Host tier: 64 MiB of 2 MiB grains, one pool group of 4 MiB slots: 16 host rows.
HOST_QUOTA = {"target": 64 << 20}

CASES = (
    Case("llama3_1_8b/none", "llama3", "llama3_1_8b"),
    Case("llama3_1_8b/eagle3", "llama3", "llama3_1_8b", "eagle3"),
    Case("llama3_1_8b/ngram4", "llama3", "llama3_1_8b", "ngram4"),
    Case("gemma3_1b/none", "gemma3", "gemma3_1b"),
    Case("gemma3_1b/draft_1b", "gemma3", "gemma3_1b", "draft_1b"),
    Case("gemma3_27b/ngram4", "gemma3", "gemma3_27b", "ngram4", max_seq_len=2048),
    Case("gpt_oss_20b/eagle3", "gpt_oss", "gpt_oss_20b", "eagle3"),
    Case("synthetic/sinks", "synthetic", "sinks"),
    # Every other shipped family whose layers this engine revision holds (attention only, a
    # plain dtype): its first model, no speculation. Not openelm: its layers differ in heads,
    # so one life cycle holds buffers of several sizes, which create_storage_config refuses
    # ("Not yet supported") in this revision.
    Case("command_r7b/none", "cohere2", "command_r7b"),
    Case("deepseek_v3/none", "deepseek_v3", "deepseek_v3"),
    Case("gemma2_2b/none", "gemma2", "gemma2_2b"),
    Case("kimi_k2_instruct/none", "kimi_k2", "kimi_k2_instruct"),
    Case("mistral_7b_v0_1/none", "mistral", "mistral_7b_v0_1"),
    Case("phi3_mini_4k/none", "phi3", "phi3_mini_4k"),
    Case("qwen2_5_0_5b/none", "qwen2_5", "qwen2_5_0_5b"),
    Case("qwen3_0_6b/none", "qwen3", "qwen3_0_6b"),
    Case("qwen3_30b_a3b/none", "qwen3_moe", "qwen3_30b_a3b"),
    Case("synthetic/sinks_mtp3", "synthetic", "sinks", "mtp3"),
    Case("llama3_1_8b/suspend", "llama3", "llama3_1_8b", suspend_every=4),
    Case("gemma3_1b/suspend", "gemma3", "gemma3_1b", "none", suspend_every=4),
    Case("gemma3_1b/reuse", "gemma3", "gemma3_1b", block_reuse=True),
    Case("gpt_oss_20b/eagle3_reuse", "gpt_oss", "gpt_oss_20b", "eagle3", block_reuse=True),
    Case("synthetic/sinks_reuse", "synthetic", "sinks", block_reuse=True),
    # 4 requests of at most ceil(151/32) = 5 pages fit the 20 pages; the watermark 0.5
    # refuses an admission or a resume while more than 10 pages are taken.
    Case(
        "llama3_1_8b/watermark_admission",
        "llama3",
        "llama3_1_8b",
        requests=10,
        max_seq_len=160,
        prompt=(60, 120),
        decode=(10, 30),
        max_util_for_resume=0.5,
        engine_quota=WATERMARK_QUOTA,
    ),
    Case(
        "llama3_1_8b/watermark_resume",
        "llama3",
        "llama3_1_8b",
        requests=8,
        batch=3,
        max_seq_len=160,
        prompt=(60, 120),
        decode=(10, 30),
        suspend_every=3,
        max_util_for_resume=0.5,
        engine_quota=WATERMARK_QUOTA,
    ),
    # The host tier (issue 31): a suspended request's pages are evictable, so they leave the
    # watermark's count, and move to the 16 host rows (oldest first) when the 20 GPU pages of
    # 4 MiB run out; a resume brings them back. A request is suspended every iteration and
    # resumed as soon as the watermark allows: 4 live requests of up to ceil(192/32) = 6
    # pages and the parked pages outgrow 20 pages. On one tier the shim refuses resumes the
    # engine allows here (the parked pages counted as taken).
    *(
        Case(
            f"llama3_1_8b/{name}",
            "llama3",
            "llama3_1_8b",
            requests=12,
            max_seq_len=192,
            prompt=(90, 140),
            decode=(10, 60),
            suspend_every=1,
            max_util_for_resume=util,
            engine_quota=WATERMARK_QUOTA,
            host_quota=HOST_QUOTA,
        )
        for name, util in (("suspend_host", 0.7), ("watermark_resume_host", 0.5))
    ),
    Case(
        "llama3_1_8b/watermark_admission_host",
        "llama3",
        "llama3_1_8b",
        requests=10,
        max_seq_len=160,
        prompt=(60, 120),
        decode=(10, 30),
        suspend_every=2,
        max_util_for_resume=0.5,
        engine_quota=WATERMARK_QUOTA,
        host_quota=HOST_QUOTA,
    ),
    # gemma3_1b (full and 512-token window pool groups) on 48 MiB, the same pattern.
    Case(
        "gemma3_1b/suspend_host",
        "gemma3",
        "gemma3_1b",
        requests=10,
        prompt=(256, 512),
        decode=(20, 200),
        suspend_every=1,
        max_util_for_resume=0.5,
        engine_quota={"target": 48 << 20},
        host_quota=HOST_QUOTA,
    ),
    # Finding 6: llama3_1_8b eagle3 (H = 2K = 6), 4 requests to 2,048 tokens each peak at
    # 2,047 + 6 = 2,053 tokens = ceil(2053/32) = 65 pages: the engine needs 4 x 65 = 260.
    Case(
        "llama3_1_8b/eagle3_quota_for_requests",
        "llama3",
        "llama3_1_8b",
        "eagle3",
        requests=4,
        max_seq_len=2048,
        prompt=(1800, 2000),
        decode=(300, 400),
        quota_for_requests=True,
    ),
    # Issue 20: gemma3_1b, 4 requests to 2,048 tokens (tpb 64, H = 1, N = 256). kvgen plans
    # 4 x ceil(2047/64) = 128 full pages of 64 x 4 layers x 2 x 256 x 2 B = 262,144 B and
    # 4 x pages(512, 1) + ceil(256/64) = 4 x 9 + 4 = 40 window pages of 64 x 22 layers x 1,024 B
    # = 1,441,792 B: 91,226,112 B. The engine rounds that to 44 grains of 2 MiB and gives the
    # full group (ratio 262,144 / 1,703,936) round(44 x 0.1538) = 7 grains = 56 pages, the
    # window group 37 grains = 53 pages: on kvgen's own pool bytes it runs out of full pages.
    Case(
        "gemma3_1b/serving_kvgen_pools",
        "gemma3",
        "gemma3_1b",
        requests=4,
        max_seq_len=2048,
        prompt=(1800, 2000),
        decode=(300, 400),
        kvgen_pools_quota=True,
        engine_runs_out=True,
    ),
    # The same serving run on quota_for_requests ("trtllm-v2": the engine's least quota for
    # kvgen's pages, 101 grains of 2 MiB): every request reaches 2,048 tokens.
    *(
        Case(
            f"{model}/{'' if profile == 'none' else profile + '_'}serving_quota_for_requests",
            family,
            model,
            profile,
            requests=4,
            max_seq_len=seq,
            prompt=(seq - 248, seq - 48),
            decode=(300, 400),
            quota_for_requests=True,
        )
        for family, model, profile, seq in (
            ("gemma3", "gemma3_1b", "none", 2048),
            # gpt_oss_20b: 12 full and 12 window (128) layers of equal slots (786,432 B), one
            # engine pool group of 4 x 32 + 4 x 3 + 4 = 144 pages: kvgen's pool bytes.
            ("gpt_oss", "gpt_oss_20b", "none", 2048),
            ("gpt_oss", "gpt_oss_20b", "eagle3", 2048),
            ("gemma3", "gemma3_27b", "none", 2048),
            # command_r7b: 3 window (4096) layers to 1 full: two groups, past the window.
            ("cohere2", "command_r7b", "none", 6144),
        )
    ),
)

# Quotas offered to the engine in every case besides the shim's own pools (bytes per manager,
# the same for each): one byte past 3 MiB (2 MiB grain), 2.5 GiB + 12,345 B (4 MiB grain) and
# 17 GiB + 7 B (32 MiB grain: 2 MiB << min(4, int(log2(17)))).
PROBE_QUOTAS = ((3 << 20) + 1, (5 << 29) + 12345, (17 << 30) + 7)


def compact_managers(managers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The managers' layers as distinct dimension sets and one index per layer (the golden's
    form: a 62-layer model has two kinds of layer)."""
    out = []
    for manager in managers:
        kinds: list[dict[str, Any]] = []
        order = []
        for layer in manager["layers"]:
            dims = {k: v for k, v in layer.items() if k != "id"}
            if dims not in kinds:
                kinds.append(dims)
            order.append(str(kinds.index(dims)))
        compact = {k: v for k, v in manager.items() if k != "layers"}
        compact.update(layer_kinds=kinds, layers=",".join(order))
        out.append(compact)
    return out
