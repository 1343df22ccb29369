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


def _api_version(module: types.ModuleType) -> int:
    return int(getattr(module, "API_VERSION", 1))


def _shares_and_tokens(
    module: types.ModuleType, model: str, budget: int, profile: str, kwargs: dict[str, Any]
) -> tuple[dict[str, int] | None, dict[str, int | None]]:
    """The budget split and each manager's max tokens on its share, in either sizing API:
    API 2 takes the model first in ``split_budget`` and per-manager dicts in
    ``max_tokens_from_quota``; API 1 (no ``API_VERSION``) the budget first and one manager."""
    new_api = _api_version(module) >= 2
    try:
        if new_api:
            shares = module.split_budget(model, budget, speculative=profile, **kwargs)
        else:
            shares = module.split_budget(budget, model, speculative=profile, **kwargs)
    except ValueError:  # the budget does not cover the intercepts: nothing fits
        return None, dict.fromkeys(module.MANAGERS[profile], 0)
    if new_api:
        return shares, module.max_tokens_from_quota(model, shares, speculative=profile, **kwargs)
    return shares, {
        manager: module.max_tokens_from_quota(
            model, share, manager=manager, speculative=profile, **kwargs
        )
        for manager, share in shares.items()
    }


# The deployment keys the sizing functions take; the others are kvgen diff's own.
_SIZING_KEYS = ("max_batch_size", "max_num_tokens", "max_seq_len", "tp_size", "semantics")


def _tightest_rank(
    module: types.ModuleType,
    model: str,
    budget: int,
    profile: str,
    kwargs: dict[str, Any],
    pp_size: int,
) -> tuple[dict[str, Any], dict[str, int] | None, dict[str, int | None]]:
    """Costs, shares and tokens of the pipeline rank whose target holds the fewest tokens
    (each rank sizes its own layers in its own budget; without pp, the one rank)."""
    best: tuple[float, tuple[dict[str, Any], dict[str, int] | None, dict[str, int | None]]] | None
    best = None
    for rank in range(pp_size):
        ranked = kwargs if pp_size == 1 else {**kwargs, "pp_size": pp_size, "pp_rank": rank}
        costs = module.cache_costs(model, speculative=profile, **ranked)
        shares, tokens = _shares_and_tokens(module, model, budget, profile, ranked)
        target = tokens.get("target")
        key = float("inf") if target is None else float(target)
        if best is None or key < best[0]:
            best = (key, (costs, shares, tokens))
    assert best is not None
    return best[1]


def evaluate(
    module: types.ModuleType, deployment: dict[str, Any], native: dict[str, int]
) -> dict[str, Any]:
    """``{"models", "speculative", "spec_sha256", "rows"}``; a row is ``[model, profile,
    manager, slope, intercept, share, max_tokens]`` (``share`` None: the budget does not
    cover the intercepts; ``max_tokens`` None: unbounded)."""
    rows: list[list[Any]] = []
    engine_rows: list[list[Any]] = []
    engines = deployment.get("engines") or ()
    pp_size = deployment.get("pp_size", 1)
    for model in module.MODELS:
        kwargs = {k: v for k, v in deployment.items() if k in _SIZING_KEYS}
        if deployment.get("dcp_size", 1) != 1:  # a module before dcp takes no such keyword
            kwargs["dcp_size"] = deployment["dcp_size"]
        kwargs["max_seq_len"] = deployment["max_seq_len"]
        if not deployment.get("rope_scaled"):  # --rope-scaled: past the native length as given
            kwargs["max_seq_len"] = min(kwargs["max_seq_len"], native.get(model, 1 << 62))
        for profile in _profiles(module, model):
            budget = deployment["gpu_budget"]
            costs, shares, tokens = _tightest_rank(module, model, budget, profile, kwargs, pp_size)
            for manager, cost in costs.items():
                share = shares[manager] if shares else None
                rows.append(
                    [model, profile, manager, int(cost[0]), int(cost[1]), share, tokens[manager]]
                )
            if engines and hasattr(module, "engine_capacity"):
                engine_rows += _engine_rows(module, model, profile, engines, deployment, kwargs)
    return {
        "models": list(module.MODELS),
        "speculative": list(module.SPECULATIVE),
        "spec_sha256": getattr(module, "SPEC_SHA256", None),
        "api_version": _api_version(module),
        "rows": rows,
        "engine_rows": engine_rows,
    }


def _engine_rows(
    module: types.ModuleType,
    model: str,
    profile: str,
    engines: list[str],
    deployment: dict[str, Any],
    kwargs: dict[str, Any],
) -> list[list[Any]]:
    """``[model, profile, engine, kv_tokens, max_concurrency]``, or ``[..., None, reason]``
    where the engine refuses or does not model it: the module's own ``engine_capacity``."""
    out: list[list[Any]] = []
    # A --kv-cache-dtype of a plain float launches the engine in that model dtype
    # (``engine_dtype``; the sides are rendered in it; without it, each engine answers in the
    # dtype its "auto" serves), where the module's runtime takes ``dtype`` (a committed
    # module's may predate it).
    launched: dict[str, Any] = {}
    asked = deployment.get("engine_dtype")
    if asked is not None and "dtype" in _parameters(module.engine_capacity):
        launched["dtype"] = asked
    for engine in engines:
        try:
            cap = module.engine_capacity(
                model, deployment["gpu_budget"], engine=engine, speculative=profile,
                max_seq_len=kwargs["max_seq_len"], max_num_tokens=kwargs["max_num_tokens"],
                tp_size=kwargs["tp_size"], max_batch_size=kwargs["max_batch_size"], **launched,
            )  # fmt: skip
        except ValueError as exc:
            out.append([model, profile, engine, None, str(exc)[:300]])
            continue
        out.append([model, profile, engine, int(cap.kv_tokens), float(cap.max_concurrency)])
    return out


def _parameters(function: Any) -> tuple[str, ...]:
    """The keyword names ``function`` takes (none for what ``inspect`` cannot read)."""
    import inspect

    try:
        return tuple(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return ()


def main() -> None:
    """Child process: ``{"path", "deployment", "native"}`` on stdin, the evaluation on stdout."""
    request = json.load(sys.stdin)
    module = types.ModuleType("kvgen_review_committed")
    module.__file__ = request["path"]
    if request.get("package"):  # a module that imports the runtime beside it in its folder
        sys.path.insert(0, request["root"])
        module.__package__ = request["package"]
    try:
        with open(request["path"], encoding="utf-8") as handle:
            code = compile(handle.read(), request["path"], "exec", dont_inherit=True)
        exec(code, module.__dict__)
        result: dict[str, Any] = {"ok": evaluate(module, request["deployment"], request["native"])}
    except BaseException as exc:  # SystemExit included: report, never crash silently
        result = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write("\n" + json.dumps(result, allow_nan=False) + "\n")


if __name__ == "__main__":
    main()
