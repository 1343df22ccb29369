"""``kvgen import-hf CONFIG.json``: write a family spec from a Hugging Face config.json."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from kvgen.exits import Exit, UsageError
from kvgen.writer import write_atomic

# kvgen.spec.DTYPES, spelt out: registering the command must not import pydantic (a test
# checks the two agree).
DTYPES = (
    "fp32",
    "bf16",
    "fp16",
    "fp8",
    "nvfp4",
    "fp8_per_token_head",
    "int8_per_token_head",
    "mxfp8",
    "mxfp4",
    "fp8_ds_mla",
)

log = logging.getLogger("kvgen")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "import-hf",
        help="write a family spec from a Hugging Face config.json",
        description="Read a local config.json (no downloads) and write a kvgen family spec. "
        "Unknown or contradictory fields are reported at their JSON key; nothing is written "
        "then (exit 1).",
    )
    parser.add_argument("config", metavar="CONFIG.json", help="a model's config.json")
    parser.add_argument("--family", help="family identifier (default: config model_type)")
    parser.add_argument(
        "--model", help="model identifier (default: from _name_or_path or the file name)"
    )
    parser.add_argument("--out", metavar="FILE", help="write here (default: stdout)")
    parser.add_argument(
        "--tokens-per-block", type=int, default=32, metavar="N", help="page size (default 32)"
    )
    parser.add_argument(
        "--kv-cache-dtype", choices=DTYPES, help="cache dtype (default: the config's torch_dtype)"
    )
    parser.add_argument(
        "--ignore-field",
        action="append",
        default=[],
        metavar="NAME",
        help="a reviewed field that does not change the cache (repeatable)",
    )
    parser.set_defaults(func=run)


def _usage(message: str) -> Exit:
    raise UsageError(f"import-hf: {message}")  # printed once by cli.main, exit 2


def run(args: argparse.Namespace) -> Exit:
    from kvgen.codes import hf as codes
    from kvgen.importhf import import_config, to_identifier
    from kvgen.lines import line_break_diagnostics
    from kvgen.loader import display_path

    for flag, value in (("--family", args.family), ("--model", args.model)):
        if value is not None and to_identifier(value) != value:
            return _usage(f"{flag} {value!r} is not an identifier (^[a-z][a-z0-9_]*$)")
    tpb = args.tokens_per_block
    if tpb < 1 or tpb > 4096 or tpb & (tpb - 1):
        return _usage(f"--tokens-per-block {tpb} is not a power of two in [1, 4096]")
    source = Path(args.config)
    try:
        raw = source.read_bytes()
    except OSError as exc:
        return _usage(f"cannot read {args.config}: {exc.strerror}")
    display = display_path(source)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        refused = codes.UNREADABLE_CONFIG.at(
            display, (1, 1), "file is not valid UTF-8", "save it as UTF-8"
        )
        print(refused.render())
        return Exit.FINDINGS
    breaks = line_break_diagnostics(display, text)  # positions must be git's, as in specs
    if breaks:
        print("".join(f"{diagnostic.render()}\n" for diagnostic in breaks), end="")
        return Exit.FINDINGS
    result = import_config(
        display,
        text,
        family=args.family,
        model=args.model,
        tokens_per_block=tpb,
        kv_cache_dtype=args.kv_cache_dtype,
        ignore_fields=args.ignore_field,
    )
    if result.text is None:
        for diagnostic in result.diagnostics:
            print(diagnostic.render())
        return Exit.FINDINGS
    if args.out is None:
        sys.stdout.write(result.text)
        return Exit.OK
    write_atomic(Path(args.out), result.text)
    log.info("wrote %s", display_path(args.out))
    return Exit.OK
