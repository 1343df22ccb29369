"""The cache dtype an engine serves a model in, and the plan made with it (``kvgen plan``).

A spec's plain float cache dtype (fp32, bf16, fp16) is the checkpoint's own dtype: import-hf
writes it from config.json's ``torch_dtype``. An engine launched with its dtype "auto" does not
always serve the model in that dtype, and its cache follows the model's: vLLM serves a float32
checkpoint in bfloat16, SGLang in float16, TensorRT-LLM keeps float32 (each release's
``float32_served_as`` and ``float32_words`` in ``kvgen.sizing.engines_registry``). ``serve`` plans
with what the engine will use and says so; where the plan's dtype is not what the engine's
"auto" gives (``--kv-cache-dtype`` asked for another float), it names the engine's dtype field
that makes the engine serve the plan's, or refuses where the engine has none.

The plan's module is the generated one with its tables' cache dtype replaced and bound again to
the runtime beside them (no spec read, nothing rendered), so a plan from a deployment file or a
vendored output folder resolves alike.
"""

from __future__ import annotations

import importlib
import types
from typing import Any, NamedTuple

from kvgen.sizing.engines_registry import Release

__all__ = ["FLOATS", "Served", "auto_dtype", "model_dtype", "serve", "served_family"]

# kvgen's plain float cache dtypes -> the engines' names for the model dtype (--dtype)
FLOATS = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


class Served(NamedTuple):
    """How ``engine`` serves the model's cache: the checkpoint's dtype, the plan's, the one the
    engine's dtype "auto" gives, what the output says and the launch fields that make the
    engine serve the plan's dtype (empty where "auto" already does)."""

    model_dtype: str
    planned: str
    auto: str
    note: str
    fields: dict[str, str]


def model_dtype(sizing: types.ModuleType, model: str) -> str:
    """The model's cache dtype: its attention rows' one dtype where they share it (a model's
    own kv_cache_dtype, as qwen3_235b_a22b_fp8_pth's), else the family's."""
    rows = sizing.ENGINE_MODELS[model].layers
    dtypes = {lay.dtype for lay in rows if lay.kv_heads and not lay.token_bytes}
    found: str = dtypes.pop() if len(dtypes) == 1 else sizing.KV_CACHE_DTYPE
    return found


def auto_dtype(engine: Release, dtype: str) -> str:
    """The cache dtype ``engine``'s dtype "auto" gives a checkpoint in ``dtype``."""
    if dtype == "fp32" and engine.float32_served_as:
        return engine.float32_served_as
    return dtype


def serve(
    sizing: types.ModuleType,
    model: str,
    engine: Release,
    *,
    asked: str | None = None,
    spec_dtype: str | None = None,
) -> tuple[types.ModuleType, Served | None]:
    """The module to plan ``model`` on ``engine`` with and how the engine serves its cache
    (None: the spec's dtype, nothing to say). ``asked``: ``--kv-cache-dtype`` (the module is
    bound to it already); ``spec_dtype``: the checkpoint's dtype where the module's rows no
    longer show it (a what-if module). ``ValueError`` where the plan's float dtype is not the
    engine's own and the engine has no dtype field kvgen emits."""
    spec = spec_dtype or model_dtype(sizing, model)
    if spec not in FLOATS or (asked is not None and asked not in FLOATS):
        return sizing, None  # a quantized cache: the engine's kv-cache dtype names it
    auto = auto_dtype(engine, spec)
    planned = asked or auto
    if planned == spec == auto:
        return sizing, None
    why = engine.float32_words
    if planned == auto:  # the engine's own choice, over the checkpoint's
        if asked is None:
            sizing = _rebound(sizing, spec, planned)
        note = (
            f"{engine.named} serves this {spec} checkpoint in {planned} ({why}): planned with the "
            f"cache in {planned}; for the checkpoint's {spec} plan --kv-cache-dtype {spec}"
        )
        return sizing, Served(spec, planned, auto, note, {})
    field = engine.engine.settings.dtype_field
    if not field:
        raise ValueError(
            f"--kv-cache-dtype {planned}: {engine.named} serves this {spec} checkpoint's cache "
            f"in {auto} ({why}); plan without --kv-cache-dtype, or serve a {FLOATS[planned]} "
            "copy of the checkpoint"
        )
    note = (
        f"{field} {FLOATS[planned]}: {engine.named}'s dtype auto serves this {spec} checkpoint "
        f"in {auto}; the cache follows the model dtype, so the model runs in {planned} as planned"
    )
    return sizing, Served(spec, planned, auto, note, {field: FLOATS[planned]})


def _rebound(sizing: types.ModuleType, old: str, new: str) -> types.ModuleType:
    """``sizing``'s tables with every layer kind cached in ``old`` cached in ``new`` (the
    engine casts the model; a state dtype the spec names itself stays), bound to the runtime
    the tables came from, as a generated module binds them."""
    tables = sizing.TABLES

    def stack(layers: Any) -> Any:
        kinds = {
            name: kind._replace(dtype=new) if kind.dtype == old else kind
            for name, kind in layers.kinds.items()
        }
        return layers._replace(kinds=kinds)

    models = {
        name: entry._replace(
            layers=stack(entry.layers),
            extra_layers={key: stack(value) for key, value in entry.extra_layers.items()},
        )
        for name, entry in tables.models.items()
    }
    profiles = {
        name: profile if profile.draft is None else profile._replace(draft=stack(profile.draft))
        for name, profile in tables.profiles.items()
    }
    family_dtype = new if tables.kv_cache_dtype == old else tables.kv_cache_dtype
    rebound = tables._replace(kv_cache_dtype=family_dtype, models=models, profiles=profiles)
    # kvgen.sizing, or an output folder's _kvgen_runtime
    sizing_package = type(tables).__module__.rpartition(".")[0]
    module = types.ModuleType(sizing.__name__)
    module.__dict__["TABLES"] = rebound
    importlib.import_module(f"{sizing_package}.sizing_core").bind(module.__dict__)
    importlib.import_module(f"{sizing_package}.engines_core").bind(module.__dict__)
    return module


def served_family(family: Any, model: str, engine: Release) -> tuple[Any, str]:
    """A spec's family (``kvgen._spec.models.Family``) as ``engine`` serves ``model``'s cache (the
    family again where that is the spec's dtype), and what the output says ("" nothing):
    ``serve`` for the planning commands that read the spec itself (``kvgen compare``)."""
    from kvgen._engines.whatif import Overrides, _override

    entry = family.model(model)
    spec = entry.kv_cache_dtype or family.kv_cache_dtype
    if spec not in FLOATS:
        return family, ""
    auto = auto_dtype(engine, spec)
    if auto == spec:
        return family, ""
    data = _override(family.model_dump(mode="json", exclude_none=True), Overrides(
        kv_cache_dtype=auto))  # fmt: skip
    note = (
        f"{engine.named} serves this {spec} checkpoint in {auto} ({engine.float32_words}): "
        f"planned with the cache in {auto}"
    )
    return type(family).model_validate(data), note
