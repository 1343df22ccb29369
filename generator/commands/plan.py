"""``kvgen plan FAMILY MODEL --gpu-memory SIZE``: capacity of one deployment.

Uses this project's generated/<family>/sizing.py (run `kvgen generate` first). For each
--max-batch-size it prints the GPU budget split between target and draft pools (SIZING §6),
each pool's max tokens, the most requests of --seq-len tokens that fit at once, and the
largest max_seq_len that fits for that many requests. --plot draws tokens of capacity
against GPU memory for every speculative profile (needs matplotlib: pip install 'kvgen[plot]').

Exit codes: 0 the deployment fits, 1 the budget does not cover the fixed costs at some batch
size, 2 usage error (no generated module, unknown model or profile, matplotlib missing).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import asdict
from pathlib import Path

from kvgen.units import positive_int, size_argument

log = logging.getLogger("kvgen")

PLOT_POINTS = 64


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="plan KV-cache capacity for one model and GPU budget",
        description=__doc__.split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("family")
    parser.add_argument("model")
    parser.add_argument(
        "--gpu-memory", type=size_argument, required=True, metavar="SIZE",
        help="GPU KV-cache budget per rank: 80GiB, 1.5TiB, 512MiB or bytes",
    )  # fmt: skip
    parser.add_argument("--speculative", default="none", metavar="PROFILE")
    parser.add_argument(
        "--max-batch-size", type=positive_int, nargs="+", default=[8], metavar="B",
        help="one or more batch sizes (default: 8)",
    )  # fmt: skip
    parser.add_argument("--max-num-tokens", type=positive_int, default=8192, metavar="N")
    parser.add_argument(
        "--max-seq-len", type=positive_int, metavar="S",
        help="default: min(native, 32768)",
    )  # fmt: skip
    parser.add_argument(
        "--seq-len", type=positive_int, metavar="L",
        help="request length for max concurrent requests (default: max_seq_len)",
    )  # fmt: skip
    parser.add_argument("--tp-size", type=positive_int, default=1, metavar="T")
    parser.add_argument("--semantics", choices=("trtllm-v2", "exact"), default="trtllm-v2")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--generated", type=Path, default=Path("generated"), metavar="DIR")
    parser.add_argument("--plot", type=Path, metavar="FILE.png", help="write a capacity plot")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kvgen.planner import PlanError, load_sizing, make_plan

    try:
        sizing = load_sizing(args.family, args.generated)
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
        )
        if args.plot:
            plot(sizing, plan, args.plot)
            log.info("wrote %s", args.plot)
    except (PlanError, ValueError) as exc:
        print(f"kvgen: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # from the generated module: an error, never success
        print(
            f"kvgen: error: {args.family}/sizing.py called sys.exit({exc.code!r})", file=sys.stderr
        )
        return 2
    sys.stdout.write(as_json(plan) if args.format == "json" else text(plan))
    return 0 if plan.fits else 1


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def text(plan) -> str:
    from kvgen.units import format_bytes

    lines = [
        f"{plan.family}/{plan.model}, speculative {plan.speculative}, semantics {plan.semantics}",
        f"GPU KV budget {format_bytes(plan.gpu_memory)}; max_num_tokens {plan.max_num_tokens}, "
        f"max_seq_len {plan.max_seq_len} (native {plan.native_max_seq_len}), "
        f"tp_size {plan.tp_size}",
        f"max concurrent requests of {plan.seq_len} tokens: {plan.max_requests}",
    ]
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
    return "".join(f"{line}\n" for line in lines)


def as_json(plan) -> str:
    data = asdict(plan)
    data["fits"] = plan.fits
    return json.dumps(data, indent=2) + "\n"


def plot(sizing, plan, path: Path) -> None:
    """Target max tokens against GPU memory, one line per speculative profile (Agg backend)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        logging.getLogger("matplotlib").setLevel(logging.WARNING)  # font cache chatter
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError(
            "--plot needs matplotlib, which is not installed: pip install 'kvgen[plot]'"
        ) from None
    from kvgen.planner import capacity_curve, profiles_for
    from kvgen.units import GiB, format_size

    budgets = [plan.gpu_memory * i // PLOT_POINTS for i in range(PLOT_POINTS + 1)]
    batch = plan.batches[0].max_batch_size
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for profile in profiles_for(sizing, plan.model):
        tokens = capacity_curve(
            sizing, plan.model, budgets, speculative=profile, max_batch_size=batch,
            max_num_tokens=plan.max_num_tokens, max_seq_len=plan.max_seq_len,
            tp_size=plan.tp_size, semantics=plan.semantics,
        )  # fmt: skip
        points = [(b / GiB, t) for b, t in zip(budgets, tokens, strict=True) if t is not None]
        ax.plot([p[0] for p in points], [p[1] for p in points], label=profile)
    ax.set_xlabel("GPU KV-cache memory (GiB)")
    ax.set_ylabel("target max tokens")
    ax.set_title(
        f"{plan.family}/{plan.model}: batch {batch}, max_seq_len {plan.max_seq_len}, "
        f"up to {format_size(plan.gpu_memory)}"
    )
    ax.grid(True, alpha=0.3)
    ax.legend(title="speculative")
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
