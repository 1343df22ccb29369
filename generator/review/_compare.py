"""Evaluating both sides at the reference deployment, and classifying every change."""

from __future__ import annotations

import types

from kvgen.review._sides import Side
from kvgen.review._types import (
    ADDED,
    ANY,
    API,
    CAPACITY_INCREASING,
    CAPACITY_REDUCING,
    Capacity,
    Change,
    Deployment,
)
from kvgen.spec import Acknowledgement

__all__ = [
    "API_CHANGES",
    "acknowledgement_reason",
    "api_version",
    "applicable_profiles",
    "capacities",
    "classify",
    "compare_family",
    "family_status",
    "pair_renames",
]


def applicable_profiles(module: types.ModuleType, model: str) -> tuple[str, ...]:
    """The profiles that apply to ``model``; a module generated before per-model profiles
    (no ``PROFILES``) applies every profile to every model."""
    profiles = getattr(module, "PROFILES", None)
    return tuple(profiles[model]) if profiles is not None else tuple(module.SPECULATIVE)


# What each generated sizing API version changed for its callers (``API_VERSION``; 1 when
# absent), reported as an API change when the two sides differ.
API_CHANGES = {
    2: "split_budget(model, budget_bytes, ...) takes the model first; max_tokens_from_quota "
    "takes and returns per-manager dicts like quota_from_max_tokens",
}


def api_version(module: types.ModuleType) -> int:
    return int(getattr(module, "API_VERSION", 1))


def _shares_and_tokens(
    module: types.ModuleType, model: str, budget: int, kwargs: dict[str, object]
) -> tuple[dict[str, int] | None, dict[str, int | None]]:
    """The budget split and each manager's max tokens on its share, in either API version."""
    new_api = api_version(module) >= 2
    try:
        if new_api:
            shares = module.split_budget(model, budget, **kwargs)
        else:
            shares = module.split_budget(budget, model, **kwargs)
    except ValueError:
        return None, {}  # the budget does not cover the intercepts: nothing fits
    if new_api:
        return shares, module.max_tokens_from_quota(model, shares, **kwargs)
    return shares, {
        manager: module.max_tokens_from_quota(model, share, manager=manager, **kwargs)
        for manager, share in shares.items()
    }


def capacities(side: Side, deployment: Deployment) -> dict[tuple[str, str], dict[str, Capacity]]:
    """Per (model, profile), per manager, the capacity at the reference deployment."""
    module = side.module
    assert module is not None
    out: dict[tuple[str, str], dict[str, Capacity]] = {}
    for model in module.MODELS:
        kwargs = deployment.kwargs(side.family.model(model).max_seq_len)
        for profile in applicable_profiles(module, model):
            costs = module.cache_costs(model, speculative=profile, **kwargs)
            shares, tokens = _shares_and_tokens(
                module, model, deployment.gpu_budget, {"speculative": profile, **kwargs}
            )
            row = out[(model, profile)] = {}
            for manager, cost in costs.items():
                share = shares[manager] if shares else None
                row[manager] = Capacity(int(cost[0]), int(cost[1]), share, tokens.get(manager, 0))
    return out


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


def compare_family(name: str, old: Side, new: Side, deployment: Deployment) -> list[Change]:
    """Every change of one family between two evaluated sides (``name`` is the new name)."""
    before, after = capacities(old, deployment), capacities(new, deployment)
    changes = []
    old_api, new_api = api_version(old.module), api_version(new.module)
    if old_api != new_api:
        detail = f"generated sizing API {old_api} -> {new_api}"
        if new_api in API_CHANGES:
            detail += f": {API_CHANGES[new_api]}"
        changes.append(Change(name, ANY, ANY, ANY, API, detail))
    changes += _names_changes(name, "model", list(old.module.MODELS), list(new.module.MODELS))
    changes += _names_changes(
        name, "profile", list(old.module.SPECULATIVE), list(new.module.SPECULATIVE)
    )
    # A profile that stays but starts or stops applying to a model that stays.
    for key in sorted(after.keys() ^ before.keys()):
        model, profile = key
        kept = (
            model in old.module.MODELS
            and model in new.module.MODELS
            and profile in old.module.SPECULATIVE
            and profile in new.module.SPECULATIVE
        )
        if kept:
            stopped = key in before
            kind = API if stopped else ADDED
            detail = f"profile {'no longer applies' if stopped else 'now applies'} to the model"
            changes.append(Change(name, model, profile, ANY, kind, detail))
    for key in [key for key in after if key in before]:
        model, profile = key
        for manager in sorted(set(before[key]) | set(after[key])):
            was, now = before[key].get(manager), after[key].get(manager)
            if was is None or now is None:
                detail = f"{manager} cache manager {'added' if was is None else 'removed'}"
                changes.append(Change(name, model, profile, manager, API, detail, was, now))
                continue
            kind = classify(was, now)
            if kind is not None:
                changes.append(Change(name, model, profile, manager, kind, "", was, now))
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
