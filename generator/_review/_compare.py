"""Evaluating both sides at the reference deployment, and classifying every change."""

from __future__ import annotations

from kvgen._review._sides import Side
from kvgen._review._types import (
    ADDED,
    ANY,
    API,
    CAPACITY_INCREASING,
    CAPACITY_REDUCING,
    Capacity,
    Change,
    EngineChange,
    ReferenceDeployment,
)
from kvgen._spec.models import Acknowledgement

__all__ = [
    "API_CHANGES",
    "acknowledgement_reason",
    "capacities",
    "classify",
    "compare_family",
    "family_status",
    "pair_renames",
]


# What each generated sizing API version changed for its callers (``API_VERSION``; 1 when
# absent), reported as an API change when the two sides differ (``--trust-committed-modules``
# shows it; by default both sides are rendered by the same kvgen and share one API).
API_CHANGES = {
    2: "split_budget(model, budget_bytes, ...) takes the model first; max_tokens_from_quota "
    "takes and returns per-manager dicts like quota_from_max_tokens",
}


def capacities(
    side: Side, deployment: ReferenceDeployment
) -> dict[tuple[str, str], dict[str, Capacity]]:
    """Per (model, profile), per manager, the capacity at the reference deployment."""
    assert side.evaluation is not None
    return side.evaluation.capacities


def _fewer(new: int | None, old: int | None) -> bool:
    """``new < old`` with ``None`` as unbounded."""
    if new is None:
        return False
    return old is None or new < old


def classify(old: Capacity, new: Capacity) -> str | None:
    """The kind of change of one manager, ``None`` when slope, intercept and tokens agree."""
    if (old.slope, old.intercept, old.max_tokens) == (new.slope, new.intercept, new.max_tokens):
        return None
    if (
        _fewer(new.max_tokens, old.max_tokens)
        or new.intercept > old.intercept
        or new.slope > old.slope
    ):
        return CAPACITY_REDUCING
    return CAPACITY_INCREASING


def acknowledgement_reason(acks: list[Acknowledgement], change: Change) -> str | None:
    for ack in acks:
        if (
            ack.change == change.kind
            and ack.model in (ANY, change.model)
            and ack.profile in (ANY, change.profile)
        ):
            return ack.reason
    return None


def _names_changes(family: str, kind: str, old: list[str], new: list[str]) -> list[Change]:
    """Models (``kind="model"``) or profiles removed (API) and added."""
    out = []
    for name in old:
        if name not in new:
            model, profile = (name, ANY) if kind == "model" else (ANY, name)
            out.append(Change(family, model, profile, ANY, API, f"{kind} removed"))
    for name in new:
        if name not in old:
            model, profile = (name, ANY) if kind == "model" else (ANY, name)
            out.append(Change(family, model, profile, ANY, ADDED, f"{kind} added"))
    return out


def compare_family(
    name: str, old: Side, new: Side, deployment: ReferenceDeployment
) -> list[Change]:
    """Every change of one family between two evaluated sides (``name`` is the new name)."""
    before, after = capacities(old, deployment), capacities(new, deployment)
    was, now = old.evaluation, new.evaluation
    assert was is not None and now is not None
    changes = []
    if was.api_version != now.api_version:
        detail = f"generated sizing API {was.api_version} -> {now.api_version}"
        if now.api_version in API_CHANGES:
            detail += f": {API_CHANGES[now.api_version]}"
        changes.append(Change(name, ANY, ANY, ANY, API, detail))
    changes += _names_changes(name, "model", list(was.models), list(now.models))
    changes += _names_changes(name, "profile", list(was.speculative), list(now.speculative))
    # A profile that stays but starts or stops applying to a model that stays.
    for key in sorted(after.keys() ^ before.keys()):
        model, profile = key
        kept = (
            model in was.models
            and model in now.models
            and profile in was.speculative
            and profile in now.speculative
        )
        if kept:
            stopped = key in before
            kind = API if stopped else ADDED
            detail = f"profile {'no longer applies' if stopped else 'now applies'} to the model"
            changes.append(Change(name, model, profile, ANY, kind, detail))
    for key in [key for key in after if key in before]:
        model, profile = key
        for manager in sorted(set(before[key]) | set(after[key])):
            old_cap, new_cap = before[key].get(manager), after[key].get(manager)
            if old_cap is None or new_cap is None:
                detail = f"{manager} cache manager {'added' if old_cap is None else 'removed'}"
                changes.append(Change(name, model, profile, manager, API, detail, old_cap, new_cap))
                continue
            verdict = classify(old_cap, new_cap)
            if verdict is not None:
                changes.append(Change(name, model, profile, manager, verdict, "", old_cap, new_cap))
    return changes


def pair_renames(
    old: dict[str, Side], new: dict[str, Side]
) -> dict[str, str]:  # new name -> old name
    by_path = {side.path: name for name, side in old.items() if name not in new}
    return {
        name: by_path[side.path]
        for name, side in new.items()
        if name not in old and side.path in by_path
    }


def family_status(changes: list[Change], old: Side, new: Side) -> str:
    if changes:
        return "changed"
    if old.raw != new.raw or old.module_text != new.module_text:
        return "cosmetic"
    return "unchanged"


def engine_changes(
    name: str, before: Side, after: Side, asked: str | None = None
) -> list[EngineChange]:
    """Per engine, each (model, profile) whose capacity differs between the sides (``kvgen
    diff --engine``): reported beside the changes, never classified or blocking; each says
    the dtype the engine serves the model's cache in where that is not the spec's (the new
    side's, else the old's; none under a ``--kv-cache-dtype`` of a plain float, which
    launches the engine in it)."""
    old = before.evaluation.engines if before.evaluation else {}
    new = after.evaluation.engines if after.evaluation else {}
    out = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            served = _served(after if key in new else before, key[0], key[2], asked)
            out.append(EngineChange(name, *key, old.get(key), new.get(key), served))
    return out


def _served(side: Side, model: str, engine: str, asked: str | None) -> str:
    """What a line of ``engine_changes`` says of the dtype ``engine`` serves ``model`` in."""
    from kvgen._engines.dtype import spec_served
    from kvgen.sizing.engines_registry import MODEL_DTYPES, release

    if asked in MODEL_DTYPES:
        return ""
    try:
        found = release(engine)
        spec, served = spec_served(side.family, model, found)
    except (ValueError, KeyError):  # an engine or model this kvgen does not know: nothing said
        return ""
    if served == spec:
        return ""
    return f"cache in {served}: {found.named} serves this {spec} checkpoint in {served}"
