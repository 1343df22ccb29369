"""``kvgen plan FAMILY MODEL --gpu-memory SIZE``: capacity of one deployment.

Uses this project's generated/<family>/sizing.py (run `kvgen generate` first). For each
--max-batch-size it prints the GPU budget split between target and draft pools
(docs/cost-model.md §6), each pool's max tokens, the most requests of --seq-len tokens that
fit at once (by quota_for_requests, §4), and the largest max_seq_len that fits for that many
requests. With --requests R it prints instead the memory R requests of --seq-len tokens need
(quota_for_requests per manager and their sum); --gpu-memory is then optional. --plot draws
tokens of capacity against GPU memory, one panel per batch size and one line per speculative
profile (needs matplotlib: pip install 'kvgen[plot]').

--gpu-memory is the KV-cache budget per rank (not the GPU's memory), with a unit. --engine
vllm|sglang answers from the module's engine_capacity in that engine's terms (default: the
engine of [tool.kvgen.deployment], else trtllm; the output says which; NAME==VERSION
selects a release, docs/cli.md "Engine names"). What-ifs:
--pp-size, --kv-cache-dtype, --block-size, --rope-scaled, and for SGLang on a recurrent
hybrid --mamba-radix-cache-strategy (docs/cli.md).
From the hardware instead: --gpu H100-80GB --weights DIR (the model's safetensors)
subtracts the weights per rank and a reserve from the engine's share of the device, and --emit
vllm|sglang|trtllm prints the launch settings that make that engine allocate exactly the plan
(docs/deploy.md).

Exit codes: 0 the deployment fits, 1 the budget does not cover the fixed costs at some batch
size (or the engine holds less than one request at max_seq_len), 2 usage error (no generated
module, unknown model or profile, matplotlib missing, a deployment the engine refuses).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import types
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from kvgen._cli.commands._knobs import (
    add_engine,
    add_gpu_memory,
    add_heterogeneous_vocab,
    add_knobs,
    add_mamba_strategy,
    aliases,
    engine_choice,
    planning_module,
)
from kvgen._generate.config import OUT_DIR
from kvgen._util.exits import Exit, UsageError
from kvgen._util.units import positive_int, token_count
from kvgen.sizing.engines_registry import (
    DEFAULT_MAX_BATCH_SIZE,
    DEFAULT_MAX_NUM_TOKENS,
    DEFAULT_MAX_SEQ_LEN,
    Release,
)

if TYPE_CHECKING:
    from kvgen._engines.dtype import Served
    from kvgen._engines.planner import RequestsNeed
    from kvgen._engines.plans import BatchPlan, Plan
    from matplotlib.figure import Figure

log = logging.getLogger("kvgen")

PLOT_POINTS = 64


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="plan KV-cache capacity for one model and GPU budget",
        description=__doc__.split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # Optional only for --deployment FILE, which names its models itself.
    parser.add_argument("family", nargs="?")
    parser.add_argument("model", nargs="?")
    add_gpu_memory(parser)
    add_engine(parser, many=False)
    parser.add_argument("--speculative", default="none", metavar="PROFILE")
    parser.add_argument(
        "--max-batch-size", *aliases("--max-batch-size"), type=positive_int, nargs="+",
        default=[DEFAULT_MAX_BATCH_SIZE], metavar="B",
        help=f"one or more batch sizes (default: {DEFAULT_MAX_BATCH_SIZE})",
    )  # fmt: skip
    parser.add_argument(
        "--max-num-tokens", *aliases("--max-num-tokens"), type=token_count,
        default=DEFAULT_MAX_NUM_TOKENS, metavar="N",
    )  # fmt: skip
    parser.add_argument(
        "--max-seq-len", *aliases("--max-seq-len"), type=token_count, metavar="S",
        help=f"default: min(native, {DEFAULT_MAX_SEQ_LEN})",
    )  # fmt: skip
    parser.add_argument(
        "--seq-len", type=token_count, metavar="L",
        help="request length for max concurrent requests (default: max_seq_len)",
    )  # fmt: skip
    parser.add_argument(
        "--requests", type=positive_int, metavar="R",
        help="print the memory R concurrent requests of --seq-len tokens need",
    )  # fmt: skip
    add_knobs(parser)
    add_mamba_strategy(parser)
    add_heterogeneous_vocab(parser)
    parser.add_argument("--semantics", choices=("trtllm-v2", "exact"), default="trtllm-v2")
    parser.add_argument(
        "--format", choices=("text", "json", "args", "yaml"), default="text",
        help="args and yaml: the launch settings of --emit ENGINE",
    )  # fmt: skip
    parser.add_argument("--generated", type=Path, default=Path(OUT_DIR), metavar="DIR")
    parser.add_argument("--plot", type=Path, metavar="FILE.png", help="write a capacity plot")
    # --- the hardware flags: --gpu, --gpus, --gpu-memory-utilization, --weights, --reserve,
    # --emit, --deployment (the hardware to the launch settings, docs/deploy.md) ---
    from kvgen._cli.commands._hardware import add_arguments

    add_arguments(parser)
    # --- end of the hardware flags ---
    parser.set_defaults(func=run)


def _warn_installed(engine: Release) -> None:
    """A warning on stderr where the engine installed beside kvgen is at another release than
    the plan's, or one kvgen does not model (kvgen._engines.installed)."""
    from kvgen._engines.installed import installed_version, release_warning

    said = release_warning(engine, installed_version(engine.engine))
    if said is not None:
        log.warning("warning: %s", said)


