"""Text and JSON of deployment plans: the arithmetic first, then capacity and settings."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from kvgen._deploy.rank import RankPlan
from kvgen._engines.plans import BatchPlan

__all__ = ["as_json", "data", "text"]


def text(plan: RankPlan, *, emit: bool = True) -> str:
    from kvgen._deploy.emit import render
    from kvgen._util.units import format_bytes

    d = plan.deployment
    engine = d.engine.engine
    lines = [
        f"{d.family}/{d.model} on {d.engine.described}: max_seq_len {plan.max_seq_len}, "
        f"max_batch_size {d.max_batch_size}, max_num_tokens {d.max_num_tokens}, "
        f"tp_size {d.tp_size}, speculative {d.speculative}"
    ]
    b = plan.budget
    if b is not None:
        lines += [
            f"  GPU {b.gpu}: {format_bytes(b.total_bytes)} ({b.gpu_source})",
            f"  {b.fraction_field} {b.fraction} ({b.fraction_source})",
            f"  weights per rank {format_bytes(b.weights_bytes)} ({b.weights_source})",
            f"  reserve {format_bytes(b.reserve_bytes)} ({b.reserve_source})",
            f"  {b.formula()} ({b.kv_bytes} B)",
        ]
    else:
        lines.append(f"  KV budget per rank {format_bytes(plan.kv_budget)}")
    lines += [f"  note: {note}" for note in plan.notes]
    if plan.replicas > 1:
        lines.append(f"  {d.gpus} GPUs: {plan.replicas} replicas of tp x pp = {d.tp_size} ranks")
    if plan.refusal:
        lines.append(f"  does not fit: {plan.refusal}")
    if plan.launch is not None:
        cap = plan.launch.capacity
        lines.append(
            f"  capacity: {cap['kv_tokens']:,} KV tokens, {cap['num_blocks']:,} blocks, "
            f"{cap['max_concurrency']:.3f} requests of {plan.max_seq_len} tokens at once "
            f"({cap['request_bytes']:,} B each)"
        )
        if engine.caps_concurrency and cap["max_concurrency"] == d.max_batch_size:
            lines.append(
                f"  note: {engine.title} holds at most {engine.settings.batch_field} "
                f"{d.max_batch_size} requests; the pool holds "
                f"{cap['kv_tokens'] / plan.max_seq_len:.3f} at max_seq_len"
            )
        for batch, longest in plan.batches:  # as `kvgen plan --gpu-memory` prints them
            requests = "request" if batch == 1 else "requests"
            lines.append(f"  largest max_seq_len for {batch} {requests}: {longest}")
            if batch in plan.misfits:  # as plan says it (BatchPlan.misfit_note)
                spans, reason = plan.misfits[batch]
                note = BatchPlan(batch, misfits=spans, misfit_reason=reason).misfit_note
                lines.append(f"  {note}")
        if emit and plan.fits:
            lines.append(
                f"  launch settings, {engine.settings.launcher} "
                f"(fields of {plan.launch.config_class}):"
            )
            form = engine.settings.form
            pad = "    " if form == "yaml" else "  "  # args lines carry their own two spaces
            shown = render(plan.launch, form, named=False)  # the first line names it
            lines += [pad + line for line in shown.splitlines()]
            lines += [f"  note: {note}" for note in plan.launch.notes if note not in plan.notes]
    return "".join(f"{line}\n" for line in lines)


def data(plan: RankPlan) -> dict[str, Any]:
    # The engine release as its label, and the budget without the release's memory rule (the
    # figures it gave are there): the report of c2a37ec, byte for byte.
    deployment = {**asdict(plan.deployment), "engine": plan.deployment.engine.engine.label}
    for key in ("kv_cache_dtype", "spec_dtype"):  # shown where asked (c2a37ec had neither)
        if deployment[key] is None:
            del deployment[key]
    budget = None
    if plan.budget is not None:
        budget = {k: v for k, v in asdict(plan.budget).items() if k != "memory"}
    out: dict[str, Any] = {
        "deployment": deployment,
        "engine_release": plan.deployment.engine.described,  # what the answer is for
        "max_seq_len": plan.max_seq_len,
        "budget": budget,
        "kv_budget": plan.kv_budget,
        "fits": plan.fits,
        "refusal": plan.refusal,
        "replicas": plan.replicas,
        "notes": plan.notes,
    }
    if plan.batches:  # as `kvgen plan --gpu-memory --format json` gives them
        out["batches"] = [{"max_batch_size": b, "max_seq_len_fit": n} for b, n in plan.batches]
        for entry in out["batches"]:  # where shorter lengths do not fit, as plan gives them
            if entry["max_batch_size"] in plan.misfits:
                spans, reason = plan.misfits[entry["max_batch_size"]]
                entry["misfits"], entry["misfit_reason"] = spans, reason
    if plan.launch is not None:
        out["launch"] = {"engine": plan.launch.engine, "version": plan.launch.version,
                         "release": plan.launch.release,
                         "config_class": plan.launch.config_class,
                         "fields": plan.launch.fields, "capacity": plan.launch.capacity,
                         "notes": plan.launch.notes}  # fmt: skip
    return out


def as_json(plans: list[RankPlan]) -> str:
    body: Any = data(plans[0]) if len(plans) == 1 else [data(p) for p in plans]
    return json.dumps(body, indent=2, allow_nan=False) + "\n"
