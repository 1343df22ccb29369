"""``kvgen models [NAME ...]``: the families and models kvgen can plan from here.

One row per model of every family in this project's output folder and every family kvgen
ships (a project's own family shadows a shipped one of the same name, as in `kvgen plan`):
its native max_seq_len, the KV bytes one token of history costs (the slope of its
cache_costs at tp 1 in the spec's dtype: 0 where every layer's cache is bounded by a window,
a chunk or a recurrent state), the KV cache of one request of max_seq_len tokens (slope x
max_seq_len plus the fixed part: window pages, recurrent state and one context chunk of up to
8192 tokens, TensorRT-LLM V2's cost), where the family comes from (shipped, or this
project's), and its speculative profiles. NAME narrows the list: a family, a model, or a
Hugging Face style name (meta-llama/Llama-3.1-70B-Instruct is llama3_1_70b: the
organisation, case, punctuation and the words instruct, it, chat, hf and base are ignored).

Exit codes: 0 listed, 2 usage error (a NAME that matches no family or model, named with a
"did you mean").
"""

from __future__ import annotations

import argparse
import json
import sys
import types
from dataclasses import asdict, dataclass
from pathlib import Path

from kvgen._util.exits import Exit, UsageError

HEADER = ("family", "model", "max_seq_len", "KV B/token", "KV/request", "source", "profiles")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "models",
        help="list the families and models kvgen can plan here",
        description=__doc__.split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "names", nargs="*", metavar="NAME",
        help="a family, a model or a Hugging Face name (default: every model)",
    )  # fmt: skip
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class Row:
    family: str
    model: str
    max_seq_len: int
    kv_bytes_per_token: int | None  # None: the module does not answer at these defaults
    kv_bytes_per_request: int | None  # one request of max_seq_len tokens
    source: str  # "shipped" or "project"
    profiles: tuple[str, ...]  # besides "none"


def rows(generated: Path) -> list[Row]:
    """Every model ``kvgen plan`` finds from here (the project's output folder ``generated``,
    then the shipped families), in family order and each family's own model order."""
    import logging

    from kvgen._engines.planner import PlanError, load_sizing, profiles_for
    from kvgen._generate.shipped import known_families, locate, shipped_generated, shipped_same

    log = logging.getLogger("kvgen")
    found = [locate(name, generated, quiet=True) for name in known_families(generated)]
    shipped = shipped_generated()
    out: list[Row] = []
    # One folder after the other: each import of the other folder re-imports the runtime.
    for where in sorted(found, key=lambda f: (f.generated != shipped, f.name)):
        try:
            sizing = load_sizing(where.name, where.generated, quiet=True)
        except PlanError as exc:  # a project's broken or stale module: said, not listed
            log.warning("%s: not listed: %s", where.name, exc)
            continue
        source = "shipped" if where.shipped or shipped_same(where) else "project"
        for model in sizing.MODELS:
            native = int(sizing.MAX_SEQ_LEN[model])
            profiles = tuple(p for p in profiles_for(sizing, model) if p != "none")
            slope, request = _costs(sizing, model, native)
            out.append(Row(where.name, model, native, slope, request, source, profiles))
    return sorted(out, key=lambda r: r.family)  # stable: each family's models in spec order


def _costs(sizing: types.ModuleType, model: str, native: int) -> tuple[int | None, int | None]:
    """The target pool's slope (KV bytes per token of history) and the bytes of one request
    of ``native`` tokens, at tp 1 with no speculation (TensorRT-LLM V2's cost, §4)."""
    from kvgen.sizing.engines_registry import DEFAULT_MAX_NUM_TOKENS

    try:
        cost = sizing.cache_costs(
            model, speculative="none", max_batch_size=1,
            max_num_tokens=min(DEFAULT_MAX_NUM_TOKENS, native),
            max_seq_len=native, tp_size=1,
        )["target"]  # fmt: skip
        return int(cost.slope), int(cost.slope) * native + int(cost.intercept)
    except (ValueError, KeyError, TypeError):
        return None, None


def select(all_rows: list[Row], names: list[str]) -> list[Row]:
    """The rows each NAME means (a family, a model, a Hugging Face name), in listing order;
    ``UsageError`` with a "did you mean" for a NAME that means none."""
    from kvgen._generate.shipped import closest_model, match_model

    families = sorted({r.family for r in all_rows})
    models = list(dict.fromkeys(r.model for r in all_rows))
    wanted: set[tuple[str, str]] = set()
    for name in names:
        if name in families:
            wanted |= {(r.family, r.model) for r in all_rows if r.family == name}
            continue
        matched = match_model(name, models)
        if not matched:
            near = closest_model(name, [*models, *families])
            hint = f" (did you mean {near!r}?)" if near else ""
            raise UsageError(
                f"no family or model {name!r} here or shipped with kvgen{hint}; "
                "`kvgen models` lists them all"
            )
        wanted |= {(r.family, r.model) for r in all_rows if r.model in matched}
    return [r for r in all_rows if (r.family, r.model) in wanted]


def text(selected: list[Row]) -> str:
    from kvgen._util.units import format_size

    table = [list(HEADER)]
    for r in selected:
        per_token = "-" if r.kv_bytes_per_token is None else f"{r.kv_bytes_per_token:,}"
        request = "-" if r.kv_bytes_per_request is None else format_size(r.kv_bytes_per_request)
        table.append(
            [r.family, r.model, f"{r.max_seq_len:,}", per_token, request, r.source,
             ", ".join(r.profiles) or "-"]
        )  # fmt: skip
    widths = [max(len(row[i]) for row in table) for i in range(len(HEADER))]
    right = {2, 3, 4}  # the numbers
    lines = [
        "  ".join(
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in table
    ]
    families = len({r.family for r in selected})
    noun = "family" if families == 1 else "families"
    models = "model" if len(selected) == 1 else "models"
    lines.append(f"{len(selected)} {models} of {families} {noun}")
    return "".join(f"{line}\n" for line in lines)


def run(args: argparse.Namespace) -> Exit:
    all_rows = rows(args.project.out_dir)
    selected = select(all_rows, args.names) if args.names else all_rows
    if args.format == "json":
        data = [{**asdict(r), "profiles": list(r.profiles)} for r in selected]
        sys.stdout.write(json.dumps(data, indent=2, allow_nan=False) + "\n")
    else:
        sys.stdout.write(text(selected))
    return Exit.OK
