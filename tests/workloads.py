"""The workload driver of the diff suite: generated allocator shims against generated sizing.

``Harness`` wraps one ``KVCacheShim`` and checks, after every operation and for every cache
manager, the runtime bytes in use against the static cost of the generated sizing module at
T(t) (full-attention capacity tokens of the live requests):

- ``"exact"``: ``bytes_in_use <= slope * T + intercept`` always;
- ``"trtllm-v2"``: any excess is at most the documented exact terms
  (``full_page_rounding + context_page_rounding``), and the term that explains it is named.

The scenarios below are the adversarial workloads: every page alignment of history, full
batches, a maximal context chunk beside B-1 generating requests, every acceptance pattern,
suspend/resume, and random mixes. Nothing here computes a cost itself.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from kvgen._generate.render import SpecInput, render
from kvgen._spec.loader import load_family

from tests.sizing_support import import_generated

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_SPECS = ROOT / "tests" / "fixtures" / "specs"
SEMANTICS = ("trtllm-v2", "exact")
V2_EXCESS_TERMS = ("full_page_rounding", "context_page_rounding")
SIZING_KEYS = (
    "max_batch_size",
    "max_num_tokens",
    "max_seq_len",
    "tp_size",
    "pp_size",
    "pp_rank",
    "scratch_reuse",
    "block_reuse",
    "max_util_for_resume",
    "overlap_slack",
    "dcp_size",
    "encoder_tokens",
)


# --------------------------------------------------------------------------- rendering


@dataclass
class Rendered:
    """One family's generated modules, imported from wherever they were written."""

    name: str
    family: Any  # kvgen._spec.models.Family
    sizing: ModuleType
    allocator: ModuleType
    source: str


def render_family(family, raw: bytes, out_dir: Path, source: str) -> Rendered:
    """Render one family into ``out_dir/<family>/`` and import its sizing and allocator."""
    files = render([SpecInput(source, raw, family)])
    for rel, text in files.items():
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    base = out_dir / family.family
    tag = f"kvgen_rendered_{out_dir.name}_{family.family}"
    return Rendered(
        family.family,
        family,
        import_generated(base / "sizing.py", tag),
        import_generated(base / "allocator.py", tag),
        source,
    )


def with_tokens_per_block(family, tpb: int):
    """A variant of ``family`` with another tokens_per_block (and a suffixed family name)."""
    return family.model_copy(update={"tokens_per_block": tpb, "family": f"{family.family}_t{tpb}"})


def render_fixture_specs(out_dir: Path, tpbs: Iterable[int] = (16, 32, 64)) -> list[Rendered]:
    out = []
    for path in sorted(FIXTURE_SPECS.glob("*.yaml")):
        family = load_family(path)
        for tpb in tpbs:
            variant = with_tokens_per_block(family, tpb)
            out.append(render_family(variant, path.read_bytes(), out_dir, path.name))
    return out


def shipped_families(out_dir: Path) -> list[Rendered]:
    """Every family with a generated/<family>/sizing.py, rendered afresh from its spec
    (schema/families/<family>.yaml) so that the allocator matches the current template even
    before ``kvgen generate`` has been rerun; ``generate --check`` guards the committed copy."""
    out = []
    for sizing in sorted((ROOT / "generated").glob("*/sizing.py")):
        spec = ROOT / "schema" / "families" / f"{sizing.parent.name}.yaml"
        if spec.exists():
            source = f"schema/families/{spec.name}"
            out.append(render_family(load_family(spec), spec.read_bytes(), out_dir, source))
    return out


# --------------------------------------------------------------------------- the diff


class DiffError(AssertionError):
    """Runtime bytes in use exceeded what the static cost allows."""


@dataclass
class ManagerStats:
    peak: int = 0
    tokens_at_peak: int = 0
    static_at_peak: dict[str, int] = field(default_factory=dict)
    min_slack: dict[str, int] = field(default_factory=dict)
    max_v2_excess: int = 0
    explained_by: set[str] = field(default_factory=set)
    checks: int = 0


