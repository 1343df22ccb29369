"""``kvgen diff [--against REF] [PATH ...]``: capacity and API changes since a git ref.

Compares every spec at REF (default: origin/$GITHUB_BASE_REF in a GitHub pull-request job,
else HEAD), or with --shipped the family kvgen ships of the same name, with the working tree,
at a reference deployment (flags below), per family, model, speculative profile and cache
manager. Both sides are evaluated through sizing modules
that this kvgen renders from the specs of each side: nothing committed at REF is executed.

The configuration ([tool.kvgen] / kvgen.toml) is read at REF as well as in the working tree,
which a pull request owns: the spec directories of both are compared, the reference deployment
is REF's unless a flag sets it, and when `out` moved, REF's output folder must still be what
kvgen generates from the specs (KV403).

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
from typing import TYPE_CHECKING, Any

from kvgen._cli.commands._knobs import ENGINES, KV_DTYPES, EngineChoices, aliases, engine_argument
from kvgen._util.exits import Exit, UsageError
from kvgen._util.units import positive_int, size_argument, token_count
from kvgen.sizing.engines_registry import (
    DEFAULT_MAX_SEQ_LEN,
)

if TYPE_CHECKING:
    from kvgen._review import ReviewLayout

log = logging.getLogger("kvgen")

FORMATS = ("text", "json", "markdown", "github")  # kvgen._review.reporters.FORMATS (a test)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
        help="spec files or directories (default: the spec directories of the ref's and the "
        "working tree's configuration)",
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
        "--max-batch-size", *aliases("--max-batch-size"), type=positive_int, metavar="B"
    )
    parser.add_argument(
        "--max-num-tokens", *aliases("--max-num-tokens"), type=token_count, metavar="N"
    )
    parser.add_argument(
        "--max-seq-len", *aliases("--max-seq-len"), type=token_count, metavar="S",
        help="capped at each model's native length unless --rope-scaled "
        f"(default: {DEFAULT_MAX_SEQ_LEN})",
    )  # fmt: skip
    parser.add_argument(
        "--rope-scaled", action="store_true",
        help="take --max-seq-len past each model's native length as given (RoPE-scaled "
        "checkpoints, e.g. YaRN); stated in the report",
    )  # fmt: skip
    parser.add_argument("--tp-size", *aliases("--tp-size"), type=positive_int, metavar="T")
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
        "--gpu-memory", type=size_argument, metavar="SIZE",
        help="KV-cache budget per rank (not the GPU's memory), split between target and draft "
        "pools (default: 40GiB; a unit is required)",
    )  # fmt: skip
    parser.add_argument("--semantics", choices=("trtllm-v2", "exact"))
    parser.add_argument(
        "--engine", type=engine_argument, choices=EngineChoices(ENGINES), nargs="+",
        metavar="ENGINE",
        help=f"also report each engine's capacity changes ({', '.join(ENGINES)}), per engine, "
        "in a block of their own (informational: the exit code follows the changes above)",
    )  # fmt: skip
    parser.add_argument(
        "--generated", type=Path, metavar="DIR",
        help="output directory whose committed sizing modules are the old side "
        "(with --trust-committed-modules; default: the ref's configured output)",
    )  # fmt: skip
    parser.add_argument(
        "--trust-committed-modules",
        action="store_true",
        help="evaluate the old side through the sizing modules committed at REF: runs code "
        "from REF (in a separate process); only for refs you trust",
    )
    parser.set_defaults(func=run)


def _defaults() -> dict[str, Any]:
    """The reference deployment when neither a flag nor the ref's [tool.kvgen.deployment] sets
    it: the review's own ReferenceDeployment defaults (defined once, in kvgen._review._types)."""
    from kvgen._review import ReferenceDeployment

    base = ReferenceDeployment()
    return {
        "max_batch_size": base.max_batch_size,
        "max_num_tokens": base.max_num_tokens,
        "max_seq_len": base.max_seq_len,
        "tp_size": base.tp_size,
        "gpu_memory": base.gpu_budget,
        "semantics": base.semantics,
    }


