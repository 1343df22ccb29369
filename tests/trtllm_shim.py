"""The shim side of a TensorRT-LLM V2 comparison: run a workload on a shim, row per step.

A row has the columns the engine driver records (``bench/engines/trtllm_engine.py``):
capacity tokens of the live requests, then per cache manager the pages live requests hold per
engine life cycle, the slots occupied per engine pool group, and the evictable slots per pool
group. Shim pools map onto engine life cycles by (window, sink blocks), onto pool groups
through the engine's own grouping (recorded in the golden), which the shim now follows: a
group's life cycles share one shim pool.
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

from tests.trtllm_traces import Trace, replayed


class Divergence(Exception):
    """The engine admitted or resumed a request the shim refuses: the workloads part here."""


class ShimDriver:
    def __init__(self, shim: Any, engine: dict[str, Any]) -> None:
        self.shim = shim
        self.rows: list[list[int]] = []
        self.mismatches: list[tuple[int, bool, bool]] = []
        self.outcome_index = 0
        tpb = shim.tokens_per_block
        self.columns = []  # per manager: (pool index per engine lc, pools per engine pg)
        for name, described in engine["managers"].items():
            manager = shim.managers[name]
            by_cycle = {}
            for cycle in manager.cycles:
                index = shim._paged_index.get((name, cycle.name))
                if index is not None:
                    by_cycle[(cycle.window, -(-cycle.sink_tokens // tpb))] = index
            lcs = [by_cycle[(w, sb)] for w, sb in described["life_cycles"]]
            groups: list[list[int]] = [[] for _ in described["slots"]]
            for lc, group in enumerate(described["pool_group_of"]):
                groups[group].append(lcs[lc])
            self.columns.append((lcs, groups))

    def record(self) -> None:
        shim = self.shim
        live = [r for r in shim._requests.values() if not r.suspended]
        row = [shim.capacity_tokens]
        for lcs, groups in self.columns:
            row += [sum(1 for r in live for p in r.tables[i] if p >= 0) for i in lcs]
            row += [sum(p.used for p in pools(shim, group)) for group in groups]
            row += [sum(p.evictable for p in pools(shim, group)) for group in groups]
        self.rows.append(row)

    def execute(self, op: tuple[Any, ...], recorded: bool | None) -> bool | None:
        shim = self.shim
        refused = refusals(shim)
        kind = op[0]
        if kind == "fwd":
            chunks, accepts = op[1], op[2]
            for rid, n in chunks.items():
                shim.begin_context(rid, n)
            if accepts:
                shim.begin_generation(list(accepts))
            self.record()
            for rid in chunks:
                shim.end_context(rid)
            if accepts:
                shim.end_generation(list(accepts), list(accepts.values()))
            self.record()
            return None
        if kind in ("add", "resume"):
            try:
                shim.add_request(op[1]) if kind == "add" else shim.resume(op[1])
                ok = True
            except refused:
                ok = False
            if ok and not recorded:  # follow the engine: undo what it refused
                shim.free(op[1]) if kind == "add" else shim.suspend(op[1])
            if ok != recorded:
                self.mismatches.append((self.outcome_index, bool(recorded), ok))
            self.outcome_index += 1
            if recorded and not ok:
                raise Divergence(f"{kind} {op[1]}: the engine accepts, the shim refuses")
            self.record()
            return ok
        if kind == "suspend":
            shim.suspend(op[1])
        elif kind == "free":
            shim.free(op[1])
        self.record()
        return None


def refusals(shim: Any) -> tuple[type[BaseException], ...]:
    module = sys.modules[type(shim).__module__]
    return (module.OutOfPagesError, module.ResumeRefusedError)


def pools(shim: Any, group: list[int]) -> list[Any]:
    """The shim's pools behind one engine pool group, each once: one shared pool where the
    shim follows the engine's grouping. Their evictable pages: the block-reuse cache and,
    with a host tier, the pages of suspended requests still in the pool."""
    return list({id(shim._paged[i].pool): shim._paged[i].pool for i in group}.values())


class Replay(NamedTuple):
    rows: list[list[int]]
    mismatches: list[tuple[int, bool, bool]]  # (add/resume index, engine's, shim's)
    divergence: str | None  # where the shim refused what the engine accepted


def replay(shim: Any, engine: dict[str, Any], trace: Trace) -> Replay:
    """Run ``trace`` on ``shim`` with the engine's outcomes of every admission and resume."""
    driver = ShimDriver(shim, engine)
    out_of_pages = sys.modules[type(shim).__module__].OutOfPagesError
    try:
        mismatches = replayed(trace, engine["outcomes"], driver.execute)
    except Divergence as exc:
        return Replay(driver.rows, driver.mismatches, str(exc))
    except out_of_pages as exc:  # the engine records how far it got: compared by the caller
        return Replay(driver.rows, driver.mismatches, f"out of pages: {exc}")
    return Replay(driver.rows, mismatches, None)
