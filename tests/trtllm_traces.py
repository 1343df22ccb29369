"""Workloads driven through TensorRT-LLM's KV cache manager V2 and through kvgen's shim alike.

Standard library only: ``bench/engines/trtllm_engine.py`` imports this module inside the
engine's subprocess (no kvgen there), and the replay tests import it without the engine.

A workload is a generator of operations. The driver sends back whether each admission and
resume succeeded, so a refusal by the engine shapes the rest of the workload the same way on
replay (the goldens record the engine's outcomes, the shim's are compared with them):

- ``("add", rid)`` -> bool: admit (the engine: a new cache, created suspended, then resumed)
- ``("fwd", chunks, accepts)``: one iteration; ``chunks`` {rid: context tokens},
  ``accepts`` {rid: accepted draft tokens}; recorded at the peak and after the forward
- ``("suspend", rid)``, ``("resume", rid)`` -> bool, ``("free", rid)``

Capacities follow the PyTorch backend's wrapper (docs/cost-model.md §3): a context chunk of n
at position p sets capacity p + n + E, history p; a generation step grows capacity by
``step_tokens`` and, after accepting a, sets history h + a + 1 and capacity history + E.
"""

from __future__ import annotations

import random
from collections.abc import Generator
from dataclasses import asdict, dataclass
from typing import Any

Op = tuple[Any, ...]
Trace = Generator[Op, "bool | None", None]


@dataclass(frozen=True)
class TraceParams:
    seed: int
    requests: int = 8  # admissions over the whole workload
    batch: int = 4  # live requests at most (continuous batching)
    max_num_tokens: int = 256  # context tokens of one iteration, shared by the chunks
    max_seq_len: int = 1024
    prompt: tuple[int, int] = (1, 600)  # prompt length range (inclusive)
    decode: tuple[int, int] = (1, 200)  # generated tokens range (inclusive)
    extra_tokens: int = 0  # E
    draft_slots: int = 0  # a step accepts 0..draft_slots
    step_tokens: int = 1  # capacity a step adds: 1 + draft slots (+ overlap slack)
    suspend_every: int = 0  # suspend one generating request every n iterations (0: never)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> TraceParams:
        fields = dict(data)
        fields["prompt"] = tuple(fields["prompt"])
        fields["decode"] = tuple(fields["decode"])
        return TraceParams(**fields)


def continuous_batching(p: TraceParams) -> Trace:
    """Admissions up to ``batch`` live requests, chunked prefill sharing ``max_num_tokens``,
    speculative steps with random acceptance, frees as requests finish, and (when
    ``suspend_every``) a generating request suspended and resumed later."""
    rng = random.Random(p.seed)
    waiting = []
    for rid in range(p.requests):
        prompt = rng.randint(*p.prompt)
        total = min(prompt + rng.randint(*p.decode), p.max_seq_len)
        waiting.append((rid, min(prompt, total - 1) if total > 1 else 1, total))
    live: dict[int, list[int]] = {}  # rid -> [prompt left, history, total]
    suspended: list[int] = []
    iteration = 0
    while waiting or live or suspended:
        iteration += 1
        generating = [r for r, s in live.items() if s[0] == 0 and r not in suspended]
        if p.suspend_every and iteration % p.suspend_every == 0 and len(generating) > 1:
            rid = rng.choice(generating)
            yield ("suspend", rid)
            suspended.append(rid)
        while suspended and len(live) - len(suspended) < p.batch:
            rid = suspended[0]
            if not (yield ("resume", rid)):
                break
            suspended.pop(0)
        while waiting and len(live) - len(suspended) < p.batch:
            rid, prompt, total = waiting[0]
            if not (yield ("add", rid)):
                break
            waiting.pop(0)
            live[rid] = [prompt, 0, total]
        active = {r: s for r, s in live.items() if r not in suspended}
        budget, chunks, accepts = p.max_num_tokens, {}, {}
        for rid, state in active.items():
            if state[0] and budget:
                take = min(state[0], budget)
                chunks[rid] = take
                budget -= take
            elif not state[0]:
                room = state[2] - state[1] - 1
                accepts[rid] = min(rng.randint(0, p.draft_slots), room)
        if not chunks and not accepts:
            if not active and (waiting or suspended):
                return  # nothing admitted and nothing to run: the pools refuse every request
            continue
        yield ("fwd", chunks, accepts)
        for rid, n in chunks.items():
            live[rid][0] -= n
            live[rid][1] += n
        for rid, a in accepts.items():
            live[rid][1] += a + 1
        for rid in [r for r, s in active.items() if s[0] == 0 and s[1] >= s[2]]:
            yield ("free", rid)
            del live[rid]


def run(trace: Trace, execute: Any) -> list[bool]:
    """Drive ``trace`` with ``execute(op) -> bool | None``; the outcomes of add/resume."""
    outcomes = []
    try:
        op = next(trace)
        while True:
            result = execute(op)
            if op[0] in ("add", "resume"):
                outcomes.append(bool(result))
            op = trace.send(result)
    except StopIteration:
        return outcomes


def replayed(trace: Trace, outcomes: list[bool], execute: Any) -> list[tuple[int, bool, bool]]:
    """Drive ``trace`` with the recorded ``outcomes`` of add/resume (so the workload is the one
    the engine saw); ``execute`` runs each op on the shim and returns its own outcome.
    Returns (index, recorded, shim's) for each add/resume whose outcomes differ. Stops where
    the recorded outcomes end (the engine stopped there)."""
    mismatches = []
    index = 0
    try:
        op = next(trace)
        while True:
            if op[0] in ("add", "resume") and index == len(outcomes):
                return mismatches
            result = execute(op, outcomes[index] if op[0] in ("add", "resume") else None)
            if op[0] in ("add", "resume"):
                if bool(result) != outcomes[index]:
                    mismatches.append((index, outcomes[index], bool(result)))
                result = outcomes[index]
                index += 1
            op = trace.send(result)
    except StopIteration:
        return mismatches


def encode_rows(rows: list[list[int]]) -> str:
    """Per-step rows as one string: rows ``a,b,c`` separated by spaces, a run of equal rows
    as ``n*a,b,c``."""
    out: list[list[Any]] = []
    for row in rows:
        if out and out[-1][1] == row:
            out[-1][0] += 1
        else:
            out.append([1, row])
    text = (",".join(map(str, row)) for _n, row in out)
    return " ".join(f"{n}*{t}" if n > 1 else t for (n, _r), t in zip(out, text, strict=True))


def decode_rows(encoded: str) -> list[list[int]]:
    rows = []
    for item in encoded.split():
        repeat, _, text = item.rpartition("*")
        row = [int(v) for v in text.split(",")]
        rows += [list(row) for _ in range(int(repeat or 1))]
    return rows
