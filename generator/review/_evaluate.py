"""Every capacity of one sizing module at the reference deployment, as plain data.

Stdlib only and self-contained: ``kvgen diff`` calls ``evaluate`` in its own process on the
modules it rendered itself, and, with ``--trust-committed-modules``, runs this very file as a
separate ``python -I`` process on a module committed at the ref (request and result as JSON on
stdin and stdout), so that code from the ref never runs inside kvgen.
"""

from __future__ import annotations

import json
import sys
import types
from typing import Any

__all__ = ["evaluate", "main"]


def _profiles(module: types.ModuleType, model: str) -> list[str]:
    """The profiles that apply to ``model``; a module generated before per-model profiles
    (no ``PROFILES``) applies every profile to every model."""
    profiles = getattr(module, "PROFILES", None)
    return list(profiles[model]) if profiles is not None else list(module.SPECULATIVE)


def evaluate(
    module: types.ModuleType, deployment: dict[str, Any], native: dict[str, int]
) -> dict[str, Any]:
    """``{"models", "speculative", "spec_sha256", "rows"}``; a row is ``[model, profile,
    manager, slope, intercept, share, max_tokens]`` (``share`` None: the budget does not
    cover the intercepts; ``max_tokens`` None: unbounded)."""
    rows: list[list[Any]] = []
    for model in module.MODELS:
        kwargs = {key: value for key, value in deployment.items() if key != "gpu_budget"}
        kwargs["max_seq_len"] = min(deployment["max_seq_len"], native.get(model, 1 << 62))
        for profile in _profiles(module, model):
            costs = module.cache_costs(model, speculative=profile, **kwargs)
            try:
                shares = module.split_budget(
                    deployment["gpu_budget"], model, speculative=profile, **kwargs
                )
            except ValueError:
                shares = None  # the budget does not cover the intercepts: nothing fits
            for manager, cost in costs.items():
                share = shares[manager] if shares else None
                tokens = (
                    module.max_tokens_from_quota(
                        model, share, manager=manager, speculative=profile, **kwargs
                    )
                    if share is not None
                    else 0
                )
                rows.append([model, profile, manager, int(cost[0]), int(cost[1]), share, tokens])
    return {
        "models": list(module.MODELS),
        "speculative": list(module.SPECULATIVE),
        "spec_sha256": getattr(module, "SPEC_SHA256", None),
        "rows": rows,
    }


def main() -> None:
    """Child process: ``{"path", "deployment", "native"}`` on stdin, the evaluation on stdout."""
    request = json.load(sys.stdin)
    module = types.ModuleType("kvgen_review_committed")
    module.__file__ = request["path"]
    try:
        with open(request["path"], encoding="utf-8") as handle:
            code = compile(handle.read(), request["path"], "exec", dont_inherit=True)
        exec(code, module.__dict__)
        result: dict[str, Any] = {"ok": evaluate(module, request["deployment"], request["native"])}
    except BaseException as exc:  # SystemExit included: report, never crash silently
        result = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write("\n" + json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
