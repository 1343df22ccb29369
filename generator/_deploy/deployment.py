"""``kvgen plan --deployment deploy.toml``: several models on one node, one table.

The file is data (``tomllib``; nothing in it runs), read through ``kvgen._util.files`` with a size
bound; a problem is a usage error at ``file:line:col`` with a "did you mean"::

    gpu = "H100-80GB"          # the node's GPUs: a name or a size
    gpus = 8

    [models.llama70b]          # one table per model; the name labels its row
    family = "llama3"
    model = "llama3_1_70b"
    engine = "vllm"            # vllm, sglang or trtllm; NAME==VERSION for a release
    tp_size = 4                # GPUs per replica (tp x pp) out of the node's
    gpus = 8                   # optional: its GPUs, tp_size each replica (default tp_size)
    weights = "/models/Llama-3.1-70B"   # safetensors (relative to this file) or a size per rank
    # or checkpoint_size = "141GiB": the whole checkpoint's bytes, divided per rank by tp_size
    max_seq_len = 32768
    max_batch_size = 64
    # optional: max_num_tokens, block_size, speculative, gpu_memory_utilization, reserve
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvgen._util.exits import Exit, UsageError

if TYPE_CHECKING:
    from kvgen._deploy.rank import RankPlan

__all__ = ["MODEL_KEYS", "NODE_KEYS", "read", "run_file"]

MAX_DEPLOYMENT_BYTES = 1 << 20
NODE_KEYS: dict[str, type | tuple[type, ...]] = {"gpu": str, "gpus": int, "models": dict}
MODEL_KEYS: dict[str, type | tuple[type, ...]] = {
    "family": str,
    "model": str,
    "engine": str,
    "tp_size": int,
    "weights": str,
    "checkpoint_size": str,
    "gpus": int,
    "max_seq_len": int,
    "max_batch_size": int,
    "max_num_tokens": int,
    "block_size": int,
    "speculative": str,
    "gpu_memory_utilization": (float, int),
    "reserve": str,
    "gpu_memory": str,
}
REQUIRED = ("family", "model", "engine")


def _error(path: Path, text: str, table: str, key: str, message: str) -> UsageError:
    from kvgen._generate.config import _position

    line, col = _position(text, key, table)
    return UsageError(f"{Path(os.path.relpath(path)).as_posix()}:{line}:{col}: {message}")


def _check(
    path: Path,
    text: str,
    table: str,
    section: dict[str, Any],
    known: dict[str, type | tuple[type, ...]],
) -> None:
    from kvgen._util.escaping import text as shown
    from kvgen._util.suggest import did_you_mean

    where = f"[{shown(table)}]" if table else "the top level"
    for key, value in section.items():
        if key not in known:
            hint = did_you_mean(key, known) or f" (known keys: {', '.join(known)})"
            message = f"unknown key '{shown(key)}' in {where}{hint}"
            raise _error(path, text, table, key, message)
        expected = known[key]
        if not isinstance(value, expected) or isinstance(value, bool):
            kinds: dict[type | tuple[type, ...], str] = {
                str: "a string",
                int: "an integer",
                dict: "a table",
            }
            kind = kinds.get(expected, "a number")
            raise _error(path, text, table, key, f"{key} must be {kind}")
        problem = _invalid(key, value)
        if problem:
            raise _error(path, text, table, key, f"{key}: {problem}")


def _invalid(key: str, value: Any) -> str | None:
    """What the flag's own validator (``kvgen._util.units``) says of a file's number, or None: a
    fraction in (0, 1], finite; a count in [1, 2**63 - 1]."""
    from kvgen._util.units import count, fraction

    check = fraction if key == "gpu_memory_utilization" else count if type(value) is int else None
    try:
        if check is not None:
            check(value)
    except ValueError as exc:
        return str(exc)
    return None


def read(path: Path) -> tuple[dict[str, Any], str]:
    """The checked table of a deployment file and its text (for positions)."""
    from kvgen._generate.config import decode_toml_text, toml_error, tomllib
    from kvgen._util.escaping import text as shown
    from kvgen._util.files import Refused, read_bytes
    from kvgen._util.nesting import MAX_DEPTH, position, toml_too_deep
    from kvgen.sizing.engines_registry import release

    display = Path(os.path.relpath(path)).as_posix()
    try:
        raw = read_bytes(path, limit=MAX_DEPLOYMENT_BYTES, root=path.parent)
    except Refused as exc:
        raise UsageError(exc.diagnostic.render()) from None
    text = decode_toml_text(display, raw)
    deep = toml_too_deep(text)
    if deep is not None:  # tomllib recurses once per level: refused before it runs
        line, col = position(text, deep)
        raise UsageError(
            f"{display}:{line}:{col}: arrays and inline tables nest deeper than {MAX_DEPTH} "
            "levels (a deployment file needs none: flatten it)"
        )
    from kvgen._util.toml import check_lines

    check_lines(display, text)  # the line rule, as for specs: positions are git's (KV015)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(toml_error(display, exc)) from None
    _check(path, text, "", data, NODE_KEYS)
    for key in ("gpu", "models"):
        if key not in data:
            raise UsageError(f"{display}:1:1: a deployment needs `{key}` (see docs/deploy.md)")
    for name, entry in data["models"].items():
        table = f"models.{name}"
        if not isinstance(entry, dict):
            raise _error(path, text, "models", name, f"[{shown(table)}] must be a table")
        _check(path, text, table, entry, MODEL_KEYS)
        missing = [key for key in REQUIRED if key not in entry]
        if missing:
            line = _header_line(text, table)
            raise UsageError(f"{display}:{line}:1: [{shown(table)}] needs {', '.join(missing)}")
        try:
            release(entry["engine"])
        except ValueError as exc:
            raise _error(path, text, table, "engine", shown(str(exc))) from None
    return data, text


def _header_line(text: str, table: str) -> int:
    from kvgen._util.toml import header_line

    return header_line(text, table)


def run_file(path: Path, generated: Path, form: str) -> Exit:
    from kvgen._deploy.gpus import GpuError
    from kvgen._deploy.rank import Deployment, load_sizing, plan_rank
    from kvgen._deploy.report import as_json, text
    from kvgen._deploy.weights import WeightsError
    from kvgen._util.escaping import text as shown
    from kvgen._util.escaping import text_lines
    from kvgen._util.units import parse_size_with_unit
    from kvgen.sizing.engines_registry import (
        DEFAULT_MAX_BATCH_SIZE,
        DEFAULT_MAX_NUM_TOKENS,
        release,
    )

    data, source = read(path)
    plans: list[tuple[str, RankPlan]] = []
    used = 0
    for name, entry in data["models"].items():
        table = f"models.{name}"
        sizes = {}
        for key in ("reserve", "gpu_memory"):
            if key in entry:
                try:
                    sizes[key] = parse_size_with_unit(entry[key])  # as --gpu-memory reads it
                except ValueError as exc:
                    raise _error(path, source, table, key, f"{key}: {exc}") from None
        weights = entry.get("weights")
        if "checkpoint_size" in entry:
            weights = _per_rank(path, source, table, entry)
        fraction = entry.get("gpu_memory_utilization")
        d = Deployment(
            entry["family"], entry["model"], release(entry["engine"]),
            kv_budget=sizes.get("gpu_memory"),
            gpu=None if "gpu_memory" in entry else data["gpu"],
            gpus=entry.get("gpus"),
            fraction=None if fraction is None else float(fraction), weights=weights,
            reserve=sizes.get("reserve"), max_seq_len=entry.get("max_seq_len"),
            max_num_tokens=entry.get("max_num_tokens", DEFAULT_MAX_NUM_TOKENS),
            max_batch_size=entry.get("max_batch_size", DEFAULT_MAX_BATCH_SIZE),
            block_size=entry.get("block_size"),
            speculative=entry.get("speculative", "none"), tp_size=entry.get("tp_size", 1),
        )  # fmt: skip
        used += d.gpus or d.tp_size
        try:
            plans.append((name, plan_rank(load_sizing(d.family, generated), d, path.parent)))
        except GpuError as exc:
            raise _error(path, source, "", "gpu", str(exc)) from None
        except (WeightsError, ValueError) as exc:
            where = f"{Path(os.path.relpath(path)).as_posix()}:{_header_line(source, table)}:1"
            raise UsageError(f"{where}: [{shown(table)}]: {exc}") from None
    gpus = data.get("gpus")
    over = gpus is not None and used > gpus
    if form == "json":
        sys.stdout.write(as_json([p for _, p in plans]))
    elif form in ("args", "yaml"):
        sys.stdout.write(_launches(plans, form))
    else:
        # The names are the file's (escaped where they go in); each line is guarded again.
        sys.stdout.write(text_lines(_table(data, plans, used)))
        for name, plan in plans:
            sys.stdout.write(text_lines(f"\n[{shown(name)}]\n" + text(plan)))
    if over:
        print(f"kvgen: the models need {used} GPUs; the node has {gpus}", file=sys.stderr)
    fits = all(plan.fits for _, plan in plans) and not over
    return Exit.OK if fits else Exit.FINDINGS


def _per_rank(path: Path, source: str, table: str, entry: dict[str, Any]) -> str:
    """``checkpoint_size``, the whole checkpoint, as the bytes per rank: divided by tp_size
    (rounded up: the fullest rank), as ``weights`` takes it."""
    from kvgen._util.units import parse_size_with_unit

    if "weights" in entry:
        words = "give weights (a path or a size per rank) or checkpoint_size, not both"
        raise _error(path, source, table, "checkpoint_size", words)
    try:
        total = parse_size_with_unit(entry["checkpoint_size"])
    except ValueError as exc:
        raise _error(path, source, table, "checkpoint_size", f"checkpoint_size: {exc}") from None
    tp = entry.get("tp_size", 1)
    return f"{-(-total // tp)}B"


def _launches(plans: list[tuple[str, RankPlan]], form: str) -> str:
    """``--format args|yaml``: each model's launch settings, one block per model under a
    ``# [models.NAME]`` line (a model whose engine takes YAML only is given as YAML)."""
    from kvgen._deploy.emit import render

    blocks = []
    for name, plan in plans:
        if plan.launch is None:
            blocks.append(f"# [models.{name}]: no launch: {plan.refusal}\n")
            continue
        settings = plan.deployment.engine.engine.settings
        shown = form if form == "yaml" or settings.form == "args" else "yaml"
        head = f"# [models.{name}] {plan.deployment.engine.described}: {settings.launcher}\n"
        blocks.append(head + render(plan.launch, shown))
    return "\n".join(blocks)


def _table(data: dict[str, Any], plans: list[tuple[str, RankPlan]], used: int) -> str:
    from kvgen._util.escaping import text as shown
    from kvgen._util.units import format_size

    rows = [["model", "engine", "GPUs", "KV budget/rank", "KV tokens", "max concurrency", "fits"]]
    for name, plan in plans:
        cap = plan.launch.capacity if plan.launch else None
        rows.append([
            shown(name), plan.deployment.engine.engine.label,
            str(plan.deployment.gpus or plan.deployment.tp_size),
            format_size(plan.kv_budget), f"{cap['kv_tokens']:,}" if cap else "-",
            f"{cap['max_concurrency']:.3f}" if cap else "-", "yes" if plan.fits else "no",
        ])  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    head = f"node: {data.get('gpus', '?')} x {shown(data['gpu'])}, {used} GPUs used\n"
    return head + "".join(
        "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n"
        for row in rows
    )
