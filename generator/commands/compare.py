"""``kvgen compare FAMILY MODEL --gpu-memory SIZE``: what each engine gives one model.

Side by side for one KV budget: TensorRT-LLM V2 (kvgen's reference model), vLLM 0.33.0 and
SGLang 0.5.23 (kvgen.engines, verified against numbers the engines' own code produced). For
each engine: tokens the KV cache holds, requests of --max-seq-len tokens at once, bytes one such
request needs, blocks of the pool, and every policy term that makes it differ, in numbers.
FAMILY is a spec name under schema/families/ or a path to a spec file. Each engine uses its
own page size unless --block-size is given. --plot draws KV tokens against memory per engine
(needs matplotlib: pip install 'kvgen[plot]').

Exit codes: 0 every engine serves a request of --max-seq-len, 1 some engine cannot (it would
refuse to start, or the budget does not cover its fixed costs), 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from kvgen.exits import Exit, UsageError
from kvgen.units import positive_int, size_argument

log = logging.getLogger("kvgen")

PLOT_POINTS = 48


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare the KV-cache capacity each engine gives one model",
        description=__doc__.split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("family", help="spec name (schema/families/NAME.yaml) or spec path")
    parser.add_argument("model")
    parser.add_argument(
        "--gpu-memory", type=size_argument, required=True, metavar="SIZE",
        help="KV-cache budget per rank: 40GiB, 1.5TiB, 512MiB or bytes",
    )  # fmt: skip
    parser.add_argument(
        "--max-seq-len", type=positive_int, metavar="S", help="default: min(native, 32768)"
    )
    parser.add_argument("--max-num-tokens", type=positive_int, default=8192, metavar="N")
    parser.add_argument("--speculative", default="none", metavar="PROFILE")
    parser.add_argument(
        "--block-size", type=positive_int, metavar="T",
        help="page size for every engine (default: each engine's own)",
    )  # fmt: skip
    parser.add_argument(
        "--max-batch-size", type=positive_int, default=8, metavar="B",
        help="TensorRT-LLM's max_batch_size (default: 8)",
    )  # fmt: skip
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    parser.add_argument("--plot", type=Path, metavar="FILE.png", help="write a capacity plot")
    parser.set_defaults(func=run)


def load_family(name: str) -> Any:
    from kvgen.loader import load_path
    from kvgen.project import SPEC_DIR

    path = Path(name)
    if path.suffix not in (".yaml", ".yml"):
        path = SPEC_DIR / f"{name}.yaml"
    if not path.is_file():
        raise UsageError(f"no spec {path}; give a family under {SPEC_DIR}/ or a spec path")
    loaded = load_path(path)
    if loaded.family is None:
        for diagnostic in loaded.diagnostics:
            print(diagnostic, file=sys.stderr)
        raise UsageError(f"{path} does not load; run `kvgen lint {path}`")
    return loaded.family


def compare(family: Any, model: str, args: argparse.Namespace) -> dict[str, Any]:
    from kvgen.engines import ENGINE_VERSIONS, ENGINES, NotModelled, engine_capacity
    from kvgen.engines._terms import policy_terms

    names = [m.name for m in family.models]
    if model not in names:
        raise UsageError(f"model must be one of {', '.join(names)}; got {model!r}")
    native = family.model(model).max_seq_len
    seq_len = args.max_seq_len or min(native, 32768)
    if seq_len > native:
        raise UsageError(f"--max-seq-len must be <= {native} (native context of {model})")
    profiles = family.profiles_for(model)
    if args.speculative not in profiles:
        raise UsageError(f"--speculative must be one of {', '.join(profiles)} for {model}")
    common = {
        "max_seq_len": seq_len,
        "max_num_tokens": args.max_num_tokens,
        "speculative": args.speculative,
    }
    rows = []
    for engine in ENGINES:
        row: dict[str, Any] = {"engine": engine, "version": ENGINE_VERSIONS[engine]}
        try:
            cap = engine_capacity(
                family, model, args.gpu_memory, engine=engine, block_size=args.block_size,
                max_batch_size=args.max_batch_size, **common,
            )  # fmt: skip
            row.update(cap._asdict())
        except NotModelled as exc:
            row["not_modelled"] = str(exc)
        except ValueError as exc:
            row["error"] = str(exc)
        try:
            terms = policy_terms(
                family, model, engine=engine, block_size=args.block_size,
                max_batch_size=args.max_batch_size, **common,
            )  # fmt: skip
            row["terms"] = [t._asdict() for t in terms]
        except ValueError:
            row["terms"] = []
        rows.append(row)
    return {
        "family": family.family,
        "model": model,
        "gpu_memory": args.gpu_memory,
        "max_seq_len": seq_len,
        "max_num_tokens": args.max_num_tokens,
        "speculative": args.speculative,
        "block_size": args.block_size,
        "engines": rows,
    }


def _cells(row: dict[str, Any]) -> list[str]:
    if "error" in row or "not_modelled" in row:
        gap = "-" if "error" in row else "n/a"
        return [row["engine"], row["version"], gap, gap, gap, gap]
    return [
        row["engine"],
        row["version"],
        f"{row['kv_tokens']:,}",
        f"{row['max_concurrency']:.3f}",
        f"{row['request_bytes']:,}",
        f"{row['num_blocks']:,}",
    ]


HEADER = ["engine", "version", "KV tokens", "max concurrency", "request bytes", "blocks"]


def text(result: dict[str, Any]) -> str:
    from kvgen.units import format_bytes

    rows = [HEADER] + [_cells(r) for r in result["engines"]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = [
        f"{result['family']}/{result['model']}: KV budget {format_bytes(result['gpu_memory'])}, "
        f"max_seq_len {result['max_seq_len']}, max_num_tokens {result['max_num_tokens']}, "
        f"speculative {result['speculative']}",
        "",
    ]
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])]
        cells += [c.rjust(w) for c, w in zip(row[2:], widths[2:], strict=True)]
        lines.append("  " + "  ".join(cells).rstrip())
    for row in result["engines"]:
        if "error" in row or "not_modelled" in row or row["terms"]:
            lines += ["", f"{row['engine']}:"]
        if "error" in row:
            lines.append(f"  cannot serve: {row['error']}")
        if "not_modelled" in row:
            lines.append(f"  not modelled: {row['not_modelled']}")
        lines += [f"  {t['name']}: {t['detail']}" for t in row["terms"]]
    return "".join(f"{line}\n" for line in lines)


def markdown(result: dict[str, Any]) -> str:
    from kvgen.units import format_bytes

    lines = [
        f"`{result['family']}/{result['model']}`, KV budget {format_bytes(result['gpu_memory'])}, "
        f"max_seq_len {result['max_seq_len']}, max_num_tokens {result['max_num_tokens']}:",
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "|".join(["---"] * 2 + ["---:"] * 4) + "|",
    ]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in result["engines"]]
    lines.append("")
    for row in result["engines"]:
        if "error" in row:
            lines.append(f"- {row['engine']}: cannot serve: {row['error']}")
        if "not_modelled" in row:
            lines.append(f"- {row['engine']}: not modelled: {row['not_modelled']}")
        lines += [f"- {row['engine']} `{t['name']}`: {t['detail']}" for t in row["terms"]]
    return "".join(f"{line}\n" for line in lines)


def plot(family: Any, model: str, args: argparse.Namespace, result: dict[str, Any]) -> None:
    """KV tokens against memory, one line per engine (Agg backend, deterministic points)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise UsageError("--plot needs matplotlib: pip install 'kvgen[plot]'") from exc
    from kvgen.commands.plan import STYLES, human_tokens
    from kvgen.engines import ENGINES, engine_capacity
    from kvgen.files import save_figure
    from kvgen.progress import Progress
    from matplotlib.ticker import FuncFormatter

    budgets = [args.gpu_memory * (i + 1) // PLOT_POINTS for i in range(PLOT_POINTS)]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    try:
        with Progress("plotting", len(ENGINES) + 1) as progress:
            for index, engine in enumerate(ENGINES):
                progress.advance(engine)
                line, marker = STYLES[index % len(STYLES)]
                xs, ys = [], []
                for budget in budgets:
                    try:
                        cap = engine_capacity(
                            family, model, budget, engine=engine, block_size=args.block_size,
                            max_seq_len=result["max_seq_len"], max_num_tokens=args.max_num_tokens,
                            max_batch_size=args.max_batch_size, speculative=args.speculative,
                        )  # fmt: skip
                    except ValueError:
                        continue
                    xs.append(budget / (1 << 30))
                    ys.append(cap.kv_tokens)
                # Own dash and marker per engine: lines that coincide stay distinguishable.
                ax.plot(
                    xs,
                    ys,
                    label=engine,
                    linestyle=line,
                    marker=marker,
                    markevery=(index, 4),
                )
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: human_tokens(v)))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.axvline(args.gpu_memory / (1 << 30), color="grey", linewidth=0.8, linestyle=":")
            ax.set_xlabel("KV budget (GiB; dotted: --gpu-memory)")
            ax.set_ylabel("KV tokens")
            ax.set_title(f"{result['family']}/{model}, max_seq_len {result['max_seq_len']}")
            ax.legend()
            fig.tight_layout()
            progress.advance(f"writing {args.plot}")
            save_figure(fig, args.plot, metadata={"Software": None})
    finally:
        plt.close(fig)


def run(args: argparse.Namespace) -> int:
    family = load_family(args.family)
    result = compare(family, args.model, args)
    if args.plot:
        plot(family, args.model, args, result)
        log.info("wrote %s", args.plot)
    if args.format == "json":
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
    else:
        sys.stdout.write(markdown(result) if args.format == "markdown" else text(result))
    failed = any("error" in row for row in result["engines"])
    return Exit.FINDINGS if failed else Exit.OK
