"""``kvgen engines``: the engines kvgen answers for and the releases of each it models.

One block per engine: the names it is taken by, then each release modelled, oldest first, as
``NAME==VERSION`` selects it (the one the engine's name alone selects is marked "default"),
with what that release decides: its default block (page) size, its memory fraction default
and where it comes from, the settings and speculative modes it refuses to start with (in its
own words), what its launch settings change beyond the KV budget, and whether
``engine_capacity`` answers for it. ``differs from X`` lists what a release changes against
the release before it (docs/engines.md, "Releases").

Exit codes: 0 listed.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kvgen._util.exits import Exit


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "engines",
        help="list the engine releases kvgen models and how each differs",
        description=__doc__.split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(func=run)


def facts(found: Any) -> dict[str, Any]:
    """What ``found`` (a Release) decides, in output's words."""
    memory = found.memory
    return {
        "release": found.spelling,
        "named": found.named,
        "shown": found.shown,
        "block_size": found.block_size or "the spec's tokens_per_block",
        "memory_fraction": {
            "field": memory.fraction_field,
            "default": memory.default_fraction
            if memory.default_fraction is not None
            else "computed per deployment",
            "source": memory.fraction_source,
        },
        "refuses": [f"{keyword}: {words}" for keyword, words in found.refuses]
        + [
            f"speculative mode {mode}: {words!r} ({source})"
            for mode, words, source in found.refuses_modes
        ]
        + [
            f"{keyword} below {floor}: {words!r} ({source})"
            for keyword, floor, words, source in found.minimums
        ],
        "launch_notes": list(found.launch_notes),
        "engine_capacity": "answers",  # every release modelled (the key kept for readers)
        # TensorRT-LLM: how the release splits its budget between managers and pools
        "budget_split": "per request (docs/cost-model.md §11)"
        if found.per_request_split
        else "by slope (docs/cost-model.md §4)"
        if found.engine.cost_functions
        else "",
    }


def listing() -> list[dict[str, Any]]:
    from kvgen.sizing.engines_registry import ENGINES, default_release, releases_of

    out = []
    for engine in ENGINES:
        default = default_release(engine)
        releases = []
        previous: dict[str, Any] | None = None
        for each in releases_of(engine):
            entry = facts(each)
            entry["default"] = each is default
            if previous is not None:
                keys = ("block_size", "memory_fraction", "refuses", "launch_notes",
                        "engine_capacity", "budget_split")  # fmt: skip
                entry["differs_from"] = {
                    "release": previous["release"],
                    "fields": [k for k in keys if entry[k] != previous[k]],
                }
            releases.append(entry)
            previous = entry
        out.append({"engine": engine.name, "aliases": list(engine.aliases),
                    "title": engine.title, "releases": releases})  # fmt: skip
    return out


def text(engines: list[dict[str, Any]]) -> str:
    lines = []
    for engine in engines:
        names = ", ".join([engine["engine"], *engine["aliases"]])
        lines.append(f"{engine['title']} ({names})")
        for each in engine["releases"]:
            mark = " (default)" if each["default"] else ""
            lines.append(f"  {each['release']}{mark}: {each['named']}")
            lines.append(f"    block size: {each['block_size']}")
            memory = each["memory_fraction"]
            lines.append(f"    {memory['field']} default: {memory['default']} ({memory['source']})")
            lines += [f"    refuses {words}" for words in each["refuses"]]
            lines += [f"    launch: {note}" for note in each["launch_notes"]]
            if each["budget_split"]:
                lines.append(f"    budget split: {each['budget_split']}")
            lines.append(f"    engine_capacity: {each['engine_capacity']}")
            if "differs_from" in each:
                moved = ", ".join(each["differs_from"]["fields"]) or "nothing kvgen models"
                lines.append(f"    differs from {each['differs_from']['release']}: {moved}")
        lines.append("")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    engines = listing()
    if args.format == "json":
        sys.stdout.write(json.dumps(engines, indent=2, allow_nan=False) + "\n")
    else:
        sys.stdout.write(text(engines))
    return Exit.OK