class Harness:
    """A shim plus the static terms it is diffed against, checked after every operation."""

    def __init__(self, shim, sizing: ModuleType, params: dict[str, Any]):
        self.shim = shim
        self.params = params
        sizing_params = {k: params[k] for k in SIZING_KEYS if k in params}
        self.terms = {
            sem: sizing.cost_terms(
                shim.model, speculative=shim.speculative, semantics=sem, **sizing_params
            )
            for sem in SEMANTICS
        }
        self.stats = {name: ManagerStats() for name in shim.managers}
        self.cost_override: dict[str, Callable[[str, int], int]] = {}

    # A static cost function can be swapped in (drift tests): (manager, T) -> bytes.
    def static(self, semantics: str, manager: str, tokens: int) -> int:
        override = self.cost_override.get(semantics)
        if override is not None:
            return override(manager, tokens)
        t = self.terms[semantics][manager]
        return t["slope"] * tokens + t["intercept"]

    def check(self, where: str = "") -> None:
        shim = self.shim
        tokens = shim.capacity_tokens
        for manager, used in shim.bytes_in_use().items():
            stats = self.stats[manager]
            stats.checks += 1
            exact = self.static("exact", manager, tokens)
            v2 = self.static("trtllm-v2", manager, tokens)
            for sem, static in (("exact", exact), ("trtllm-v2", v2)):
                slack = static - used
                if sem not in stats.min_slack or slack < stats.min_slack[sem]:
                    stats.min_slack[sem] = slack
            if used > stats.peak:
                stats.peak, stats.tokens_at_peak = used, tokens
                stats.static_at_peak = {"exact": exact, "trtllm-v2": v2}
            if used > exact:
                raise DiffError(self._explain("exact", manager, used, exact, tokens, where))
            excess = used - v2
            if excess > 0:
                terms = self.terms["exact"][manager]
                allowed = sum(terms.get(name, 0) for name in V2_EXCESS_TERMS)
                if excess > allowed:
                    raise DiffError(self._explain("trtllm-v2", manager, used, v2, tokens, where))
                stats.max_v2_excess = max(stats.max_v2_excess, excess)
                stats.explained_by.update(self.explain_excess(manager, tokens, excess))

    def explain_excess(self, manager: str, tokens: int, excess: int) -> list[str]:
        """Which documented exact term covers a trtllm-v2 excess: the full pool's bytes beyond
        slope*T are whole-page rounding; the rest is context page rounding."""
        pools = self.shim.pool_bytes_in_use(manager)
        slope = self.terms["trtllm-v2"][manager]["slope"]
        full = pools.get("full", 0) - slope * tokens
        names = []
        if full > 0:
            names.append("full_page_rounding")
        if excess - max(full, 0) > 0:
            names.append("context_page_rounding")
        return names

    def _explain(self, sem, manager, used, static, tokens, where) -> str:
        terms = self.terms[sem][manager]
        pools = self.shim.pool_bytes_in_use(manager)
        return (
            f"{where}: {manager} uses {used} bytes > static {sem} cost {static} at T={tokens} "
            f"(excess {used - static}); pools in use {pools}; static terms {terms}"
        )

    # ------------------------------------------------------------------ checked operations

    def add(self, rid) -> None:
        self.shim.add_request(rid)
        self.check(f"add {rid}")

    def free(self, rid) -> None:
        self.shim.free(rid)
        self.check(f"free {rid}")

    def forward(self, chunks: dict, accepts: dict) -> None:
        """One iteration: begin every chunk and step, check at the peak, then end them."""
        shim = self.shim
        for rid, tokens in chunks.items():
            shim.begin_context(rid, tokens)
        if accepts:
            shim.begin_generation(list(accepts))
        self.check(f"forward chunks={chunks} steps={len(accepts)}")
        for rid in chunks:
            shim.end_context(rid)
        if accepts:
            shim.end_generation(list(accepts), list(accepts.values()))
        self.check("after forward")


# --------------------------------------------------------------------------- scenarios


def _windows(shim) -> list[tuple[int, int]]:
    """Distinct (window, sink tokens) of every SWA life cycle the shim built."""
    found = set()
    for manager in shim.managers.values():
        for cycle in manager.cycles:
            if cycle.kind == "swa":
                found.add((cycle.window, cycle.sink_tokens))
    return sorted(found)


