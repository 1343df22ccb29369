"""``kvgen plan`` from the hardware to the launch settings (its --gpu/--emit/--deployment flags).

``add_arguments`` registers them on the plan parser; ``wanted`` says whether a plan call uses
them, and ``run`` answers it: the flags become one frozen ``kvgen._deploy.rank.Deployment``
(``request``), the generated module (or its what-if tables) is chosen here, and
``kvgen._deploy`` does the budget arithmetic, the capacity from the module's
``engine_capacity`` and the engine's launch settings (docs/deploy.md). Nothing below this
module sees the parsed arguments.

Exit codes: 0 fits, 1 the budget is not positive or the engine cannot hold one request of
max_seq_len (the arithmetic is shown), 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvgen._cli.commands._knobs import ENGINES, EngineChoices, engine_argument
from kvgen._util.exits import Exit, UsageError
from kvgen.sizing.engines_registry import DEFAULT_RELEASE, Release

if TYPE_CHECKING:
    from kvgen._deploy.rank import Deployment

__all__ = ["add_arguments", "request", "run", "wanted"]


def _fraction(text: str) -> float:
    from kvgen._util.units import fraction  # the check a deployment file's value goes through too

    try:
        value = float(text)
    except ValueError:
        value = -1.0
    try:
        return fraction(value, shown=repr(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kvgen._util.units import positive_int, size_argument

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
        "--emit", type=engine_argument, choices=EngineChoices(ENGINES), metavar="ENGINE",
        help="print the engine's launch settings for the plan (--format args, yaml or json; "
        f"ENGINE: {', '.join(ENGINES)}, NAME or NAME==VERSION)",
    )  # fmt: skip
    group.add_argument(
        "--deployment", type=Path, metavar="FILE.toml",
        help="several models on one node: budgets, capacities and launch settings",
    )  # fmt: skip


def wanted(args: argparse.Namespace) -> bool:
    return bool(args.emit or args.gpu or args.deployment)


def _engine(args: argparse.Namespace) -> Release:
    """--emit's engine, else --engine's, else kvgen's default (not the project's: the
    hardware plan names its engine on the command line)."""
    found: Release = args.emit or args.engine or DEFAULT_RELEASE
    return found


def _what_if(args: argparse.Namespace, engine: Release) -> bool:
    """Whether the plan binds the spec's tables with a what-if applied (--kv-cache-dtype,
    --rope-scaled, or --block-size where the engine's page is the spec's)."""
    page = engine.engine.page_in_spec and args.block_size is not None
    return args.kv_cache_dtype is not None or args.rope_scaled or page


def _sizing(args: argparse.Namespace, engine: Release) -> Any:
    """The generated module, or with the what-if knobs given (--kv-cache-dtype, --max-seq-len
    past the native length with --rope-scaled, TensorRT-LLM's --block-size) the spec's tables
    with them applied, as the planning commands bind them (kvgen._engines.whatif)."""
    from kvgen._cli.commands._knobs import check_length
    from kvgen._deploy.rank import load_sizing

    if not _what_if(args, engine):
        sizing = load_sizing(args.family, args.generated)
        if args.model in sizing.MODELS:
            # Read from the module itself: kvgen._engines.planner would import the spec stack (0.15
            # s).
            check_length(args, args.model, int(sizing.MAX_SEQ_LEN[args.model]))
        return sizing
    from kvgen._cli.commands._knobs import planning_module
    from kvgen._engines.planner import PlanError

    try:
        sizing, _native = planning_module(args, engine)
    except PlanError as exc:  # an unknown model, named with a did-you-mean
        raise UsageError(str(exc)) from None
    return sizing


def request(args: argparse.Namespace, engine: Release) -> Deployment:
    """The deployment the flags ask for, as one frozen value. Where the engine's page is the
    spec's and --block-size rebinds the tables (``_sizing``), the page is theirs: no
    block_size is asked of the engine."""
    from kvgen._deploy.rank import Deployment

    block_size = args.block_size
    if engine.engine.page_in_spec and _what_if(args, engine):
        block_size = None  # now the tables' tokens_per_block
    return Deployment(
        args.family, args.model, engine, kv_budget=args.gpu_memory, gpu=args.gpu,
        gpus=args.gpus, fraction=args.memory_fraction, weights=args.weights,
        reserve=args.reserve, max_seq_len=args.max_seq_len, max_num_tokens=args.max_num_tokens,
        max_batch_size=args.max_batch_size[0], block_size=block_size,
        speculative=args.speculative, tp_size=args.tp_size, pp_size=args.pp_size,
        mamba_radix_cache_strategy=args.mamba_radix_cache_strategy,
        heterogeneous_vocab=args.heterogeneous_vocab, kv_cache_dtype=args.kv_cache_dtype,
        spec_dtype=_spec_dtype(args),
    )  # fmt: skip


def _spec_dtype(args: argparse.Namespace) -> str | None:
    """With --kv-cache-dtype, the checkpoint's cache dtype it replaces (the generated module's);
    None otherwise (the sizing module shows it)."""
    if args.kv_cache_dtype is None:
        return None
    from kvgen._deploy.rank import load_sizing
    from kvgen._engines.dtype import model_dtype

    sizing = load_sizing(args.family, args.generated)
    return model_dtype(sizing, args.model) if args.model in sizing.MODELS else None


def run(args: argparse.Namespace) -> Exit:
    from kvgen._deploy.gpus import GpuError
    from kvgen._deploy.rank import plan_rank
    from kvgen._deploy.weights import WeightsError

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
    engine = _engine(args)
    settings = engine.engine.settings
    if args.emit and args.format == "args" and settings.form != "args":
        raise UsageError(
            f"{engine.engine.title} takes these as extra_llm_api_options: --format yaml or json"
        )
    if args.dcp_size != 1:
        raise UsageError(
            "--dcp-size: --gpu, --weights and --emit size one rank without decode context "
            "parallelism; plan DCP with `kvgen plan --gpu-memory SIZE --dcp-size D` (TensorRT-LLM)"
        )
    try:
        sizing = _sizing(args, engine)
        launch_only = bool(args.emit) and args.format in ("args", "yaml", "json")
        plan = plan_rank(sizing, request(args, engine), batches=not launch_only)
    except (GpuError, WeightsError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    except SystemExit as exc:  # from the generated module: an error, never success
        raise UsageError(f"{args.family}/sizing.py called sys.exit({exc.code!r})") from None
    if plan.launch is not None and args.format in ("args", "yaml", "json") and args.emit:
        from kvgen._deploy.emit import render

        if args.format == "args":  # stdout stays flags a shell takes; the release on stderr
            sys.stderr.write(f"# for {plan.launch.release}: {settings.launcher}\n")
        sys.stdout.write(render(plan.launch, args.format))
    elif args.format == "json":
        from kvgen._deploy.report import as_json

        sys.stdout.write(as_json([plan]))
    else:
        from kvgen._deploy.report import text

        sys.stdout.write(text(plan, emit=bool(args.emit)))
    return Exit.OK if plan.fits else Exit.FINDINGS
