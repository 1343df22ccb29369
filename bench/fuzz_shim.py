"""What ``bench/fuzz_features.py`` does with the generated code of a lint-clean mutant: call
every public sizing function (``exercise_sizing``) and drive a shim with random calls and
hostile arguments (``exercise_shim``), checking the shim after every refused call.

The promise checked: a lint-clean spec generates modules that answer. A sizing function
answers with plain non-negative ints (a float only for an engine's concurrency, None only
where nothing bounds the tokens) or refuses with ``ValueError``; the plain calls (defaults,
tp 1, both semantics) always answer. A shim builds on ``device="meta"``, runs one request
through a context chunk and a generation step, and refuses any other call with
``AllocatorError``, its state unchanged.
"""

from __future__ import annotations

import random
import traceback
from collections.abc import Callable, Iterator
from typing import Any

try:  # numpy ints are operator.index-able arguments every function takes
    import numpy as np

    NP_INT: Any = np.int64
except ImportError:  # pragma: no cover - numpy is a test dependency
    NP_INT = int

BATCH, CHUNK, BUDGET = 2, 256, 1 << 36
HUGE = 10**30


def _not_plain(value: object, path: str = "") -> str | None:
    """Where ``value`` holds something other than a plain non-negative int (None and the
    engines' float concurrency excepted)."""
    if value is None or (type(value) is float and path.endswith("max_concurrency")):
        return None
    if type(value) is int:
        return None if value >= 0 else f"{path} = {value} (negative)"
    if isinstance(value, dict):
        for key, item in value.items():
            found = _not_plain(item, f"{path}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        for key, item in zip(value._fields, value, strict=True):
            found = _not_plain(item, f"{path}.{key}")
            if found:
                return found
        return None
    return f"{path} = {value!r} ({type(value).__name__})"


def exercise_sizing(sizing) -> list[str]:
    """Every public sizing function for every model and profile; the problems found."""
    problems: list[str] = []

    def call(label: str, fn: Callable, *args, must: bool = False, **kw) -> Any:
        try:
            result = fn(*args, **kw)
        except ValueError as exc:
            if must:
                problems.append(f"{label}: a plain call was refused: {exc}")
            return None
        except Exception:
            problems.append(f"{label}: {traceback.format_exc(limit=6)}")
            return None
        bad = _not_plain(result)
        if bad:
            problems.append(f"{label}: answered {bad}")
        return result

    for model in sizing.MODELS:
        seq = min(sizing.MAX_SEQ_LEN[model], 4096)
        for profile in sizing.PROFILES[model]:
            kw = dict(speculative=profile, max_batch_size=BATCH, max_num_tokens=CHUNK)
            kw["max_seq_len"] = seq
            where = f"{model}/{profile}"
            for semantics in sizing.SEMANTICS:
                at = dict(kw, semantics=semantics)
                call(f"{where} cache_costs {semantics}", sizing.cache_costs, model, must=True, **at)
                call(f"{where} cost_terms", sizing.cost_terms, model, must=True, **at)
                quota = call(
                    f"{where} quota_from_max_tokens", sizing.quota_from_max_tokens, model,
                    4 * seq, must=True, **at,
                )  # fmt: skip
                if quota:
                    call(f"{where} max_tokens_from_quota", sizing.max_tokens_from_quota, model,
                         quota, must=True, **at)  # fmt: skip
                    call(f"{where} split_budget", sizing.split_budget, model,
                         sum(quota.values()), **at)  # fmt: skip
                call(
                    f"{where} quota_for_requests", sizing.quota_for_requests, model, requests=2,
                    seq_len=seq, speculative=profile, max_num_tokens=CHUNK, semantics=semantics,
                    must=True,
                )  # fmt: skip
            call(f"{where} max_blocks_per_seq", sizing.max_blocks_per_seq, model,
                 speculative=profile, max_seq_len=seq, must=True)  # fmt: skip
            call(f"{where} pages_per_request", sizing.pages_per_request, model,
                 speculative=profile, max_seq_len=seq, must=True)  # fmt: skip
            variants = (
                {"tp_size": 2}, {"tp_size": 8}, {"tp_size": 2, "dcp_size": 2},
                {"tp_size": 4, "dcp_size": 2}, {"tp_size": 2, "attention_dp": True},
                {"pp_size": 2, "pp_rank": 1}, {"encoder_tokens": 1},
                {"encoder_tokens": NP_INT(1601)}, {"mamba_state_update": "replay"},
                {"scratch_reuse": True, "block_reuse": True, "overlap_slack": True},
                {"max_batch_size": NP_INT(1 << 40), "semantics": "exact"},
                {"max_batch_size": HUGE}, {"max_num_tokens": HUGE}, {"tp_size": HUGE},
            )  # fmt: skip
            for extra in variants:
                call(f"{where} cache_costs {extra}", sizing.cache_costs, model, **{**kw, **extra})
            for engine in ("trtllm-v2", "vllm", "sglang"):
                for budget in (BUDGET, HUGE):
                    call(
                        f"{where} engine_capacity {engine} {budget}", sizing.engine_capacity,
                        model, budget, engine=engine, max_seq_len=seq, max_num_tokens=CHUNK,
                        speculative=profile,
                    )  # fmt: skip
    return problems


# --- the shim ------------------------------------------------------------------------------


def _request(r) -> tuple:
    return (
        r.history, r.capacity, r.held, r.phase, r.chunk, r.suspended,
        [list(t) for t in r.tables], list(r.stale),
        {k: list(v) for k, v in r.scratch.items()}, list(r.slots), [list(c) for c in r.cross],
    )  # fmt: skip


def snapshot(shim) -> tuple:
    """Everything a refused call must leave as it was."""
    requests = {rid: _request(r) for rid, r in shim._requests.items()}
    pools = [
        (name, pool_name, list(pool.recycled), pool.fresh)
        for name, manager in shim.managers.items()
        for pool_name, pool in manager.pools.items()
    ]
    peaks = [manager.peak for manager in shim.managers.values()]
    return (requests, set(shim._freed), shim._live, shim._capacity_tokens,
            shim._context_tokens, pools, peaks)  # fmt: skip


def _plain_workload(shim, seq: int) -> None:
    tokens = max(1, min(128, seq // 4))
    shim.add_request(0)
    shim.context_chunk(0, tokens)
    if tokens + shim.headroom + 2 < seq:
        shim.generation_step([0])
    for manager, pools in shim.managers.items():
        for name, pool in pools.pools.items():
            if pool.kind != "state" or name == "state":  # state/spec: rows by batch slot
                shim.block_table(0, name, manager)
    shim.bytes_in_use(), shim.peak_bytes(), shim.quota_bytes()
    shim.free(0)


def _hostile(rng: random.Random, shim, seq: int) -> tuple[str, tuple]:
    ids = (0, 1, 2, "a", NP_INT(1), None, [], (1, 2), 1.5, True)
    counts = (0, 1, 2, -1, HUGE, NP_INT(3), 1.5, "3", None, True, CHUNK, CHUNK + 1, seq, seq + 1)
    pools = [p for m in shim.managers.values() for p in m.pools]
    pools += ["nope", None, 3, "full", "cross", "state", ["full"]]
    managers = ("target", "draft", "nope", None)
    rid, n, pool = rng.choice(ids), rng.choice(counts), rng.choice(pools)
    batch = rng.choice(([rid], [0, 1], [0, 0], rid, [], "ab", None))
    accepted = rng.choice((0, 1, -1, HUGE, [0], [0, 0], "1", None, 1.5))
    return rng.choice((
        ("add_request", (rid,)), ("add_request", (rng.choice((0, 1)),)),
        ("context_chunk", (rid, n)), ("begin_context", (rid, n)), ("end_context", (rid,)),
        ("generation_step", (batch, accepted)), ("begin_generation", (batch,)),
        ("end_generation", (batch, accepted)), ("suspend", (rid,)), ("resume", (rid,)),
        ("free", (rid,)), ("block_table", (rid, pool, rng.choice(managers))),
        ("block_tables", (batch, pool)), ("dcp_slot", (rid, n, pool)),
        ("layer_views", (rng.choice((0, 1, -1, HUGE, "layers.0", None, 1.5)),
                         rng.choice(managers))),
        ("pool", (pool, rng.choice(managers))), ("request_state", (rid,)),
    ))  # fmt: skip


def exercise_shim(allocator, sizing, rng: random.Random, stats) -> Iterator[tuple[str, str]]:
    """Build a shim per model, run the plain workload, then 40 random calls; yields
    ``(kind, detail)`` findings: ``generated``, ``untyped`` or ``state``."""
    from kvgen.runtime.allocator import AllocatorError

    for model in sizing.MODELS:
        seq = min(sizing.MAX_SEQ_LEN[model], 4096)
        profile = rng.choice(sizing.PROFILES[model])
        args = dict(speculative=profile, max_batch_size=BATCH, max_num_tokens=CHUNK)
        args.update(max_seq_len=seq, max_tokens=4 * seq, device="meta")
        try:
            shim = allocator.KVCacheShim(model, **args)
            _plain_workload(shim, seq)
        except Exception:
            yield "generated", f"{model}/{profile} shim: {traceback.format_exc(limit=6)}"
            continue
        for _ in range(40):
            name, call_args = _hostile(rng, shim, seq)
            stats.shim_calls += 1
            before = snapshot(shim)
            try:
                getattr(shim, name)(*call_args)
            except AllocatorError:
                if snapshot(shim) != before:
                    yield "state", f"{model}: {name}{call_args!r} was refused but changed the shim"
            except Exception as exc:
                yield "untyped", f"{model}: {name}{call_args!r}: {type(exc).__name__}: {exc}"
