"""``kvgen plan`` from the hardware to the launch settings (its --gpu/--emit/--deployment flags).

``add_arguments`` registers them on the plan parser; ``wanted`` says whether a plan call uses
them, and ``run`` answers it: the budget arithmetic, the capacity from the generated module's
``engine_capacity`` and the engine's launch settings (docs/deploy.md).

Exit codes: 0 fits, 1 the budget is not positive or the engine cannot hold one request of
max_seq_len (the arithmetic is shown), 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kvgen._exits import Exit, UsageError

__all__ = ["add_arguments", "run", "wanted"]


def _fraction(text: str) -> float:
    from kvgen._units import fraction  # the check a deployment file's value goes through too

    try:
        value = float(text)
    except ValueError:
        value = -1.0
    try:
        return fraction(value, shown=repr(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kvgen._deploy.emit import EMIT_ENGINES
    from kvgen._units import positive_int, size_argument

    group = parser.add_argument_group("from the hardware to the launch settings (docs/deploy.md)")
    group.add_argument(
        "--gpu", metavar="NAME|SIZE",
        help="GPU by name (H100-80GB, H200, A100-80GB, B200, L40S, ...) or its memory as a size",
    )  # fmt: skip
    group.add_argument("--gpus", type=positive_int, metavar="N", help="GPUs for this model")
    group.add_argument(
        "--gpu-memory-utilization", type=_fraction, metavar="F", dest="memory_fraction",
        help="the engine's memory fraction (default: the engine's own, named in the output)",
    )  # fmt: skip
    group.add_argument(
        "--weights", metavar="DIR|FILE|SIZE",
        help="the model's safetensors (directory or index file; headers only) or bytes per rank",
    )  # fmt: skip
    group.add_argument(
        "--reserve", type=size_argument, metavar="SIZE",
        help="activations and CUDA graphs per rank (default per engine, an estimate)",
    )  # fmt: skip
    group.add_argument(
        "--emit", choices=tuple(EMIT_ENGINES),
        help="print the engine's launch settings for the plan (--format args, yaml or json)",
    )  # fmt: skip
    group.add_argument(
        "--deployment", type=Path, metavar="FILE.toml",
        help="several models on one node: budgets, capacities and launch settings",
    )  # fmt: skip


def wanted(args: argparse.Namespace) -> bool:
    return bool(args.emit or args.gpu or args.deployment)


def _engine(args: argparse.Namespace) -> str:
    from kvgen._deploy.emit import EMIT_ENGINES

    if args.emit:
        return EMIT_ENGINES[args.emit]
    return getattr(args, "engine", None) or "trtllm-v2"


def _sizing(args: argparse.Namespace, d: Any) -> Any:
    """The generated module, or with the what-if knobs given (--kv-cache-dtype, --max-seq-len
    past the native length with --rope-scaled, TensorRT-LLM's --block-size) the spec's tables
    with them applied, as the planning commands bind them (kvgen._whatif)."""
    from kvgen._commands._knobs import check_length
    from kvgen._deploy.rank import load_sizing

    what_if = getattr(args, "kv_cache_dtype", None) is not None
    what_if = what_if or getattr(args, "rope_scaled", False)
    if not what_if and (d.engine != "trtllm-v2" or d.block_size is None):
        sizing = load_sizing(d.family, args.generated)
        if d.model in sizing.MODELS:
            # Read from the module itself: kvgen._planner would import the spec stack (0.15 s).
            check_length(args, d.model, int(sizing.MAX_SEQ_LEN[d.model]))
        return sizing
    from kvgen._commands._knobs import planning_module
    from kvgen._planner import PlanError

    try:
        sizing, _native = planning_module(args, d.engine)
    except PlanError as exc:  # an unknown model, named with a did-you-mean
        raise UsageError(str(exc)) from None
    if d.engine == "trtllm-v2":
        d.block_size = None  # now the tables' tokens_per_block
    return sizing


def run(args: argparse.Namespace) -> Exit:
    from kvgen._deploy.gpus import GpuError
    from kvgen._deploy.rank import Deployment, plan_rank
    from kvgen._weights import WeightsError

    if args.format in ("args", "yaml") and not args.emit and not args.deployment:
        raise UsageError(f"--format {args.format} prints launch settings: add --emit ENGINE")
    if args.deployment:
        from kvgen._deploy.deployment import run_file

        if args.family is not None:
            raise UsageError("--deployment FILE names its models: give no FAMILY MODEL")
        return run_file(args.deployment, args.generated, args.format)
    if args.model is None:
        raise UsageError("plan needs FAMILY MODEL (or --deployment FILE.toml)")
    if len(args.max_batch_size) != 1:
        raise UsageError("--emit and --gpu take one --max-batch-size")
    d = Deployment(
        args.family, args.model, _engine(args), kv_budget=args.gpu_memory, gpu=args.gpu,
        gpus=args.gpus, fraction=args.memory_fraction, weights=args.weights,
        reserve=args.reserve, max_seq_len=args.max_seq_len, max_num_tokens=args.max_num_tokens,
        max_batch_size=args.max_batch_size[0], block_size=getattr(args, "block_size", None),
        speculative=args.speculative, tp_size=args.tp_size,
        pp_size=getattr(args, "pp_size", None) or 1,
        mamba_radix_cache_strategy=getattr(args, "mamba_radix_cache_strategy", "extra_buffer"),
        heterogeneous_vocab=getattr(args, "heterogeneous_vocab", False),
    )  # fmt: skip
    if args.emit == "trtllm" and args.format == "args":
        raise UsageError("TensorRT-LLM takes these as extra_llm_api_options: --format yaml or json")
    if (getattr(args, "dcp_size", None) or 1) != 1:
        raise UsageError(
            "--dcp-size: --gpu, --weights and --emit size one rank without decode context "
            "parallelism; plan DCP with `kvgen plan --gpu-memory SIZE --dcp-size D` (TensorRT-LLM)"
        )
    try:
        sizing = _sizing(args, d)
        plan = plan_rank(sizing, d)
    except (GpuError, WeightsError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    except SystemExit as exc:  # from the generated module: an error, never success
        raise UsageError(f"{d.family}/sizing.py called sys.exit({exc.code!r})") from None
    if plan.launch is not None and args.format in ("args", "yaml", "json") and args.emit:
        from kvgen._deploy.emit import render

        sys.stdout.write(render(plan.launch, args.format))
    elif args.format == "json":
        from kvgen._deploy.report import as_json

        sys.stdout.write(as_json([plan]))
    else:
        from kvgen._deploy.report import text

        sys.stdout.write(text(plan, emit=bool(args.emit)))
    return Exit.OK if plan.fits else Exit.FINDINGS
