"""``kvgen compare FAMILY MODEL --gpu-memory SIZE``: what each engine gives one model.

Side by side for one KV budget: TensorRT-LLM V2 (kvgen's reference model), vLLM 0.33.0 and
SGLang 0.5.23 (kvgen._engines.capacity, verified against numbers the engines' own code produced).
For each engine: tokens the KV cache holds, requests of --max-seq-len tokens at once, bytes one such
request needs, blocks of the pool, and every policy term that makes it differ, in numbers.
FAMILY is a spec name under schema/families/ or a path to a spec file. Each engine uses its
own page size unless --block-size is given; --engine restricts the rows. --tp-size, --pp-size
(TensorRT-LLM's tightest rank), --kv-cache-dtype and --rope-scaled ask what-ifs (docs/cli.md).
TensorRT-LLM's concurrency is capped at --max-batch-size; vLLM's and SGLang's are not.
--plot draws KV tokens against memory per engine, with an x where an engine's line would begin
(needs matplotlib: pip install 'kvgen[plot]').

Exit codes: 0 every engine serves a request of --max-seq-len, 1 some engine cannot (it would
refuse to start, the budget does not cover its fixed costs, or it holds less than one request
at that length), 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any, NamedTuple

from kvgen._cli.commands._knobs import (
    add_engine,
    add_gpu_memory,
    add_heterogeneous_vocab,
    add_knobs,
    add_mamba_strategy,
    aliases,
    check_length,
    overrides,
)
from kvgen._util.exits import Exit, UsageError
from kvgen._util.units import positive_int, token_count
from kvgen.sizing.engines_registry import (
    DEFAULT_MAX_BATCH_SIZE,
    DEFAULT_MAX_NUM_TOKENS,
    DEFAULT_MAX_SEQ_LEN,
    Engine,
    Release,
)

log = logging.getLogger("kvgen")

PLOT_POINTS = 48


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare the KV-cache capacity each engine gives one model",
        description=__doc__.split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("family", help="spec name (schema/families/NAME.yaml) or spec path")
    parser.add_argument("model")
    add_gpu_memory(parser, required=True)
    add_engine(parser, many=True)
    parser.add_argument(
        "--max-seq-len", *aliases("--max-seq-len"), type=token_count, metavar="S",
        help=f"default: min(native, {DEFAULT_MAX_SEQ_LEN})",
    )  # fmt: skip
    parser.add_argument(
        "--max-num-tokens", *aliases("--max-num-tokens"), type=token_count,
        default=DEFAULT_MAX_NUM_TOKENS, metavar="N",
    )  # fmt: skip
    parser.add_argument("--speculative", default="none", metavar="PROFILE")
    add_knobs(parser)
    parser.add_argument(
        "--max-batch-size", *aliases("--max-batch-size"), type=positive_int,
        default=DEFAULT_MAX_BATCH_SIZE, metavar="B",
        help=f"TensorRT-LLM's max_batch_size (default: {DEFAULT_MAX_BATCH_SIZE})",
    )  # fmt: skip
    add_mamba_strategy(parser)
    add_heterogeneous_vocab(parser)
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    parser.add_argument("--plot", type=Path, metavar="FILE.png", help="write a capacity plot")
    parser.set_defaults(func=run)


def load_family(name: str, args: argparse.Namespace | None = None) -> Any:
    """The spec ``name``, with the what-if knobs of ``args`` applied (kvgen._engines.whatif)."""
    from kvgen._engines.whatif import spec_path, whatif_family
    from kvgen._spec.loader import load_path

    path = spec_path(name)
    loaded = load_path(path)
    if loaded.family is None:
        for diagnostic in loaded.diagnostics:
            print(diagnostic, file=sys.stderr)
        raise UsageError(f"{path} does not load; run `kvgen lint {path}`")
    if args is None or args.model not in [m.name for m in loaded.family.models]:
        return loaded.family  # an unknown model is named by compare()
    native = loaded.family.model(args.model).max_seq_len
    check_length(args, args.model, native)
    wanted = overrides(args, args.model, native, page_in_spec=False)
    return whatif_family(path, wanted) if wanted else loaded.family


def releases(args: argparse.Namespace) -> list[Release]:
    """The releases ``--engine`` names (each once, in the registry's order), else each engine's
    default release."""
    from kvgen.sizing.engines_registry import ENGINES, RELEASES, default_release

    wanted = args.engine or [default_release(engine) for engine in ENGINES]
    return sorted(set(wanted), key=lambda r: (ENGINES.index(r.engine), RELEASES.index(r)))


def launched(args: argparse.Namespace) -> dict[str, Any]:
    """``engine_capacity``'s ``dtype`` for a ``--kv-cache-dtype`` of a plain float: the engine
    launched with that model dtype, whose cache follows it (an engine's "auto" may serve the
    checkpoint in another: ``Release.cache_dtype``); nothing for a quantized cache dtype."""
    from kvgen.sizing.engines_registry import MODEL_DTYPES

    asked = getattr(args, "kv_cache_dtype", None)  # a caller's own namespace may lack it
    return {"dtype": asked} if asked in MODEL_DTYPES else {}


def engine_keywords(args: argparse.Namespace, engine: Engine) -> dict[str, Any]:
    """The keywords of ``engine_capacity`` and ``policy_terms`` that only some engines read,
    as asked, for ``engine`` (SGLang's Mamba radix cache strategy, vLLM's
    use_heterogeneous_vocab where given)."""
    asked = {"mamba_radix_cache_strategy": args.mamba_radix_cache_strategy}
    if args.heterogeneous_vocab:
        asked["heterogeneous_vocab"] = True
    return {key: value for key, value in asked.items() if key in engine.reads}


def compare(family: Any, model: str, args: argparse.Namespace) -> dict[str, Any]:
    from kvgen._engines._terms import policy_terms
    from kvgen._engines.capacity import NotModelled, engine_capacity

    names = [m.name for m in family.models]
    if model not in names:
        raise UsageError(f"model must be one of {', '.join(names)}; got {model!r}")
    native = family.model(model).max_seq_len
    seq_len = args.max_seq_len or min(native, DEFAULT_MAX_SEQ_LEN)
    if seq_len > native:
        raise UsageError(f"--max-seq-len must be <= {native} (native context of {model})")
    unmodelled = None
    if args.dcp_size != 1:
        unmodelled = (
            "the engine models size the pools without decode context parallelism "
            "(`kvgen plan --dcp-size` plans TensorRT-LLM V2's ranks)"
        )
    profiles = family.profiles_for(model)
    if args.speculative not in profiles:
        raise UsageError(f"--speculative must be one of {', '.join(profiles)} for {model}")
    common = {
        "max_seq_len": seq_len,
        "max_num_tokens": args.max_num_tokens,
        "speculative": args.speculative,
    }
    rows = []
    for found in releases(args):
        engine = found.engine
        row: dict[str, Any] = {"engine": engine.label, "version": found.shown,
                               "release": found.described}  # fmt: skip
        own = engine_keywords(args, engine)
        # engine_capacity and the terms answer in the cache dtype the engine serves the model
        # in (launched with the model dtype --kv-cache-dtype asks for): what it is, said here
        if args.kv_cache_dtype is None:
            from kvgen._engines.dtype import served_note

            served = served_note(family, model, found)
            if served:
                row["dtype"] = served
        try:
            if unmodelled is not None:
                raise NotModelled(unmodelled)
            # Each pipeline stage sizes its own layers in its own budget: the tightest rank
            # (fewest tokens) is what the deployment serves.
            caps = [
                engine_capacity(
                    family, model, args.gpu_memory, engine=found.spelling,
                    block_size=args.block_size, max_batch_size=args.max_batch_size,
                    tp_size=args.tp_size, **common, **own, **launched(args),
                    **({} if args.pp_size == 1 else {"pp_size": args.pp_size, "pp_rank": rank}),
                )
                for rank in range(args.pp_size if engine.pipeline_parallel else 1)
            ]  # fmt: skip
            cap = min(caps, key=lambda c: c.kv_tokens)
            row.update(cap._asdict())
            if args.pp_size != 1:
                row["pp_rank"] = caps.index(cap)
            if cap.max_concurrency < 1:  # it starts, but one request at the length never fits
                row["error"] = f"holds {cap.max_concurrency:.3f} of one request of {seq_len} tokens"
            elif engine.caps_concurrency and cap.max_concurrency == args.max_batch_size:
                row["capped"] = (
                    f"concurrency capped at max_batch_size {args.max_batch_size} (the engine "
                    f"admits no more requests at once); its tokens hold "
                    f"{cap.kv_tokens / seq_len:.3f} requests of {seq_len}"
                )
        except NotModelled as exc:
            row["not_modelled"] = str(exc)
        except ValueError as exc:
            row["error"] = str(exc)
        try:
            terms = policy_terms(
                family, model, engine=found.spelling, block_size=args.block_size,
                max_batch_size=args.max_batch_size, **common, **own, **launched(args),
            )  # fmt: skip
            # The terms are sized at tp 1 for the whole model: elsewhere their bytes would be
            # wrong figures.
            whole = (args.tp_size, args.pp_size, args.dcp_size) == (1, 1, 1)
            row["terms"] = [t._asdict() for t in terms] if whole else []
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
        "tp_size": args.tp_size,
        "pp_size": args.pp_size,
        "dcp_size": args.dcp_size,
        "kv_cache_dtype": args.kv_cache_dtype,
        "rope_scaled": bool(args.rope_scaled and args.max_seq_len),
        "engines": rows,
    }


def _cells(row: dict[str, Any]) -> list[str]:
    if "kv_tokens" not in row:
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
    from kvgen._util.units import format_bytes

    rows = [HEADER] + [_cells(r) for r in result["engines"]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = [
        f"{result['family']}/{result['model']}: KV budget {format_bytes(result['gpu_memory'])}, "
        f"max_seq_len {result['max_seq_len']}, max_num_tokens {result['max_num_tokens']}, "
        f"speculative {result['speculative']}{_knobs(result)}",
        "",
    ]
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])]
        cells += [c.rjust(w) for c, w in zip(row[2:], widths[2:], strict=True)]
        lines.append("  " + "  ".join(cells).rstrip())
    lines.append(_releases(result))
    for row in result["engines"]:
        if {"error", "not_modelled", "capped", "dtype"} & set(row) or row["terms"]:
            lines += ["", f"{row['engine']}:"]
        if "dtype" in row:
            lines.append(f"  {row['dtype']}")
        if "error" in row:
            lines.append(f"  cannot serve: {row['error']}")
        if "not_modelled" in row:
            lines.append(f"  not modelled: {row['not_modelled']}")
        if "capped" in row:
            lines.append(f"  {row['capped']}")
        lines += [f"  {t['name']}: {t['detail']}" for t in row["terms"]]
    lines += ["", CAP_NOTE]
    return "".join(f"{line}\n" for line in lines)


CAP_NOTE = (
    "max concurrency: TensorRT-LLM's is capped at --max-batch-size (it admits no more requests "
    "at once); vLLM's and SGLang's are not (max_num_seqs / max_running_requests do not size "
    "the pool, except SGLang's speculative state reserve on recurrent hybrids, which "
    "--max-batch-size sets as max_running_requests); SGLang runs at most one request per 5 "
    "state slots of a recurrent hybrid (its extra_buffer Mamba radix cache on CUDA), whatever "
    "its tokens hold"
)


def _releases(result: dict[str, Any]) -> str:
    """The engine releases the rows answer for (``kvgen engines`` lists those modelled)."""
    return "  releases: " + "; ".join(row["release"] for row in result["engines"])


def _knobs(result: dict[str, Any]) -> str:
    """The what-if knobs given, for the heading (nothing at the defaults)."""
    out = ""
    for key in ("tp_size", "pp_size", "dcp_size"):
        if result[key] != 1:
            out += f", {key} {result[key]}"
    if result["kv_cache_dtype"] is not None:
        out += f", kv_cache_dtype {result['kv_cache_dtype']} (override)"
    if result["rope_scaled"]:
        out += " (RoPE-scaled)"
    return out


def markdown(result: dict[str, Any]) -> str:
    from kvgen._util.units import format_bytes

    lines = [
        f"`{result['family']}/{result['model']}`, KV budget {format_bytes(result['gpu_memory'])}, "
        f"max_seq_len {result['max_seq_len']}, max_num_tokens {result['max_num_tokens']}"
        f"{_knobs(result)}:",
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "|".join(["---"] * 2 + ["---:"] * 4) + "|",
    ]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in result["engines"]]
    lines += ["", _releases(result).strip()]
    lines.append("")
    for row in result["engines"]:
        if "error" in row:
            lines.append(f"- {row['engine']}: cannot serve: {row['error']}")
        if "not_modelled" in row:
            lines.append(f"- {row['engine']}: not modelled: {row['not_modelled']}")
        if "capped" in row:
            lines.append(f"- {row['engine']}: {row['capped']}")
        lines += [f"- {row['engine']} `{t['name']}`: {t['detail']}" for t in row["terms"]]
    lines.append(f"- {CAP_NOTE}")
    return "".join(f"{line}\n" for line in lines)


class Curve(NamedTuple):
    """One engine's line of the plot: its points, and where it starts."""

    xs: list[float]  # budgets in GiB where the engine serves one request at max_seq_len
    ys: list[int]  # its KV tokens there
    label: str  # the legend entry, saying where (or that) the engine refuses to start
    start: int | None  # the least budget on the grid it starts at (None: none of them)


def engine_curve(
    family: Any,
    model: str,
    args: argparse.Namespace,
    seq_len: int,
    found: Release,
    budgets: list[int],
) -> Curve:
    """The engine's KV tokens over ``budgets``. A budget where the engine refuses to start, or
    starts but cannot hold one request of ``seq_len`` tokens, has no point; the label says
    which, and below which budget, so a late or missing line is never silent."""
    from kvgen._engines.capacity import NotModelled, engine_capacity
    from kvgen._util.units import format_size

    engine = found.spelling  # the legend names the release (vllm==0.34.0), as --engine selects it
    xs: list[float] = []
    ys: list[int] = []
    why = "refuses to start"  # vLLM raises: it would not start; the others start but hold < 1
    for budget in budgets:
        try:
            cap = engine_capacity(
                family, model, budget, engine=found.spelling, block_size=args.block_size,
                max_seq_len=seq_len, max_num_tokens=args.max_num_tokens, tp_size=args.tp_size,
                max_batch_size=args.max_batch_size, speculative=args.speculative,
                **launched(args),
            )  # fmt: skip
        except NotModelled:
            return Curve([], [], f"{engine} (not modelled)", None)
        except ValueError:
            why = "refuses to start"
            continue
        if cap.max_concurrency < 1:
            why = f"holds < 1 request of {seq_len}"
            continue
        if not xs:
            start = budget
        xs.append(budget / (1 << 30))
        ys.append(cap.kv_tokens)
    if not xs:
        return Curve(xs, ys, f"{engine} ({why} up to {format_size(budgets[-1])})", None)
    if start == budgets[0]:
        return Curve(xs, ys, engine, start)
    return Curve(xs, ys, f"{engine} ({why} below {format_size(start)}, x)", start)


def plot(family: Any, model: str, args: argparse.Namespace, result: dict[str, Any]) -> None:
    """KV tokens against memory, one line per engine (Agg backend, deterministic points); an x
    on the axis marks the budget below which an engine refuses to start (legend: the budget)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise UsageError("--plot needs matplotlib: pip install 'kvgen[plot]'") from exc
    from kvgen._cli.commands.plan import STYLES, human_tokens
    from kvgen._util.files import save_figure
    from kvgen._util.progress import Progress
    from matplotlib.ticker import FuncFormatter

    budgets = [args.gpu_memory * (i + 1) // PLOT_POINTS for i in range(PLOT_POINTS)]
    engines = releases(args)  # the rows of ``result``, in its order
    fig, ax = plt.subplots(figsize=(7, 4.5))
    try:
        with Progress("plotting", len(engines) + 1) as progress:
            for index, found in enumerate(engines):
                progress.advance(found.engine.label)
                line, marker = STYLES[index % len(STYLES)]
                curve = engine_curve(family, model, args, result["max_seq_len"], found, budgets)
                # Own dash and marker per engine: lines that coincide stay distinguishable.
                (drawn,) = ax.plot(
                    curve.xs,
                    curve.ys,
                    label=curve.label,
                    linestyle=line,
                    marker=marker,
                    markevery=(index, 4),
                )
                if curve.start != budgets[0]:  # where the line would begin: the engine refuses
                    at = (curve.start or budgets[-1]) / (1 << 30)
                    ax.plot([at], [0], marker="x", markersize=9, color=drawn.get_color(),
                            clip_on=False, zorder=5)  # fmt: skip
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: human_tokens(v)))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.axvline(args.gpu_memory / (1 << 30), color="grey", linewidth=0.8, linestyle=":")
            ax.set_xlabel("KV budget (GiB; dotted: --gpu-memory)")
            ax.set_ylabel("KV tokens")
            ax.set_title(f"{result['family']}/{model}, max_seq_len {result['max_seq_len']}")
            ax.legend(fontsize=8)
            fig.tight_layout()
            progress.advance(f"writing {args.plot}")
            save_figure(fig, args.plot, metadata={"Software": None})
    finally:
        plt.close(fig)


def run(args: argparse.Namespace) -> int:
    family = load_family(args.family, args)
    result = compare(family, args.model, args)
    if args.plot:
        plot(family, args.model, args, result)
        log.info("wrote %s", args.plot)
    if args.format == "json":
        sys.stdout.write(json.dumps(result, indent=2, allow_nan=False) + "\n")
    else:
        sys.stdout.write(markdown(result) if args.format == "markdown" else text(result))
    failed = any("error" in row for row in result["engines"])
    return Exit.FINDINGS if failed else Exit.OK
