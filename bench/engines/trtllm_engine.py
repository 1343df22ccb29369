"""Drive TensorRT-LLM's own KV cache manager V2 through the workloads of ``tests/trtllm_traces.py``.

Runs in a subprocess of ``trtllm_runner.py`` with ``PYTHONPATH`` = the CPU stand-ins
(``trtllm_stubs/``), the engine's source folder (holding ``kv_cache_manager_v2/``) and the
repository root (for ``tests.trtllm_traces``, standard library only); it imports no kvgen
module. Input (stdin): JSON ``{"cases": [...]}``, each case the layers of every cache manager
as spec dimensions; output (stdout): JSON, per case and manager, the engine's life cycles and
pool groups, a row per step and the outcome of every admission and resume.

The engine is configured only through its own classes (``KVCacheManagerConfig``,
``AttentionLayerConfig``, ``BufferConfig``, ``GpuCacheTierConfig``): a layer's K and V buffers
are ``tokens_per_block * kv_heads * head_dim * dtype_bytes`` each (MLA: one latent buffer of
``tokens_per_block * latent * dtype_bytes``), computed here from the dimensions.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

from kv_cache_manager_v2 import (
    AttentionLayerConfig,
    BufferConfig,
    GpuCacheTierConfig,
    HostCacheTierConfig,
    KVCacheManager,
    KVCacheManagerConfig,
)
from kv_cache_manager_v2._common import BAD_PAGE_INDEX, GPU_LEVEL, CacheLevel
from kv_cache_manager_v2._utils import CachedCudaStream

from tests.trtllm_traces import TraceParams, continuous_batching, run


def engine_config(
    case: dict[str, Any], manager: dict[str, Any], quota: int
) -> KVCacheManagerConfig:
    tpb = case["tokens_per_block"]
    layers = []
    for layer in manager["layers"]:
        if layer["latent"]:
            buffers = [
                BufferConfig(role="latent", size=tpb * layer["latent"] * layer["dtype_bytes"])
            ]
        else:
            size = tpb * layer["kv_heads"] * layer["head_dim"] * layer["dtype_bytes"]
            buffers = [BufferConfig(role="key", size=size), BufferConfig(role="value", size=size)]
        layers.append(
            AttentionLayerConfig(
                layer_id=layer["id"],
                buffers=buffers,
                sliding_window_size=layer["window"],
                num_sink_tokens=layer["sinks"] if layer["window"] is not None else None,
            )
        )
    tiers: list[Any] = [GpuCacheTierConfig(quota=quota)]
    host = case.get("host_quota")
    if host:  # the engine's host tier: a second cache level after the GPU
        tiers.append(HostCacheTierConfig(quota=host[manager["name"]]))
    return KVCacheManagerConfig(
        tokens_per_block=tpb,
        vocab_size=1 << 20,
        cache_tiers=tiers,
        layers=layers,
        max_util_for_resume=case["max_util_for_resume"],
    )


def describe(manager: KVCacheManager) -> dict[str, Any]:
    """Life cycles (window, sink blocks), their pool groups, and the pools built."""
    storage = manager._storage
    out = {
        "life_cycles": [[lc.window_size, lc.num_sink_blocks] for lc in manager._life_cycles],
        "pool_group_of": list(storage._life_cycle_grouping),
        "slot_bytes": [list(storage.slot_size(pg)) for pg in range(storage.num_pool_groups)],
        "slots": [storage.num_slots(pg) for pg in range(storage.num_pool_groups)],
        "quota": manager.get_quota(GPU_LEVEL),
    }
    if storage.num_cache_levels > 1:  # the host tier's slots per pool group
        host = CacheLevel(1)
        out["host_slots"] = [storage.num_slots(pg, host) for pg in range(storage.num_pool_groups)]
    return out


class Driver:
    """Applies the workload's operations to one KVCacheManager per kvgen cache manager."""

    def __init__(self, case: dict[str, Any]) -> None:
        self.case = case
        self.params = TraceParams.from_dict(case["params"])
        self.reuse = case["block_reuse"]
        self.managers = {
            m["name"]: KVCacheManager(engine_config(case, m, m["quota"])) for m in case["managers"]
        }
        self.stream = CachedCudaStream()
        self.caches: dict[int, dict[str, Any]] = {}
        self.state: dict[int, list[int]] = {}  # rid -> [history, capacity]
        self.suspended: set[int] = set()
        self.rows: list[list[int]] = []
        self.outcomes: list[bool] = []  # of every admission and resume, as they happen

    def tokens(self, rid: int, start: int, end: int) -> list[int]:
        return [rid * 1_000_000 + i for i in range(start, end)]  # unique: nothing matches

    def execute(self, op: tuple[Any, ...]) -> bool | None:
        kind = op[0]
        if kind in ("add", "resume"):
            ok = self.add(op[1]) if kind == "add" else self.resume(op[1])
            self.outcomes.append(ok)
            return ok
        if kind == "fwd":
            self.forward(op[1], op[2])
            return None
        if kind == "suspend":
            for kv in self.caches[op[1]].values():
                kv.suspend()
            self.suspended.add(op[1])
        elif kind == "free":
            for kv in self.caches.pop(op[1]).values():
                kv.close()
            del self.state[op[1]]
        self.record()
        return None

    def add(self, rid: int) -> bool:
        caches = {}
        for name, manager in self.managers.items():
            kv = manager.create_kv_cache(id=rid)  # created suspended: must pass resume()
            kv.cuda_stream = self.stream.handle  # so that a refused cache can be closed
            caches[name] = kv
            if not kv.resume():
                for other in caches.values():
                    other.close()
                self.record()
                return False
            if not self.reuse:
                kv.stop_committing()
        self.caches[rid] = caches
        self.state[rid] = [0, 0]
        self.record()
        return True

    def resume(self, rid: int) -> bool:
        resumed = []
        for kv in self.caches[rid].values():
            if not kv.resume(self.stream.handle):
                for other in resumed:
                    other.suspend()
                self.record()
                return False
            resumed.append(kv)
        self.suspended.discard(rid)
        self.record()
        return True

    def resize(self, rid: int, capacity: int | None, history: int | None) -> None:
        for name, kv in self.caches[rid].items():
            if not kv.resize(capacity, history):
                raise RuntimeError(f"{name}: out of pages resizing request {rid} to {capacity}")

    def forward(self, chunks: dict[int, int], accepts: dict[int, int]) -> None:
        p = self.params
        for rid, n in chunks.items():
            history = self.state[rid][0]
            self.state[rid][1] = history + n + p.extra_tokens
            self.resize(rid, self.state[rid][1], history)
        for rid in accepts:
            self.state[rid][1] += p.step_tokens
            self.resize(rid, self.state[rid][1], None)
        self.record()
        for rid, n in chunks.items():
            self.advance(rid, self.state[rid][0] + n, self.state[rid][1])
        for rid, a in accepts.items():
            history = self.state[rid][0] + a + 1
            self.advance(rid, history, history + p.extra_tokens)
        self.record()

    def advance(self, rid: int, history: int, capacity: int) -> None:
        old = self.state[rid][0]
        if self.reuse:
            for kv in self.caches[rid].values():
                kv.commit(self.tokens(rid, old, history))
        self.resize(rid, capacity, history)
        self.state[rid] = [history, capacity]

    def record(self) -> None:
        row = [sum(s[1] for r, s in self.state.items() if r not in self.suspended)]
        for manager in self.managers.values():
            lcs = manager._life_cycles.size
            held = [0] * lcs
            for rid, caches in self.caches.items():
                kv = caches[next(n for n, m in self.managers.items() if m is manager)]
                if rid in self.suspended:
                    continue
                for lc in range(lcs):
                    held[lc] += sum(1 for i in kv.get_page_indices(lc) if i != BAD_PAGE_INDEX)
            stats = manager._storage.get_statistics()
            row += held + [s.total - s.free for s in stats] + [s.evictable for s in stats]
        self.rows.append(row)

    def close(self) -> None:
        for caches in self.caches.values():
            for kv in caches.values():
                kv.close()
        self.caches.clear()
        for manager in self.managers.values():
            manager.clear_reusable_blocks()


