"""``kvgen diff [--against REF] [PATH ...]``: capacity and API changes since a git ref.

Compares every spec at REF (default: origin/$GITHUB_BASE_REF in a GitHub pull-request job,
else HEAD), or with --shipped the family kvgen ships of the same name, with the working tree,
at a reference deployment (flags below), per family, model, speculative profile and cache
manager. Both sides are evaluated through sizing modules
that this kvgen renders from the specs of each side: nothing committed at REF is executed.

Trust: --trust-committed-modules evaluates the old side through generated/<family>/sizing.py
as committed at REF instead (so that a generator change counts too, as when reviewing kvgen
itself). That RUNS CODE FROM REF as you, in a separate `python -I` process with a timeout;
use it only when you trust every commit of REF, never on a pull request from a fork.

Exit codes: 0 nothing to review, or every capacity-reducing and API change is acknowledged in
the new spec's `acknowledge` list; 1 an unacknowledged one, or a spec that fails lint on either
side; 2 usage error (not a git repository, unknown ref, no specs).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from kvgen._commands._knobs import ENGINES, KV_DTYPES, EngineChoices, aliases, engine_argument
from kvgen._config import OUT_DIR
from kvgen._exits import Exit, UsageError
from kvgen._units import positive_int, size_argument, token_count
from kvgen.engines_registry import (
    DEFAULT_MAX_BATCH_SIZE,
    DEFAULT_MAX_NUM_TOKENS,
    DEFAULT_MAX_SEQ_LEN,
)

log = logging.getLogger("kvgen")

FORMATS = ("text", "json", "markdown", "github")  # kvgen._review_reporters.FORMATS (a test)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "diff",
        help="report capacity and API changes against a git ref",
        description=__doc__.split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="spec files or directories (default: schema/families)",
    )
    parser.add_argument(
        "--against",
        metavar="REF",
        help="git ref to compare with (default: origin/$GITHUB_BASE_REF if set, else HEAD)",
    )
    parser.add_argument(
        "--shipped", action="store_true",
        help="compare with the families kvgen ships (by family name) instead of a git ref: "
        "what a copy of a shipped family changes; needs no git repository",
    )  # fmt: skip
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format")
    parser.add_argument(
        "--max-batch-size", *aliases("--max-batch-size"), type=positive_int,
        default=DEFAULT_MAX_BATCH_SIZE, metavar="B",
    )  # fmt: skip
    parser.add_argument(
        "--max-num-tokens", *aliases("--max-num-tokens"), type=token_count,
        default=DEFAULT_MAX_NUM_TOKENS, metavar="N",
    )  # fmt: skip
    parser.add_argument(
        "--max-seq-len", *aliases("--max-seq-len"), type=token_count,
        default=DEFAULT_MAX_SEQ_LEN, metavar="S",
        help="capped at each model's native length unless --rope-scaled "
        f"(default: {DEFAULT_MAX_SEQ_LEN})",
    )  # fmt: skip
    parser.add_argument(
        "--rope-scaled", action="store_true",
        help="take --max-seq-len past each model's native length as given (RoPE-scaled "
        "checkpoints, e.g. YaRN); stated in the report",
    )  # fmt: skip
    parser.add_argument(
        "--tp-size", *aliases("--tp-size"), type=positive_int, default=1, metavar="T"
    )
    parser.add_argument(
        "--pp-size", *aliases("--pp-size"), type=positive_int, default=1, metavar="P",
        help="pipeline stages: the tightest rank is compared (default: 1)",
    )  # fmt: skip
    parser.add_argument(
        "--dcp-size", type=positive_int, default=1, metavar="D",
        help="decode context parallel size (default: 1)",
    )  # fmt: skip
    parser.add_argument(
        "--kv-cache-dtype", choices=KV_DTYPES, metavar="DTYPE",
        help="render both sides with the attention caches in DTYPE (a what-if)",
    )  # fmt: skip
    parser.add_argument(
        "--block-size", type=positive_int, metavar="T",
        help="render both sides with this tokens_per_block (a what-if)",
    )  # fmt: skip
    parser.add_argument(
        "--gpu-memory", type=size_argument, default="40GiB", metavar="SIZE",
        help="KV-cache budget per rank (not the GPU's memory), split between target and draft "
        "pools (default: 40GiB; a unit is required)",
    )  # fmt: skip
    parser.add_argument("--semantics", choices=("trtllm-v2", "exact"), default="trtllm-v2")
    parser.add_argument(
        "--engine", type=engine_argument, choices=EngineChoices(ENGINES), nargs="+",
        metavar="ENGINE",
        help=f"also report each engine's capacity changes ({', '.join(ENGINES)}), per engine, "
        "in a block of their own (informational: the exit code follows the changes above)",
    )  # fmt: skip
    parser.add_argument(
        "--generated", type=Path, default=Path(OUT_DIR), metavar="DIR",
        help="output directory whose committed sizing modules are the old side "
        "(with --trust-committed-modules)",
    )  # fmt: skip
    parser.add_argument(
        "--trust-committed-modules",
        action="store_true",
        help="evaluate the old side through the sizing modules committed at REF: runs code "
        "from REF (in a separate process); only for refs you trust",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> Exit:
    from kvgen._review import Deployment, ReviewError, default_ref, review_shipped, review_specs

    if args.shipped and (args.against or args.trust_committed_modules):
        raise UsageError("--shipped compares with kvgen's own families: no --against REF nor "
                         "--trust-committed-modules")  # fmt: skip
    ref = args.against or default_ref(dict(os.environ))
    deployment = Deployment(
        max_batch_size=args.max_batch_size,
        max_num_tokens=args.max_num_tokens,
        max_seq_len=args.max_seq_len,
        tp_size=args.tp_size,
        gpu_budget=args.gpu_memory,
        semantics=args.semantics,
        # Each engine's label, as every generated runtime (the old side's too) takes it.
        engines=tuple(dict.fromkeys(found.engine.label for found in args.engine or ())),
        pp_size=args.pp_size,
        dcp_size=args.dcp_size,
        kv_cache_dtype=args.kv_cache_dtype,
        block_size=args.block_size,
        rope_scaled=args.rope_scaled,
    )
    try:
        if args.shipped:
            review = review_shipped(args.paths, deployment, spec_dir=args.project.spec_dir)
        else:
            review = review_specs(
                ref,
                args.paths,
                deployment,
                out_dir=args.generated,
                trust_committed_modules=args.trust_committed_modules,
            )
    except ReviewError as exc:
        raise UsageError(str(exc)) from None
    if review.diagnostics:
        from kvgen._reporters import render

        fmt = args.format if args.format in ("json", "github") else "text"
        sys.stdout.write(render(fmt, review.diagnostics))
        if review.failed and not review.changes:
            log.error("not comparing: fix the lint errors above")
            return Exit.FINDINGS
    from kvgen._review_reporters import EMITTERS

    sys.stdout.write(EMITTERS[args.format](review))
    blocking = len(review.blocking)
    if blocking:
        plural = "" if blocking == 1 else "s"
        log.error("%d capacity-reducing or API change%s not acknowledged", blocking, plural)
    return Exit.FINDINGS if review.failed else Exit.OK