def _deployment_value(
    args: argparse.Namespace, key: str, layout: ReviewLayout | None, defaults: dict[str, Any]
) -> Any:
    """A flag; else the ref's configuration (the working tree's is pull-request content, so a
    change to it applies once merged, and is said); else the built-in default."""
    flag = getattr(args, key)
    if flag is not None:
        return flag
    if layout is None:  # --shipped: no ref, no configuration of its own
        return defaults[key]
    base, head = layout.base.deployment, layout.head.deployment
    if head.get(key) != base.get(key):
        log.warning(
            "[tool.kvgen.deployment] %s is %s in the working tree and %s at %s: the review uses "
            "the ref's (a flag overrides it)",
            key, head.get(key, "unset"), base.get(key, "unset"), args.ref,
        )  # fmt: skip
    return base.get(key, defaults[key])


def run(args: argparse.Namespace) -> Exit:
    from kvgen._review import (
        GitTree,
        ReferenceDeployment,
        ReviewError,
        default_ref,
        layout,
        output_drift,
        review_shipped,
        review_specs,
    )

    if args.shipped and (args.against or args.trust_committed_modules):
        raise UsageError("--shipped compares with kvgen's own families: no --against REF nor "
                         "--trust-committed-modules")  # fmt: skip
    if args.against is not None and not args.against.strip():
        # An unset CI variable (`--against "$BASE"`) must not quietly compare with HEAD, the
        # pull request's own commit, where every committed change compares equal to itself.
        raise UsageError(
            "--against is empty (an unset CI variable?): name the base branch, a tag or a "
            "commit, e.g. --against origin/main"
        )
    args.ref = ref = args.against or default_ref(dict(os.environ))
    sides = None
    if not args.shipped:
        try:
            tree = GitTree(ref, Path.cwd())
        except ReviewError as exc:
            raise UsageError(str(exc)) from None
        sides = layout(tree, args.project)
    defaults = _defaults()
    value = {key: _deployment_value(args, key, sides, defaults) for key in defaults}
    deployment = ReferenceDeployment(
        max_batch_size=value["max_batch_size"],
        max_num_tokens=value["max_num_tokens"],
        max_seq_len=value["max_seq_len"],
        tp_size=value["tp_size"],
        gpu_budget=value["gpu_memory"],
        semantics=value["semantics"],
        # Each release as engine_capacity takes it: a default release by its engine's label (as
        # every generated runtime, an older committed one's too, takes it), else NAME==VERSION.
        engines=tuple(dict.fromkeys(found.argument for found in args.engine or ())),
        pp_size=args.pp_size,
        dcp_size=args.dcp_size,
        kv_cache_dtype=args.kv_cache_dtype,
        block_size=args.block_size,
        rope_scaled=args.rope_scaled,
    )
    paths = args.paths or (sides.spec_dirs if sides is not None else [])
    try:
        if sides is None:
            review = review_shipped(args.paths, deployment, spec_dir=args.project.spec_dir)
        else:
            review = review_specs(
                ref,
                paths,
                deployment,
                out_dir=args.generated or sides.base.out_dir,
                trust_committed_modules=args.trust_committed_modules,
                tree=tree,
            )
    except ReviewError as exc:
        raise UsageError(str(exc)) from None
    from kvgen._util.diagnostics import has_errors

    lint_failed = has_errors(review.diagnostics)  # nothing was compared
    stale = []
    if sides is not None and sides.out_moved and not args.paths and not lint_failed:
        log.warning(
            "the output directory moved: %s at %s, %s in the working tree; the old one is "
            "checked too",
            sides.base.out_dir.as_posix(), ref, sides.head.out_dir.as_posix(),
        )  # fmt: skip
        stale = output_drift(paths, sides.base.out_dir, sides.head.root)
        review.diagnostics = sorted(review.diagnostics + stale)
    if review.diagnostics:
        from kvgen._lint.reporters import render

        fmt = args.format if args.format in ("json", "github") else "text"
        sys.stdout.write(render(fmt, review.diagnostics))
        if lint_failed and not review.changes:
            log.error("not comparing: fix the lint errors above")
            return Exit.FINDINGS
    from kvgen._review.reporters import EMITTERS

    sys.stdout.write(EMITTERS[args.format](review))
    blocking = len(review.blocking)
    if blocking:
        plural = "" if blocking == 1 else "s"
        log.error("%d capacity-reducing or API change%s not acknowledged", blocking, plural)
    if stale and sides is not None:
        log.error("the old output folder %s is not what kvgen generates", sides.base.out_dir)
    return Exit.FINDINGS if review.failed else Exit.OK
