"""One model's deployment on one engine: budget arithmetic, capacity and launch settings.

``Deployment`` holds the inputs, one frozen value that the command builds once from its flags
(``kvgen._cli.commands._hardware``) or a deployment file (``kvgen._deploy.deployment``);
``plan_rank`` answers it, never raising for "does not fit" (the answer says so and why), only
for bad input (``ValueError``, ``GpuError``, ``WeightsError``, ``NotModelled``).
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kvgen._deploy.budget import Budget, budget
from kvgen._deploy.emit import Launch, launch
from kvgen.sizing.engines_registry import (
    DEFAULT_MAX_BATCH_SIZE,
    DEFAULT_MAX_NUM_TOKENS,
    DEFAULT_MAX_SEQ_LEN,
    Release,
)
from kvgen.sizing.engines_sglang import SGLANG_MAMBA_STRATEGY

if TYPE_CHECKING:
    from kvgen._deploy.weights import LayerShape, Tensor
    from kvgen.sizing.sizing_kinds import Stack

__all__ = ["Deployment", "RankPlan", "load_sizing", "plan_rank", "weights_per_rank"]

_FAMILY = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Deployment:
    """One model's deployment on one engine release, as asked (JSON: the engine's label)."""

    family: str
    model: str
    engine: Release
    kv_budget: int | None = None  # --gpu-memory: the KV budget per rank, given
    gpu: str | None = None  # --gpu: a name or a size
    gpus: int | None = None
    fraction: float | None = None
    weights: str | None = None  # a path, or a size per rank
    reserve: int | None = None
    max_seq_len: int | None = None  # None: min(native, DEFAULT_MAX_SEQ_LEN), as kvgen plan
    max_num_tokens: int = DEFAULT_MAX_NUM_TOKENS
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    block_size: int | None = None
    speculative: str = "none"
    tp_size: int = 1
    pp_size: int = 1
    # SGLang's Mamba radix cache on a recurrent hybrid: its state slots per running request.
    mamba_radix_cache_strategy: str = SGLANG_MAMBA_STRATEGY
    heterogeneous_vocab: bool = False  # vLLM: speculative_config use_heterogeneous_vocab
    # --kv-cache-dtype as asked (the sizing module is bound to it) and the checkpoint's cache
    # dtype it replaced; None: the engine serves the spec's as its dtype "auto" does
    # (kvgen._engines.dtype)
    kv_cache_dtype: str | None = None
    spec_dtype: str | None = None


@dataclass
class RankPlan:
    deployment: Deployment
    max_seq_len: int
    budget: Budget | None  # None: the KV budget was given (--gpu-memory)
    kv_budget: int
    launch: Launch | None = None
    refusal: str | None = None  # the engine cannot serve one request (or the budget is <= 0)
    replicas: int = 1
    notes: list[str] = field(default_factory=list)
    # (max_batch_size, the largest max_seq_len for that many requests on kv_budget): the
    # per-batch-size table of ``kvgen plan --gpu-memory``, on the budget the hardware leaves
    batches: list[tuple[int, int]] = field(default_factory=list)
    # per max_batch_size, the shorter max_seq_len that do not fit and why, where some do not
    # (TensorRT-LLM 38198e34: BatchPlan.misfits); printed and given as plan prints them
    misfits: dict[int, tuple[list[tuple[int, int]], str]] = field(default_factory=dict)

    @property
    def fits(self) -> bool:
        return self.refusal is None


def load_sizing(family: str, generated: Path) -> types.ModuleType:
    """``generated/<family>/sizing.py`` through the file-access rules, without kvgen's spec
    stack (a plan with --emit stays a fraction of a second: bench/bench_emit.py)."""
    from kvgen._generate.shipped import known_families, locate
    from kvgen._generate.vendored import import_generated, interface_refusal
    from kvgen._util.files import MAX_GENERATED_BYTES, Refused, exists, read_bytes
    from kvgen._util.suggest import did_you_mean

    generated = locate(family, generated).generated  # the project's, else the shipped family
    path = generated / family / "sizing.py"
    if not _FAMILY.match(family) or not exists(path):
        hint = did_you_mean(family, known_families(generated))
        raise ValueError(
            f"{path.as_posix()} not found{hint}: run `kvgen generate` to create it, or name a "
            "family kvgen ships (`kvgen models` lists them)"
        )
    try:
        read_bytes(path, limit=MAX_GENERATED_BYTES, root=generated)
    except Refused as exc:
        raise ValueError(exc.diagnostic.render()) from None
    try:
        module = import_generated(path, "kvgen_deploy_generated")
    except (Exception, SystemExit) as exc:
        raise ValueError(f"{path.as_posix()} failed to load: {type(exc).__name__}") from None
    if not hasattr(module, "engine_capacity"):
        raise ValueError(f"{path.as_posix()} has no engine_capacity: run `kvgen generate`")
    refusal = interface_refusal(module, path)
    if refusal is not None:
        raise ValueError(refusal)
    return module


def weights_per_rank(sizing: types.ModuleType, model: str, where: str, tp_size: int,
                     pp_size: int, base: Path | None = None,
                     model_dtype: str | None = None) -> tuple[int, str]:  # fmt: skip
    """Bytes of weights on the fullest rank and where the figure comes from. ``model_dtype``:
    the float dtype the engine runs the model in where it is not the checkpoint's
    (kvgen._engines.dtype: vLLM loads a float32 checkpoint in bf16), in which its float tensors
    are held."""
    from kvgen._deploy import weights
    from kvgen._util.files import display_path
    from kvgen._util.units import parse_size, rounding

    path = Path(where) if base is None or Path(where).is_absolute() else base / where
    if not path.exists():
        if where.strip().isdigit():
            raise weights.WeightsError(f"--weights {where}: a size needs a unit ({where}B, 17GiB)")
        if where[:1].isdigit():
            note = rounding(where)
            return parse_size(where), "given per rank" + (f"; {note}" if note else "")
        raise weights.WeightsError(
            f"--weights {where}: no such file or directory (give a model directory with "
            "*.safetensors, an index file, or the bytes per rank with a unit, e.g. 17GiB)"
        )
    checkpoint = weights.load(path)
    tensors, cast = _held_in(checkpoint.tensors, model_dtype)
    stack = sizing.TABLES.models[model].layers
    weights.check_model(checkpoint, model, _layer_shapes(stack))
    kv_heads = max(kind.kv_heads for kind in stack.kinds.values()) or 1
    tied = not any(t.name.split(".")[-2:-1] == ["lm_head"] for t in tensors)
    ranks = weights.rank_bytes(
        tensors, num_layers=stack.layer_count, kv_heads=kv_heads, tp_size=tp_size,
        pp_size=pp_size, tie_word_embeddings=tied,
    )  # fmt: skip
    shards = "safetensors headers" if path.is_dir() or path.suffix == ".json" else path.name
    return max(ranks), (
        f"{shards} of {display_path(path)} ({checkpoint.rule}), {len(tensors)} tensors, "
        f"tp {tp_size}{cast}"
    )


# safetensors' float dtypes and their widths: the tensors an engine casts to its model dtype
_FLOAT_TENSORS = {"F32": 4, "BF16": 2, "F16": 2}


def _held_in(tensors: list[Tensor], model_dtype: str | None) -> tuple[list[Tensor], str]:
    """The checkpoint's tensors as the engine holds them when it runs the model in
    ``model_dtype`` (its float tensors in that width; quantized ones as stored), and what the
    weights' source line says ("" where nothing changes)."""
    from kvgen.sizing.facts import DTYPE_BYTES

    width = DTYPE_BYTES.get(model_dtype or "", 0)
    if not width:
        return tensors, ""
    held: list[Tensor] = []
    cast = 0
    for tensor in tensors:
        own = _FLOAT_TENSORS.get(tensor.dtype)
        if own is None or own == width:
            held.append(tensor)
            continue
        held.append(tensor._replace(nbytes=tensor.nbytes // own * width))
        cast += 1
    note = f"; {cast} float tensors held in {model_dtype}, the engine's model dtype" if cast else ""
    return held, note


def _layer_shapes(stack: Stack) -> list[LayerShape]:  # stack: a sizing module's
    """The K and V projection rows the spec gives each decoder layer (0: not a plain K/V)."""
    from kvgen._deploy.weights import LayerShape

    shapes = []
    for index in range(stack.layer_count):
        kind = stack.kinds[stack.pattern[index % len(stack.pattern)]]
        plain = (
            kind.attention in ("full", "sliding", "chunked", "cross") and not kind.bytes_per_token
        )
        heads, dim = (kind.kv_heads, kind.head_dim) if plain else (0, 0)
        shapes.append(LayerShape(heads * dim, heads * (kind.v_head_dim or dim)))
    return shapes


def plan_rank(
    sizing: types.ModuleType, d: Deployment, base: Path | None = None, *, batches: bool = True
) -> RankPlan:
    """``d`` answered; ``batches``: with the per-batch-size line (False where the output is
    the launch settings alone: the planner is not imported then)."""
    from kvgen._deploy.gpus import resolve
    from kvgen._engines.dtype import serve
    from kvgen._generate.shipped import model_hint

    if d.model not in sizing.MODELS:
        hint = model_hint(d.model, sizing.MODELS)  # a Hugging Face name too
        raise ValueError(f"model must be one of {', '.join(sizing.MODELS)}; got {d.model!r}{hint}")
    if d.pp_size != 1:
        raise ValueError("pipeline parallelism is not modelled by the engine capacities yet")
    sizing, served = serve(sizing, d.model, d.engine, asked=d.kv_cache_dtype,
                           spec_dtype=d.spec_dtype)  # fmt: skip
    native = int(sizing.MAX_SEQ_LEN[d.model])
    max_seq_len = d.max_seq_len or min(native, DEFAULT_MAX_SEQ_LEN)
    plan_budget = None
    notes = []
    replicas = 1
    if d.gpu is not None:
        gpu = resolve(d.gpu)
        if d.gpus is not None:
            ranks = d.tp_size * d.pp_size
            if d.gpus < ranks:
                raise ValueError(f"--gpus {d.gpus} is fewer than tp x pp = {ranks} ranks")
            replicas = d.gpus // ranks
        if d.weights is None:
            raise ValueError("--gpu needs --weights DIR (the model's safetensors) or a size")
        if d.fraction is not None and not 0 < d.fraction <= 1:
            raise ValueError(f"the memory fraction must be in (0, 1], got {d.fraction}")
        weights_bytes, weights_source = weights_per_rank(
            sizing, d.model, d.weights, d.tp_size, d.pp_size, base,
            model_dtype=None if served is None else served.planned,
        )  # fmt: skip
        plan_budget = budget(
            d.engine, gpu=gpu.name, gpu_source=gpu.source, total_bytes=gpu.total_bytes,
            weights_bytes=weights_bytes, weights_source=weights_source, fraction=d.fraction,
            reserve=d.reserve, tp_size=d.tp_size, pp_size=d.pp_size,
            max_num_tokens=d.max_num_tokens, max_running=d.max_batch_size,
        )  # fmt: skip
        kv = plan_budget.kv_bytes
        fraction: float | None = plan_budget.fraction
    elif d.kv_budget is not None:
        kv, fraction = d.kv_budget, d.fraction
        notes.append("KV budget per rank given (--gpu-memory); weights and reserve not counted")
    else:
        raise ValueError("give --gpu NAME|SIZE with --weights, or the KV budget --gpu-memory SIZE")
    plan = RankPlan(d, max_seq_len, plan_budget, kv, replicas=replicas, notes=notes)
    if served is not None:
        plan.notes.append(served.note)
    if kv <= 0:
        plan.refusal = "the KV budget is not positive: nothing is left for the KV cache"
        return plan
    try:
        plan.launch = launch(
            sizing, d.model, engine=d.engine, budget_bytes=kv, max_seq_len=max_seq_len,
            max_num_tokens=d.max_num_tokens, max_batch_size=d.max_batch_size,
            block_size=d.block_size, speculative=d.speculative, tp_size=d.tp_size,
            fraction=fraction, mamba_radix_cache_strategy=d.mamba_radix_cache_strategy,
            heterogeneous_vocab=d.heterogeneous_vocab,
        )  # fmt: skip
    except ValueError as exc:
        # engine_capacity names the budget when the engine would refuse to start for lack of
        # memory; any other ValueError (NotModelled included) is about the input.
        if type(exc).__name__ == "NotModelled" or not str(exc).startswith("budget_bytes"):
            raise
        plan.refusal = str(exc)
        return plan
    if served is not None:
        plan.launch.fields.update(served.fields)
        plan.launch.notes.insert(0, served.note)  # --emit's output says it too
    field_name = d.engine.engine.settings.replicas_field
    if replicas > 1 and field_name:  # each replica its own KV cache of the same size
        plan.launch.fields[field_name] = replicas
    elif replicas > 1:
        plan.notes.append(f"{replicas} replicas: launch {d.engine.engine.title} once per replica")
    if batches:
        plan.batches, plan.misfits = _batches(sizing, d, kv, max_seq_len)
    if plan.launch.capacity["max_concurrency"] < 1:
        plan.refusal = (
            f"holds {plan.launch.capacity['max_concurrency']:.3f} requests of max_seq_len "
            f"{max_seq_len}: fewer than one"
        )
    return plan


def _batches(
    sizing: types.ModuleType, d: Deployment, kv: int, max_seq_len: int
) -> tuple[list[tuple[int, int]], dict[int, tuple[list[tuple[int, int]], str]]]:
    """What ``kvgen plan --gpu-memory KV`` prints per batch size for this deployment: the
    largest max_seq_len its max_batch_size requests fit in (the same planner, the same
    module); none where the planner does not answer for the release (TensorRT-LLM 38198e34:
    --emit's pools)."""
    from kvgen._engines.planner import make_plan
    from kvgen._engines.plans import PlanError

    try:
        plan = make_plan(
            sizing, d.model, gpu_memory=kv, batch_sizes=[d.max_batch_size],
            speculative=d.speculative, max_num_tokens=d.max_num_tokens, max_seq_len=max_seq_len,
            tp_size=d.tp_size, engine=d.engine, block_size=d.block_size,
            mamba_radix_cache_strategy=d.mamba_radix_cache_strategy,
            heterogeneous_vocab=d.heterogeneous_vocab,
        )  # fmt: skip
    except (PlanError, ValueError):
        return [], {}
    misfits = {b.max_batch_size: (b.misfits, b.misfit_reason) for b in plan.batches if b.misfits}
    return [(batch.max_batch_size, batch.max_seq_len_fit) for batch in plan.batches], misfits