def _zone_starts(shim) -> list[int]:
    """Histories from which every alignment of each SWA life cycle's stale boundary follows."""
    tpb = shim.tokens_per_block
    starts = {1}
    for window, sinks in _windows(shim):
        zone = -(-sinks // tpb) * tpb + window - 1
        starts.add(max(1, zone - tpb - shim.headroom))
    # Chunked attention peaks at each chunk's last history q*C + C - 1, and the stale offset
    # q*C mod tpb repeats within tpb chunks: approach every chunk end of the first tpb chunks.
    for chunk in _chunks(shim):
        for q in range(tpb):
            starts.add(max(1, q * chunk + chunk - 1 - tpb - shim.headroom))
    return sorted(s for s in starts if s < shim.max_seq_len)


def _chunks(shim) -> list[int]:
    """Distinct chunks of every chunked life cycle the shim built."""
    return sorted(
        {
            cycle.chunk
            for manager in shim.managers.values()
            for cycle in manager.cycles
            if getattr(cycle, "chunk", 0)
        }
    )


def _room(shim, rid) -> int:
    history, _capacity = shim.request_state(rid)
    return shim.max_seq_len - history


def prefill(h: Harness, lengths: dict) -> None:
    """Bring each request to its prompt length in context chunks sharing max_num_tokens."""
    shim = h.shim
    left = {rid: n for rid, n in lengths.items() if n > 0}
    while left:
        budget, chunks = shim.max_num_tokens, {}
        for rid, n in left.items():
            if budget <= 0:
                break
            take = min(n, budget)
            chunks[rid] = take
            budget -= take
        h.forward(chunks, {})
        for rid, take in chunks.items():
            left[rid] -= take
            if not left[rid]:
                del left[rid]


def generate(h: Harness, rids: list, steps: int, accept: Callable[[Any, int], int]) -> None:
    """``steps`` generation iterations; ``accept(rid, step)`` draft tokens accepted, clamped
    to the draft slots and to max_seq_len. Requests at max_seq_len drop out."""
    shim = h.shim
    for step in range(steps):
        accepts = {}
        for rid in rids:
            room = _room(shim, rid)
            if room >= 1:
                wanted = accept(rid, step) % (shim.draft_slots + 1)
                accepts[rid] = min(wanted, room - 1)
        if not accepts:
            return
        h.forward({}, accepts)


def alignment_sweep(h: Harness, accept: Callable[[Any, int], int], rid_base: int = 0) -> None:
    """Requests whose histories pass every page alignment through each SWA window's stale
    boundary (and every full-page alignment), a full batch at a time."""
    shim = h.shim
    # A full-attention page spans tpb tokens, tpb * dcp_size under DCP (docs/cost-model.md §9).
    tpb, batch = shim.page_span, shim.max_batch_size
    steps = 2 * tpb + 2 * shim.headroom
    rid = rid_base
    for start in _zone_starts(shim):
        offsets = list(range(tpb))
        while offsets:
            group, offsets = offsets[:batch], offsets[batch:]
            rids = []
            for offset in group:
                length = min(start + offset, shim.max_seq_len)
                h.add(rid)
                rids.append((rid, length))
                rid += 1
            prefill(h, dict(rids))
            generate(h, [r for r, _n in rids], steps, accept)
            for r, _n in rids:
                h.free(r)


def aligned_batch_sweep(h: Harness, accept: Callable[[Any, int], int] = lambda r, s: 0) -> None:
    """A full batch at one alignment, for every alignment: all B requests reach their peak
    pages in the same step (the worst case the static intercept B * per_request covers)."""
    shim = h.shim
    tpb, batch = shim.page_span, shim.max_batch_size  # tpb * dcp_size under DCP (§9)
    steps = tpb + 2 * shim.headroom
    rid = 50_000
    for start in _zone_starts(shim):
        for offset in range(tpb):
            length = min(start + tpb + offset, shim.max_seq_len)
            rids = list(range(rid, rid + batch))
            rid += batch
            for r in rids:
                h.add(r)
            prefill(h, dict.fromkeys(rids, length))
            generate(h, rids, steps, accept)
            for r in rids:
                h.free(r)


def max_chunk_beside_generation(h: Harness) -> None:
    """B-1 requests generating while one request pushes maximal context chunks, starting
    from fresh and from mid-prompt positions at several alignments past each window."""
    shim = h.shim
    batch, chunk, tpb = shim.max_batch_size, shim.max_num_tokens, shim.tokens_per_block
    slots = shim.draft_slots
    generating = list(range(1000, 1000 + batch - 1))
    starts = _zone_starts(shim)
    for rid in generating:  # admitted together, before any page is taken (the watermark)
        h.add(rid)
    for i, rid in enumerate(generating):
        prefill(h, {rid: min(starts[i % len(starts)] + i, shim.max_seq_len - 1)})
    big = 900
    positions = sorted({0, *(s + tpb + o for s in starts for o in (0, 1, tpb // 2, tpb - 1))})
    errors = shim_errors(shim)
    for position in positions:
        if position >= shim.max_seq_len:
            continue
        try:
            h.add(big)
        except errors.ResumeRefusedError:  # above the watermark the engine admits no request
            continue
        prefill(h, {big: position})
        while _room(shim, big) > 0:
            accepts = {r: (r + 1) % (slots + 1) for r in generating if _room(shim, r) > 0}
            accepts = {r: min(a, _room(shim, r) - 1) for r, a in accepts.items()}
            h.forward({big: min(chunk, _room(shim, big))}, accepts)
        h.free(big)
        big += 1
    for rid in generating:
        h.free(rid)


def full_batch_chunks(h: Harness) -> None:
    """B requests in context at once, the chunk budget split unevenly (misaligned chunks)."""
    shim = h.shim
    batch, chunk, tpb = shim.max_batch_size, shim.max_num_tokens, shim.tokens_per_block
    rids = list(range(2000, 2000 + batch))
    for rid in rids:
        h.add(rid)
    for _ in range(4):
        share = max(1, chunk // batch)
        chunks = {}
        budget = chunk
        for i, rid in enumerate(rids):
            take = min(max(1, share - (i * 7) % tpb), budget, _room(shim, rid))
            if take > 0:
                chunks[rid] = take
                budget -= take
        if not chunks:
            break
        h.forward(chunks, {})
    generate(h, rids, shim.tokens_per_block, lambda rid, step: rid + step)
    for rid in rids:
        h.free(rid)


def acceptance_patterns(h: Harness) -> None:
    """Every constant acceptance 0..all drafts, and alternating none/all."""
    slots = h.shim.draft_slots
    patterns = [lambda rid, step, a=a: a for a in range(slots + 1)]
    patterns.append(lambda rid, step: slots if step % 2 else 0)
    for i, pattern in enumerate(patterns):
        alignment_sweep(h, pattern, rid_base=10_000 * (i + 1))


def suspend_resume(h: Harness, rng: random.Random) -> None:
    """Suspend and resume requests mid-generation; a refused resume changes nothing."""
    shim = h.shim
    rids = list(range(3000, 3000 + shim.max_batch_size))
    for rid in rids:
        h.add(rid)
    prefill(h, {rid: 1 + rng.randrange(min(300, shim.max_seq_len - 1)) for rid in rids})
    errors = shim_errors(shim)
    for _ in range(20):
        if not rids:
            break
        rid = rng.choice(rids)
        shim.suspend(rid)
        h.check("suspend")
        generate(h, [r for r in rids if r != rid], 3, lambda r, s: r + s)
        snapshot = snapshot_state(shim)
        try:
            shim.resume(rid)
        except (errors.ResumeRefusedError, errors.OutOfPagesError):
            assert snapshot_state(shim) == snapshot
            h.free(rid)
            try:
                h.add(rid)
            except errors.ResumeRefusedError:  # the watermark holds admissions too
                rids.remove(rid)
                continue
            prefill(h, {rid: 1})
        h.check("resume")
    for rid in rids:
        h.free(rid)


def random_workload(h: Harness, rng: random.Random, operations: int = 200) -> None:
    """Random admissions, chunks, steps with random acceptance, suspends and frees."""
    shim = h.shim
    errors = shim_errors(shim)
    live: list = []
    suspended: list = []
    next_id = 5000
    for _ in range(operations):
        op = rng.random()
        try:
            # Suspended requests keep their pages (TensorRT-LLM V2), so at most B requests are
            # admitted at once; an admission above the watermark is refused, as a resume is.
            if op < 0.2 and len(live) + len(suspended) < shim.max_batch_size:
                try:
                    h.add(next_id)
                    live.append(next_id)
                except errors.ResumeRefusedError:
                    pass
                next_id += 1
            elif op < 0.45 and live:
                budget, chunks = shim.max_num_tokens, {}
                for rid in rng.sample(live, rng.randint(1, len(live))):
                    take = min(rng.randint(1, budget), _room(shim, rid)) if budget else 0
                    if take > 0:
                        chunks[rid] = take
                        budget -= take
                steps = {
                    rid: rng.randint(0, shim.draft_slots)
                    for rid in live
                    if rid not in chunks and shim.request_state(rid)[0] >= 1
                }
                steps = {r: min(a, _room(shim, r) - 1) for r, a in steps.items() if _room(shim, r)}
                h.forward(chunks, steps)
            elif op < 0.85 and live:
                ready = [r for r in live if shim.request_state(r)[0] >= 1 and _room(shim, r)]
                if ready:
                    steps = {
                        r: min(rng.randint(0, shim.draft_slots), _room(shim, r) - 1) for r in ready
                    }
                    h.forward({}, steps)
            elif op < 0.9 and live:
                rid = rng.choice(live)
                shim.suspend(rid)
                live.remove(rid)
                suspended.append(rid)
                h.check("suspend")
            elif op < 0.95 and suspended and len(live) < shim.max_batch_size:
                rid = suspended.pop()
                snapshot = snapshot_state(shim)
                try:
                    shim.resume(rid)
                    live.append(rid)
                except (errors.ResumeRefusedError, errors.OutOfPagesError):
                    assert snapshot_state(shim) == snapshot
                    shim.free(rid)
                h.check("resume")
            elif live:
                rid = live.pop(rng.randrange(len(live)))
                h.free(rid)
        except errors.OutOfPagesError:
            raise
    for rid in live + suspended:
        shim.free(rid)
    h.check("drained")


def run_adversarial(h: Harness, seed: int = 0, thorough: bool = True) -> None:
    """Every scenario, in a fixed order; the harness checks after each operation."""
    rng = random.Random(seed)
    if thorough:
        acceptance_patterns(h)
        aligned_batch_sweep(h)
    else:
        alignment_sweep(h, lambda rid, step: 0)
        alignment_sweep(h, lambda rid, step: h.shim.draft_slots, rid_base=20_000)
    max_chunk_beside_generation(h)
    full_batch_chunks(h)
    suspend_resume(h, rng)
    random_workload(h, rng)


# --------------------------------------------------------------------------- state checks


def shim_errors(shim) -> ModuleType:
    return sys.modules[type(shim).__module__]


def snapshot_state(shim) -> tuple:
    """Everything an operation may change: free lists, tables, request states, counters."""
    pools = tuple(
        (m, name, tuple(pool.recycled), pool.fresh, tuple(pool.cached), pool.suspended)
        for m, manager in shim.managers.items()
        for name, pool in manager.pools.items()
    )
    requests = tuple(
        (
            rid,
            r.history,
            r.capacity,
            r.held,
            r.phase,
            r.chunk,
            r.suspended,
            tuple(tuple(t) for t in r.tables),
            tuple(r.stale),
            tuple(sorted((k, tuple(v)) for k, v in r.scratch.items())),
            tuple(r.slots),
        )
        for rid, r in shim._requests.items()
    )
    return pools, requests, shim.capacity_tokens, shim._live, shim._context_tokens


def check_invariants(shim) -> None:
    """Pages held by requests are exactly the pages missing from the free lists (over every
    life cycle of a shared pool: TensorRT-LLM V2's pool groups)."""
    for index, (pool, _window, _sb, scratch, _chunk) in enumerate(shim._paged):
        sharing = [i for i, paged in enumerate(shim._paged) if paged.pool is pool]
        held = [p for r in shim._requests.values() for i in sharing for p in r.tables[i] if p >= 0]
        held += pool.cached  # block reuse: committed pages no request holds
        assert len(held) == len(set(held)) == pool.used, (pool.name, len(held), pool.used)
        free = set(pool.recycled) | set(range(pool.fresh, pool.pages))
        assert len(free) == pool.free_pages and not set(held) & free
        if scratch is not None:
            taken = [p for r in shim._requests.values() for p in r.scratch.get(index, [])]
            assert len(taken) == len(set(taken)) == scratch.used
