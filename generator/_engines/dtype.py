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

import functools
import importlib
import inspect
import types
from typing import Any, NamedTuple

from kvgen.sizing.engines_registry import MODEL_DTYPES, Release
from kvgen.sizing.engines_rows import model_dtype as _rows_dtype
from kvgen.sizing.engines_rows import served_tables

__all__ = ["Served", "auto_dtype", "model_dtype", "serve", "served_note", "spec_served"]


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
    own kv_cache_dtype, as qwen3_235b_a22b_fp8_pth's), else the family's
    (``kvgen.sizing.engines_rows.model_dtype``, what the runtime plans with)."""
    return _rows_dtype(sizing.ENGINE_MODELS[model], sizing.KV_CACHE_DTYPE)


def auto_dtype(engine: Release, dtype: str) -> str:
    """The cache dtype ``engine``'s dtype "auto" gives a checkpoint in ``dtype``."""
    return engine.serves(dtype)


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
    engine's own and the engine has no dtype field kvgen emits.

    The generated module's own ``engine_capacity`` answers in the dtype the engine's "auto"
    serves (``served_dtype``); a plan in another float is the engine launched with that model
    dtype, so the module returned answers with ``dtype`` set to it."""
    spec = spec_dtype or model_dtype(sizing, model)
    if asked is not None and asked not in MODEL_DTYPES:
        return sizing, None  # a quantized cache: the engine's kv-cache dtype names it
    if spec not in MODEL_DTYPES:
        if asked is None or not engine.engine.settings.dtype_field:
            return sizing, None  # the spec's quantized cache, or TensorRT-LLM's own dtype
        # A float cache asked of a quantized spec: the checkpoint's model dtype is not in the
        # spec, so the engine is launched in the dtype asked, which its "auto" cache follows.
        field = engine.engine.settings.dtype_field
        note = (
            f"{field} {MODEL_DTYPES[asked]}: the spec caches {spec}, and {engine.named}'s {asked} "
            f"cache follows the model dtype, so the model runs in {asked} as planned"
        )
        served = Served(spec, asked, "", note, {field: MODEL_DTYPES[asked]})
        return _launched_in(sizing, asked), served
    auto = auto_dtype(engine, spec)
    planned = asked or auto
    if planned == spec == auto:
        return sizing, None
    if planned == auto:  # the engine's own choice, over the checkpoint's
        if asked is None:
            sizing = _rebound(sizing, spec, planned)
        hint = f"for the checkpoint's {spec} plan --kv-cache-dtype {spec}"
        note = f"{_auto_note(engine, spec, planned)}; {hint}"
        return sizing, Served(spec, planned, auto, note, {})
    # ValueError where the engine has no model dtype setting
    engine.cache_dtype(spec, planned, "--kv-cache-dtype", "plan without --kv-cache-dtype")
    field = engine.engine.settings.dtype_field
    note = (
        f"{field} {MODEL_DTYPES[planned]}: {engine.named}'s dtype auto serves this {spec} "
        f"checkpoint in {auto}; the cache follows the model dtype, so the model runs in {planned} "
        "as planned"
    )
    return _launched_in(sizing, planned), Served(
        spec, planned, auto, note, {field: MODEL_DTYPES[planned]}
    )


def _launched_in(sizing: types.ModuleType, dtype: str) -> types.ModuleType:
    """``sizing`` (bound to ``dtype`` already) whose ``engine_capacity`` answers for the
    engine launched with model dtype ``dtype``; the module itself where its runtime predates
    that keyword (a vendored output folder's: it answers in the tables' dtype)."""
    answer = sizing.engine_capacity
    if "dtype" not in inspect.signature(answer).parameters:
        return sizing
    module = types.ModuleType(sizing.__name__)
    module.__dict__.update(vars(sizing))
    module.__dict__["engine_capacity"] = functools.partial(answer, dtype=dtype)
    return module


def _rebound(sizing: types.ModuleType, old: str, new: str) -> types.ModuleType:
    """``sizing``'s tables as the engine serves them in ``new`` (``served_tables``: plain
    ``_replace`` on the rows, so any runtime's), bound to the runtime the tables came from, as
    a generated module binds them."""
    # kvgen.sizing, or an output folder's _kvgen_runtime
    sizing_package = type(sizing.TABLES).__module__.rpartition(".")[0]
    module = types.ModuleType(sizing.__name__)
    module.__dict__["TABLES"] = served_tables(sizing.TABLES, old, new)
    importlib.import_module(f"{sizing_package}.sizing_core").bind(module.__dict__)
    importlib.import_module(f"{sizing_package}.engines_core").bind(module.__dict__)
    return module


def spec_served(family: Any, model: str, engine: Release) -> tuple[str, str]:
    """A spec's (``kvgen._spec.models.Family``) model cache dtype and the one ``engine``'s
    dtype "auto" serves it in (the same where it keeps it): as ``engine_capacity`` reads them
    (``kvgen.sizing.engines_rows.model_dtype``, ``Release.serves``)."""
    from kvgen._model.engine_rows import engine_model

    spec = _rows_dtype(engine_model(family, family.model(model)), family.kv_cache_dtype)
    return spec, engine.serves(spec)


def served_note(family: Any, model: str, engine: Release) -> str:
    """What output says of the cache dtype ``engine``'s "auto" serves ``model`` of a spec's
    family (``kvgen._spec.models.Family``) in ("": the spec's own): ``serve``'s note, for the
    planning commands that read the spec itself (``kvgen compare``), whose ``engine_capacity``
    and policy terms size that dtype's rows as a generated module does (``served_tables``)."""
    spec, auto = spec_served(family, model, engine)
    return "" if auto == spec else _auto_note(engine, spec, auto)


def _auto_note(engine: Release, spec: str, auto: str) -> str:
    """The note of a ``spec`` checkpoint that ``engine``'s dtype "auto" serves in ``auto``."""
    return (
        f"{engine.named} serves this {spec} checkpoint in {auto} ({engine.float32_words}): "
        f"planned with the cache in {auto}"
    )
