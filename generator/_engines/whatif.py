"""What-if knobs of the planning commands: a family's tables with the KV-cache dtype, the context
length or the page size replaced, bound in memory (``kvgen plan``, ``kvgen compare``).

The generated module answers for the spec as written. ``--kv-cache-dtype D`` asks about the same
models with their attention caches in ``D``; ``--max-seq-len`` above the native length with
``--rope-scaled`` asks about a context the checkpoint reaches by RoPE scaling (YaRN and co.),
which changes no layer shape, only the length the caches are sized for; ``--block-size``
asks about another page size. Each is answered by changing the spec's data, validating and
linting it again (so a dtype a kind cannot take is refused by the very rule that refuses it
in a spec, with its code), and binding the interpreter to the tables built from it
(``kvgen._generate.sizing_context.bound_module``): nothing is rendered or written.
"""

from __future__ import annotations

import copy
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvgen._util.exits import UsageError

if TYPE_CHECKING:
    from kvgen._spec.loader import LoadedSpec
    from kvgen._spec.models import Family

__all__ = ["Overrides", "spec_path", "whatif_data", "whatif_family", "whatif_module"]

# The attention kinds take the KV-cache dtype; a recurrent kind keeps a dtype it names itself
# (engines keep Mamba state in its own dtype, vLLM's mamba_cache_dtype) and takes the pool's
# only where it inherits it, as in a spec (so KV239 refuses a scaled layout there).
_OWN_DTYPE = ("recurrent",)


class Overrides:
    """The what-if values of one planning command (None: as the spec says)."""

    def __init__(
        self,
        *,
        kv_cache_dtype: str | None = None,
        max_seq_len: tuple[str, int] | None = None,
        block_size: int | None = None,
    ) -> None:
        self.kv_cache_dtype = kv_cache_dtype
        # (model, length): the model's context raised; model "*": every model shorter than it
        self.max_seq_len = max_seq_len
        self.block_size = block_size

    def __bool__(self) -> bool:
        return (self.kv_cache_dtype, self.max_seq_len, self.block_size) != (None, None, None)


def spec_path(name: str, spec_dir: Path | None = None) -> Path:
    """A family name under the spec directory (default: the project's), else a family kvgen
    ships (``kvgen._generate.shipped.locate``); or a spec path."""
    path = Path(name)
    if path.suffix not in (".yaml", ".yml"):
        from kvgen._generate.shipped import known_families, locate
        from kvgen._util.suggest import did_you_mean

        found = locate(name, spec_dir=spec_dir)
        path = found.spec
        if not path.is_file():
            where = path.parent.as_posix()
            hint = did_you_mean(name, known_families(found.generated))
            raise UsageError(
                f"no spec {path.as_posix()}{hint}; give a family under {where}/, one kvgen ships "
                "(`kvgen models`), or a path"
            )
    if not path.is_file():
        raise UsageError(f"no spec {path}; give a family name or a path to a spec")
    return path


def _stacks(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Every layer stack of the spec's data: the models and the profiles' draft stacks."""
    stacks = [m for m in data.get("models", []) if isinstance(m, dict)]
    for profile in data.get("speculative", []) or []:
        for part in ("draft", "extra_layers"):
            if isinstance(profile, dict) and isinstance(profile.get(part), dict):
                stacks.append(profile[part])
    return stacks


def _override(data: dict[str, Any], overrides: Overrides) -> dict[str, Any]:
    data = copy.deepcopy(data)
    dtype = overrides.kv_cache_dtype
    if dtype is not None:
        data["kv_cache_dtype"] = dtype
        for stack in _stacks(data):
            if "kv_cache_dtype" in stack:
                stack["kv_cache_dtype"] = dtype
            for kind in (stack.get("layer_kinds") or {}).values():
                own = isinstance(kind, dict) and kind.get("attention") in _OWN_DTYPE
                if isinstance(kind, dict) and "dtype" in kind and not own:
                    kind["dtype"] = dtype
    if overrides.max_seq_len is not None:
        name, length = overrides.max_seq_len
        for model in data.get("models", []):
            if not isinstance(model, dict):
                continue
            if model.get("name") == name or (
                name == "*" and isinstance(model.get("max_seq_len"), int)
                and model["max_seq_len"] < length
            ):  # fmt: skip
                model["max_seq_len"] = length
    if overrides.block_size is not None:
        data["tokens_per_block"] = overrides.block_size
    return data


def whatif_family(path: Path, overrides: Overrides) -> Family:
    """The spec at ``path`` with ``overrides`` applied, validated and linted; ``UsageError``
    with the diagnostics (rule code and reason) when the changed spec would be refused."""
    from kvgen._spec.loader import load_path

    return _applied(load_path(path), overrides)


def whatif_data(display: str, raw: bytes, overrides: Overrides) -> Family:
    """``whatif_family`` for a spec's bytes (one side of ``kvgen diff``)."""
    from kvgen._spec.loader import load_bytes

    return _applied(load_bytes(display, raw), overrides)


def _applied(loaded: LoadedSpec, overrides: Overrides) -> Family:
    from kvgen._lint.linter import lint_family
    from kvgen._spec.models import Family
    from pydantic import ValidationError

    if loaded.family is None:
        raise UsageError(f"{loaded.path} does not load; run `kvgen lint {loaded.path}`")
    if not overrides:
        return loaded.family
    data = _override(loaded.data, overrides)
    what = _described(overrides)
    try:
        family = Family.model_validate(data)
    except ValidationError as exc:
        reasons = "; ".join(error["msg"] for error in exc.errors()[:3])
        raise UsageError(f"{loaded.path} with {what} is not a valid spec: {reasons}") from None
    errors = [d for d in lint_family(loaded.path, family, loaded.source) if d.severity == "error"]
    if errors:
        reasons = "; ".join(f"{d.code} {d.message}" for d in errors[:3])
        raise UsageError(f"refused: {loaded.path} with {what}: {reasons}")
    return family


def _described(overrides: Overrides) -> str:
    parts = []
    if overrides.kv_cache_dtype is not None:
        parts.append(f"kv_cache_dtype {overrides.kv_cache_dtype}")
    if overrides.max_seq_len is not None:
        parts.append(f"max_seq_len {overrides.max_seq_len[1]} (RoPE-scaled)")
    if overrides.block_size is not None:
        parts.append(f"tokens_per_block {overrides.block_size}")
    return ", ".join(parts)


def whatif_module(path: Path, overrides: Overrides) -> types.ModuleType:
    """The sizing module of the overridden spec, bound in memory (the generated module's API)."""
    from kvgen._generate.sizing_context import bound_module

    return bound_module(whatif_family(path, overrides))