def run(args: argparse.Namespace) -> Exit:
    # --- the hardware to the launch settings (kvgen._cli.commands._hardware, kvgen._deploy) ---
    from kvgen._cli.commands._hardware import run as deploy_run
    from kvgen._cli.commands._hardware import wanted

    if wanted(args):
        from kvgen._cli.commands._hardware import _engine

        if not args.deployment:
            _warn_installed(_engine(args))
        return deploy_run(args)
    # --- end of the hardware flags ---
    from kvgen._engines.planner import PlanError, make_plan

    if args.format in ("args", "yaml"):
        raise UsageError(f"--format {args.format} prints launch settings: add --emit ENGINE")
    if args.model is None:
        raise UsageError("plan needs FAMILY MODEL (or --deployment FILE.toml)")
    engine, source = engine_choice(args)
    _warn_installed(engine)
    if args.requests is not None:
        return _requests(args, engine)
    if args.gpu_memory is None:
        raise UsageError("plan needs --gpu-memory SIZE (or --requests R for the memory R need)")
    try:
        sizing, native = planning_module(args, engine)
        served = None
        if args.model in sizing.MODELS:  # an unknown model: make_plan names it
            sizing, served = serve_dtype(args, sizing, engine)
        plan = make_plan(
            sizing,
            args.model,
            gpu_memory=args.gpu_memory,
            batch_sizes=args.max_batch_size,
            speculative=args.speculative,
            max_num_tokens=args.max_num_tokens,
            max_seq_len=args.max_seq_len,
            tp_size=args.tp_size,
            semantics=args.semantics,
            seq_len=args.seq_len,
            dcp_size=args.dcp_size,
            engine=engine,
            pp_size=args.pp_size,
            block_size=args.block_size,
            rope_scaled=args.rope_scaled,
            native=native,
            kv_cache_dtype=args.kv_cache_dtype,
            mamba_radix_cache_strategy=args.mamba_radix_cache_strategy,
            heterogeneous_vocab=args.heterogeneous_vocab,
        )
        plan.engine_source = source
        if served is not None:
            plan.notes.append(served.note)
        if args.plot and not engine.engine.cost_functions:
            raise UsageError(
                "--plot draws TensorRT-LLM V2's pools; `kvgen compare --plot` draws every engine"
            )
        if args.plot:
            plot(sizing, plan, args.plot)
            log.info("wrote %s", args.plot)
    except (PlanError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    except SystemExit as exc:  # from the generated module: an error, never success
        raise UsageError(f"{args.family}/sizing.py called sys.exit({exc.code!r})") from None
    sys.stdout.write(as_json(plan) if args.format == "json" else text(plan))
    return Exit.OK if plan.fits else Exit.FINDINGS


def serve_dtype(
    args: argparse.Namespace, sizing: types.ModuleType, engine: Release
) -> tuple[types.ModuleType, Served | None]:
    """The module to plan with in the cache dtype ``engine`` serves the model in, and how
    (kvgen._engines.dtype; with --kv-cache-dtype the checkpoint's dtype is the generated
    module's)."""
    from kvgen._engines.dtype import model_dtype, serve
    from kvgen._engines.planner import load_sizing

    spec = None
    if args.kv_cache_dtype is not None:
        spec = model_dtype(load_sizing(args.family, args.generated), args.model)
    return serve(sizing, args.model, engine, asked=args.kv_cache_dtype, spec_dtype=spec)


def _requests(args: argparse.Namespace, engine: Release) -> Exit:
    """``--requests R``: the memory R requests of --seq-len tokens need, per manager."""
    from kvgen._engines.planner import PlanError, memory_for_requests
    from kvgen._util.units import format_bytes

    if not engine.engine.cost_functions or args.pp_size != 1:
        raise UsageError(
            "--requests answers in TensorRT-LLM V2 terms for one pipeline stage "
            "(quota_for_requests); drop --engine/--pp-size, or ask `kvgen plan --gpu-memory`"
        )
    try:
        sizing, _ = planning_module(args, engine)
        need = memory_for_requests(
            sizing,
            args.model,
            requests=args.requests,
            seq_len=args.seq_len or args.max_seq_len,
            speculative=args.speculative,
            max_num_tokens=args.max_num_tokens,
            tp_size=args.tp_size,
            semantics=args.semantics,
            dcp_size=args.dcp_size,
        )
    except (PlanError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    except SystemExit as exc:  # from the generated module: an error, never success
        raise UsageError(f"{args.family}/sizing.py called sys.exit({exc.code!r})") from None
    fits = args.gpu_memory is None or need.total <= args.gpu_memory
    if args.format == "json":
        data = {**asdict(need), "total": need.total, "fits": fits, "gpu_memory": args.gpu_memory}
        sys.stdout.write(json.dumps(data, indent=2, allow_nan=False) + "\n")
    else:
        lines = [
            f"{need.family}/{need.model}, speculative {need.speculative}, "
            f"semantics {need.semantics}",
            f"memory for {need.requests} requests of {need.seq_len} tokens "
            f"(max_num_tokens {need.max_num_tokens}, tp_size {need.tp_size}{_dcp(need)}"
            f"{_what_if(args)}): "
            f"{format_bytes(need.total)}",
        ]
        lines += [f"  {name}: {format_bytes(size)}" for name, size in need.managers.items()]
        if args.gpu_memory is not None:
            verdict = "fits" if fits else "does not fit"
            lines.append(f"{verdict} in {format_bytes(args.gpu_memory)}")
        sys.stdout.write("".join(f"{line}\n" for line in lines))
    return Exit.OK if fits else Exit.FINDINGS


def _what_if(args: argparse.Namespace) -> str:
    """The what-if knobs of --requests, as given (nothing at the defaults)."""
    out = f", kv_cache_dtype {args.kv_cache_dtype} (override)" if args.kv_cache_dtype else ""
    out += f", block_size {args.block_size}" if args.block_size else ""
    return out + (", RoPE-scaled (--rope-scaled)" if args.rope_scaled else "")


def _dcp(plan: Plan | RequestsNeed) -> str:
    """ ", dcp_size D" under decode context parallelism; nothing otherwise."""
    return f", dcp_size {plan.dcp_size}" if plan.dcp_size != 1 else ""


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _deployment(plan: Plan) -> str:
    """The what-if knobs as given: parallel sizes, page size, dtype, RoPE-scaled context."""
    native = f"native {plan.native_max_seq_len}"
    if plan.rope_scaled:
        native += ", RoPE-scaled past it (--rope-scaled)"
    out = f"max_seq_len {plan.max_seq_len} ({native}), tp_size {plan.tp_size}{_dcp(plan)}"
    if plan.pp_size != 1:
        out += f", pp_size {plan.pp_size} (tightest rank {plan.pp_rank})"
    if plan.block_size is not None:
        out += f", block_size {plan.block_size}"
    if plan.kv_cache_dtype is not None:
        out += f", kv_cache_dtype {plan.kv_cache_dtype} (override)"
    return out


def _engine_lines(plan: Plan) -> list[str]:
    cap = plan.capacity
    if cap is None:  # the engine would not start on this budget
        lines = [f"max concurrent requests of {plan.seq_len} tokens: 0", f"  {plan.engine_error}"]
    else:
        lines = [
            f"max concurrent requests of {plan.seq_len} tokens: {plan.max_requests} "
            f"({plan.engine_version}'s maximum concurrency {cap['max_concurrency']:.3f})",
            f"  KV tokens {cap['kv_tokens']:,}, blocks {cap['num_blocks']:,}, "
            f"bytes per request {cap['request_bytes']:,}",
        ]
    lines += [f"  {note}" for note in plan.notes]
    for batch in plan.batches:
        requests = "request" if batch.max_batch_size == 1 else "requests"
        lines += [
            "",
            f"max_batch_size {batch.max_batch_size}",
            f"  largest max_seq_len for {batch.max_batch_size} {requests}: {batch.max_seq_len_fit}",
        ]
    return lines


def text(plan: Plan) -> str:
    from kvgen._util.units import format_bytes

    engine = plan.engine.engine
    semantics = f", semantics {plan.semantics}" if engine.cost_functions else ""
    lines = [
        f"{plan.family}/{plan.model}, speculative {plan.speculative}{semantics}",
        f"engine {engine.label} ({plan.engine_source}): {plan.engine_version}",
        f"GPU KV budget {format_bytes(plan.gpu_memory)} per rank; max_num_tokens "
        f"{plan.max_num_tokens}, {_deployment(plan)}",
    ]
    if not engine.cost_functions:
        return "".join(f"{line}\n" for line in lines + _engine_lines(plan))
    lines.append(f"max concurrent requests of {plan.seq_len} tokens: {plan.max_requests}")
    if plan.request_misfit_note is not None:  # TensorRT-LLM 38198e34 with a separate draft
        lines.append(f"  {plan.request_misfit_note}")
    lines += [f"  {note}" for note in plan.notes]
    for batch in plan.batches:
        lines += ["", f"max_batch_size {batch.max_batch_size}"]
        if batch.managers:
            rows = [["manager", "slope (B/token)", "intercept (B)", "share", "max tokens"]]
            rows += [
                [
                    m.name,
                    str(m.slope),
                    str(m.intercept),
                    format_bytes(m.share),
                    "unbounded" if m.max_tokens is None else str(m.max_tokens),
                ]
                for m in batch.managers
            ]
            lines += _table(rows)
        if batch.error:
            lines.append(f"  does not fit: {batch.error}")
        requests = "request" if batch.max_batch_size == 1 else "requests"
        lines.append(
            f"  largest max_seq_len for {batch.max_batch_size} {requests}: {batch.max_seq_len_fit}"
        )
        lines += misfit_lines(batch)
    return "".join(f"{line}\n" for line in lines)


def misfit_lines(batch: BatchPlan) -> list[str]:
    """Under the largest max_seq_len, the shorter ones that do not fit (TensorRT-LLM 38198e34,
    where the lengths that fit are not one interval), and why the first does not."""
    note = batch.misfit_note
    return [] if note is None else [f"  {note}"]


def as_json(plan: Plan) -> str:
    data = asdict(plan)
    data["engine"] = plan.engine.engine.label
    if not data["request_misfits"]:  # smaller counts that do not fit: only where there are some
        del data["request_misfits"], data["request_misfit_reason"]
    for batch in data["batches"]:  # shorter lengths that do not fit: only where there are some
        if not batch["misfits"]:
            del batch["misfits"], batch["misfit_reason"]
    data["fits"] = plan.fits
    return json.dumps(data, indent=2, allow_nan=False) + "\n"


def human_tokens(value: float) -> str:
    """Axis label for a token count: 0, 512, 64k, 1.5M, 2G (no offset, no scientific form)."""
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g}{suffix}"
    return f"{value:.0f}"


# Coinciding curves (profiles with the same capacity) stay distinguishable: each profile gets
# its own dash pattern and marker, and markers are staggered along the line.
STYLES = (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"), ((0, (5, 1, 1, 1)), "v"))


def plot(sizing: types.ModuleType, plan: Plan, path: Path) -> None:
    """Write ``capacity_figure`` (PNG unless the suffix names another format), with a progress
    line on a terminal: one step a curve."""
    from kvgen._engines.planner import profiles_for
    from kvgen._util.files import save_figure
    from kvgen._util.progress import Progress

    curves = len(plan.batches) * len(profiles_for(sizing, plan.model))
    with Progress("plotting", curves + 1) as progress:
        fig = capacity_figure(sizing, plan, progress.advance)  # UsageError without matplotlib
        import matplotlib.pyplot as plt

        progress.advance(f"writing {path}")
        try:
            save_figure(fig, path, dpi=110)
        finally:
            plt.close(fig)


def capacity_figure(
    sizing: types.ModuleType, plan: Plan, progress: Callable[[str], None] | None = None
) -> Figure:
    """Target max tokens against GPU memory: one panel per batch size, one line per
    speculative profile, the budget (vertical) and the demand B x max_seq_len (horizontal)
    marked; x runs to 1.25 x the budget so both marks sit inside the panel (Agg backend).
    ``progress(label)`` is called as each curve starts."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        logging.getLogger("matplotlib").setLevel(logging.WARNING)  # font cache chatter
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter
    except ImportError:
        raise ValueError(
            "--plot needs matplotlib, which is not installed: pip install 'kvgen[plot]'"
        ) from None
    from kvgen._engines.planner import capacity_curve, profiles_for
    from kvgen._util.units import GiB, format_size

    top = plan.gpu_memory * 5 // 4
    budgets = [top * i // PLOT_POINTS for i in range(PLOT_POINTS + 1)]
    profiles = profiles_for(sizing, plan.model)
    panels = len(plan.batches)
    fig, axes = plt.subplots(
        panels, 1, figsize=(9.0, 3.0 * panels + 0.8), squeeze=False, sharex=True
    )
    for ax, batch in zip(axes[:, 0], plan.batches, strict=True):
        b = batch.max_batch_size
        curves: dict[str, list[int | None]] = {}
        for i, profile in enumerate(profiles):
            if progress is not None:
                progress(f"max_batch_size {b}, {profile}")
            tokens = capacity_curve(
                sizing, plan.model, budgets, speculative=profile, max_batch_size=b,
                max_num_tokens=plan.max_num_tokens, max_seq_len=plan.max_seq_len,
                tp_size=plan.tp_size, semantics=plan.semantics, dcp_size=plan.dcp_size,
                engine=plan.engine,
            )  # fmt: skip
            same = next((name for name, curve in curves.items() if curve == tokens), None)
            curves[profile] = tokens
            points = [(x / GiB, t) for x, t in zip(budgets, tokens, strict=True) if t is not None]
            style, marker = STYLES[i % len(STYLES)]
            ax.plot(
                [p[0] for p in points], [p[1] for p in points], linestyle=style, marker=marker,
                markevery=(i, len(profiles)), markersize=4, linewidth=1.4, zorder=3 + i,
                label=profile if same is None else f"{profile} (= {same})",
            )  # fmt: skip
        highest = max((t for curve in curves.values() for t in curve if t), default=1)
        demand = b * plan.max_seq_len
        label = f"demand B x S = {b} x {human_tokens(plan.max_seq_len)} = {human_tokens(demand)}"
        if demand <= highest * 1.5:
            ax.axhline(demand, color="0.25", linewidth=1, linestyle=(0, (2, 2)), zorder=2)
            ax.annotate(
                label, (0.01, demand), xycoords=("axes fraction", "data"), xytext=(0, 3),
                textcoords="offset points", fontsize=8, color="0.25",
                bbox={"fc": "white", "ec": "none", "alpha": 0.8, "pad": 1},
            )  # fmt: skip
            ax.set_ylim(0, max(highest, demand) * 1.12)
        else:  # far above every curve: say so rather than flatten the curves
            ax.set_ylim(0, highest * 1.12)
            ax.annotate(
                f"{label} (above this panel)", (0.01, 0.97), xycoords="axes fraction",
                va="top", fontsize=8, color="0.25",
            )  # fmt: skip
        ax.axvline(plan.gpu_memory / GiB, color="tab:red", linewidth=1, zorder=2)
        ax.annotate(
            f"budget {format_size(plan.gpu_memory)}", (plan.gpu_memory / GiB, 0.03),
            xycoords=("data", "axes fraction"), xytext=(-3, 0), textcoords="offset points",
            ha="right", fontsize=8, color="tab:red",
        )  # fmt: skip
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: human_tokens(v)))
        ax.set_ylabel("target max tokens")
        ax.set_title(f"max_batch_size {b}", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(
            title="speculative", fontsize=8, title_fontsize=8, loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
        )  # fmt: skip
    axes[-1, 0].xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axes[-1, 0].set_xlabel("GPU KV-cache memory (GiB)")
    fig.suptitle(
        f"{plan.family}/{plan.model}: max_seq_len {plan.max_seq_len}, tp {plan.tp_size}, "
        f"{plan.semantics}",
        fontsize=11,
    )
    fig.tight_layout()
    return fig