def single_request_peaks(case: dict[str, Any]) -> list[list[int]]:
    """[life cycle, window, sink blocks, most pages] of every sliding life cycle of the target:
    one request whose capacity runs H tokens ahead of its history, the history passing every
    page alignment of the stale boundary (docs/cost-model.md §3)."""
    p = TraceParams.from_dict(case["params"])
    head = p.extra_tokens + p.step_tokens
    target = next(m for m in case["managers"] if m["name"] == "target")
    manager = KVCacheManager(engine_config(case, target, target["quota"]))
    tpb = case["tokens_per_block"]
    cycles = [
        (lc, w, sb, sb * tpb + w - 1)
        for lc, (w, sb) in enumerate(
            (c.window_size, c.num_sink_blocks) for c in manager._life_cycles
        )
        if w is not None
    ]
    if not cycles:
        return []
    stream = CachedCudaStream()
    kv = manager.create_kv_cache()
    kv.resume(stream.handle)
    kv.stop_committing()
    peaks = {lc: 0 for lc, _w, _sb, _h1 in cycles}
    for history in range(max(h1 for *_r, h1 in cycles) + tpb):
        if not kv.resize(history + head, history):
            raise RuntimeError(f"out of pages at history {history}")
        for lc, _w, _sb, h1 in cycles:
            if h1 - 1 <= history < h1 + tpb:
                held = sum(1 for i in kv.get_page_indices(lc) if i != BAD_PAGE_INDEX)
                peaks[lc] = max(peaks[lc], held)
    kv.close()
    return [[lc, w, sb, peaks[lc]] for lc, w, sb, _h1 in cycles]


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"id": case["id"]}
    driver = Driver(case)
    try:
        out["managers"] = {name: describe(m) for name, m in driver.managers.items()}
        run(continuous_batching(driver.params), driver.execute)
    except Exception as exc:  # a failure is a finding: recorded, the other cases still run
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["traceback"] = traceback.format_exc(limit=4)
    out["rows"] = driver.rows
    out["outcomes"] = driver.outcomes
    driver.close()
    out["single_request_peaks"] = single_request_peaks(case)
    out["quota_pools"] = []
    for probe in case.get("quota_probes", []):
        built = {}
        for m in case["managers"]:
            try:
                manager = KVCacheManager(engine_config(case, m, probe[m["name"]]))
            except AssertionError:  # the engine refuses a quota its pools' least grains overrun
                frame = traceback.extract_tb(sys.exc_info()[2])[-1]
                built[m["name"]] = {"refused": f"{frame.name}: {frame.line}"}
                continue
            built[m["name"]] = describe(manager)
        out["quota_pools"].append(built)
    return out


def closed_loop(config: dict[str, Any]) -> dict[str, Any]:
    """The pool groups the engine builds from an emitted ``max_gpu_total_bytes`` (the GPU
    tier's quota) for one manager's layers; an assertion of the engine is recorded."""
    manager = {"name": "target", "layers": config["layers"]}
    try:
        built = KVCacheManager(engine_config(config, manager, config["quota"]))
    except AssertionError:
        frame = traceback.extract_tb(sys.exc_info()[2])[-1]
        return {"refused": f"{frame.name}: {frame.line}"}
    return describe(built)


def main() -> int:
    data = json.load(sys.stdin)
    results = [run_case(case) for case in data.get("cases", [])]
    loops = [closed_loop(config) for config in data.get("closed_loop", [])]
    json.dump({"results": results, "closed_loop": loops}, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
