"""``kvgen diff [--against REF] [PATH ...]``: capacity and API changes since a git ref.

Compares every spec at REF (default: origin/$GITHUB_BASE_REF in a GitHub pull-request job,
else HEAD) with the working tree, at a reference deployment (flags below), per family, model,
speculative profile and cache manager. Both sides are evaluated through sizing modules
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
import json
import logging
import os
import sys

from kvgen.units import positive_int, size_argument

log = logging.getLogger("kvgen")

FORMATS = ("text", "json", "markdown", "github")


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
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format")
    parser.add_argument("--max-batch-size", type=positive_int, default=8, metavar="B")
    parser.add_argument("--max-num-tokens", type=positive_int, default=8192, metavar="N")
    parser.add_argument(
        "--max-seq-len", type=positive_int, default=32768, metavar="S",
        help="capped at each model's native length (default: 32768)",
    )  # fmt: skip
    parser.add_argument("--tp-size", type=positive_int, default=1, metavar="T")
    parser.add_argument(
        "--gpu-memory", type=size_argument, default="40GiB", metavar="SIZE",
        help="GPU KV-cache budget, split between target and draft pools (default: 40GiB)",
    )  # fmt: skip
    parser.add_argument("--semantics", choices=("trtllm-v2", "exact"), default="trtllm-v2")
    parser.add_argument(
        "--trust-committed-modules",
        action="store_true",
        help="evaluate the old side through the sizing modules committed at REF: runs code "
        "from REF (in a separate process); only for refs you trust",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kvgen.review import Deployment, ReviewError, default_ref, review_specs

    ref = args.against or default_ref(dict(os.environ))
    deployment = Deployment(
        max_batch_size=args.max_batch_size,
        max_num_tokens=args.max_num_tokens,
        max_seq_len=args.max_seq_len,
        tp_size=args.tp_size,
        gpu_budget=args.gpu_memory,
        semantics=args.semantics,
    )
    try:
        review = review_specs(
            ref, args.paths, deployment, trust_committed_modules=args.trust_committed_modules
        )
    except ReviewError as exc:
        print(f"kvgen: error: {exc}", file=sys.stderr)
        return 2
    if review.diagnostics:
        from kvgen.reporters import render

        fmt = args.format if args.format in ("json", "github") else "text"
        sys.stdout.write(render(fmt, review.diagnostics))
        if review.failed and not review.changes:
            log.error("not comparing: fix the lint errors above")
            return 1
    sys.stdout.write(EMITTERS[args.format](review))
    blocking = len(review.blocking)
    if blocking:
        plural = "" if blocking == 1 else "s"
        log.error("%d capacity-reducing or API change%s not acknowledged", blocking, plural)
    return 1 if review.failed else 0


# --- emitters: Review -> stdout text -------------------------------------------------------


def _tokens(value: int | None) -> str:
    return "unbounded" if value is None else str(value)


def _delta(old: int | None, new: int | None, unit: str = "") -> str:
    if old is None or new is None or old == new:
        return ""
    text = f"{new - old:+d}{unit}"
    if unit == " B" and abs(new - old) >= 1024:
        from kvgen.units import format_size

        text += f", {'+' if new > old else '-'}{format_size(abs(new - old))}"
    return f"  ({text})"


def _where(change) -> str:
    return "/".join((change.family, change.model, change.profile, change.manager))


def _ack_text(change) -> str:
    if change.kind not in ("capacity-reducing", "api"):
        return ""
    if change.acknowledged is not None:
        return f" (acknowledged: {change.acknowledged})"
    return " (NOT ACKNOWLEDGED)"


def _deployment_line(review) -> str:
    from kvgen.units import format_size

    d = review.deployment
    return (
        f"max_batch_size {d.max_batch_size}, max_num_tokens {d.max_num_tokens}, "
        f"max_seq_len min(native, {d.max_seq_len}), tp_size {d.tp_size}, "
        f"GPU KV budget {format_size(d.gpu_budget)} (split per SIZING §6), "
        f"semantics {d.semantics}"
    )


def _counts(review) -> str:
    kinds = ("capacity-reducing", "capacity-increasing", "api", "added")
    parts = [f"{sum(c.kind == kind for c in review.changes)} {kind}" for kind in kinds]
    statuses = ("changed", "added", "removed", "cosmetic", "unchanged")
    fams = [f"{sum(s == status for s in review.families.values())} {status}" for status in statuses]
    return (
        f"{', '.join(parts)}; {len(review.blocking)} not acknowledged; families: {', '.join(fams)}"
    )


def _ack_entries(review) -> tuple[dict[str, list[str]], list[str]]:
    """Acknowledgement entries to add, per new spec path; and removed families (none possible)."""
    entries: dict[str, list[str]] = {}
    removed = []
    for change in review.blocking:
        path = review.spec_paths.get(change.family)
        if path is None:
            removed.append(change.family)
            continue
        entry = (
            f'  - {{change: {change.kind}, model: "{change.model}", '
            f'profile: "{change.profile}", reason: "..."}}'
        )
        if entry not in entries.setdefault(path, []):
            entries[path].append(entry)
    return entries, removed


def _ack_hint(review) -> list[str]:
    entries, removed = _ack_entries(review)
    lines = []
    for path, items in sorted(entries.items()):
        lines += [f"# {path}", "acknowledge:", *items]
    lines += [
        f"# {family}: a removed family has no spec to acknowledge it in" for family in removed
    ]
    return lines


def text(review) -> str:
    lines = [f"kvgen diff {review.ref} -> working tree", f"reference: {_deployment_line(review)}"]
    for change in review.changes:
        detail = f": {change.detail}" if change.detail else ""
        lines.append(f"{_where(change)}: {change.kind}{detail}{_ack_text(change)}")
        old, new = change.old, change.new
        if old is not None and new is not None:
            slope = _delta(old.slope, new.slope, " B")
            intercept = _delta(old.intercept, new.intercept, " B")
            tokens = _delta(old.max_tokens, new.max_tokens)
            lines += [
                f"    slope       {old.slope} -> {new.slope} B/token{slope}",
                f"    intercept   {old.intercept} -> {new.intercept} B{intercept}",
                f"    max tokens  {_tokens(old.max_tokens)} -> {_tokens(new.max_tokens)}{tokens}",
            ]
    for family, status in sorted(review.families.items()):
        if status == "cosmetic":
            lines.append(f"{family}: cosmetic (no numeric change)")
    lines.append(f"summary: {_counts(review)}")
    hints = _ack_hint(review)
    if hints:
        lines.append("to acknowledge a reviewed change, add to the new spec:")
        lines += [f"  {line}" for line in hints]
    return "".join(f"{line}\n" for line in lines)


def _md_arrow(old: int | None, new: int | None, tokens: bool = False) -> str:
    show = _tokens if tokens else str
    if old is None and new is None and not tokens:
        return ""
    if old == new:
        return show(old)
    delta = f" ({new - old:+d})" if old is not None and new is not None else ""
    return f"{show(old)} → {show(new)}{delta}"


def _sentence(change, review) -> str | None:
    """``this change reserves 469 MiB more per GPU for m at batch 8; ...`` for a PR comment."""
    from kvgen.units import format_size

    old, new = change.old, change.new
    if old is None or new is None:
        return None
    d = review.deployment
    where = change.model if change.profile == "none" else f"{change.model} ({change.profile})"
    if change.manager != "target":
        where += f" {change.manager} pool"
    parts = []
    if new.intercept != old.intercept:
        more = "more" if new.intercept > old.intercept else "less"
        size = format_size(abs(new.intercept - old.intercept))
        parts.append(f"reserves {size} {more} per GPU for {where} at batch {d.max_batch_size}")
    if new.max_tokens != old.max_tokens and None not in (new.max_tokens, old.max_tokens):
        fewer = "fewer" if new.max_tokens < old.max_tokens else "more"
        count = abs(new.max_tokens - old.max_tokens)
        target = "" if parts else f" for {where}"
        parts.append(f"fits {count} {fewer} tokens{target} in {format_size(d.gpu_budget)}")
    return "this change " + " and ".join(parts) if parts else None


def markdown(review) -> str:
    blocking = len(review.blocking)
    lines = [f"### kvgen diff: `{review.ref}` → working tree", ""]
    lines.append(f"Reference deployment: {_deployment_line(review)}.")
    lines.append("")
    if blocking:
        lines.append(
            f":x: **{blocking} capacity-reducing or API change{'s' if blocking > 1 else ''} "
            "not acknowledged.**"
        )
    else:
        lines.append(":white_check_mark: No unacknowledged capacity-reducing or API change.")
    if review.changes:
        lines += [
            "",
            "| family | model | profile | manager | change | slope (B/token) | intercept (B) "
            "| max tokens | acknowledged |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for c in review.changes:
            old, new = c.old, c.new
            kind = f"{c.kind}: {c.detail}" if c.detail else c.kind
            ack = "" if c.kind not in ("capacity-reducing", "api") else (
                "**no**" if c.acknowledged is None else f"yes: {c.acknowledged}"
            )  # fmt: skip
            cells = [c.family, c.model, c.profile, c.manager, kind]
            if old is not None and new is not None:
                cells += [
                    _md_arrow(old.slope, new.slope),
                    _md_arrow(old.intercept, new.intercept),
                    _md_arrow(old.max_tokens, new.max_tokens, tokens=True),
                ]
            else:
                cells += ["", "", ""]
            lines.append("| " + " | ".join([*cells, ack]) + " |")
        sentences = [s for c in review.changes if (s := _sentence(c, review))]
        if sentences:
            lines.append("")
            lines += [f"- {s}." for s in sentences]
    cosmetic = sorted(f for f, s in review.families.items() if s == "cosmetic")
    if cosmetic:
        lines += ["", f"Cosmetic (no numeric change): {', '.join(cosmetic)}."]
    hints = _ack_hint(review)
    if hints:
        lines += ["", "To acknowledge a reviewed change, add to the new spec:", "", "```yaml"]
        lines += [*hints, "```"]
    lines += ["", f"<sub>{_counts(review)}</sub>"]
    return "".join(f"{line}\n" for line in lines)


def _change_json(change) -> dict:
    def cap(value):
        return None if value is None else vars(value)

    return {
        "family": change.family,
        "model": change.model,
        "profile": change.profile,
        "manager": change.manager,
        "kind": change.kind,
        "detail": change.detail,
        "old": cap(change.old),
        "new": cap(change.new),
        "blocking": change.blocking,
        "acknowledged": change.acknowledged,
    }


def as_json(review) -> str:
    data = {
        "ref": review.ref,
        "deployment": vars(review.deployment),
        "families": dict(sorted(review.families.items())),
        "changes": [_change_json(change) for change in review.changes],
        "not_acknowledged": len(review.blocking),
    }
    return json.dumps(data, indent=2) + "\n"


def github(review) -> str:
    """Workflow commands: an error per unacknowledged change, a notice per other change."""
    from kvgen.reporters import _escape_data, _escape_property

    lines = []
    for change in review.changes:
        level = "error" if change.blocking else "notice"
        path = review.spec_paths.get(change.family)
        props = f"file={_escape_property(path)}," if path else ""
        props += f"title={_escape_property(f'kvgen diff: {change.kind}')}"
        message = text_line(change)
        lines.append(f"::{level} {props}::{_escape_data(message)}")
    return "".join(f"{line}\n" for line in lines)


def text_line(change) -> str:
    detail = f": {change.detail}" if change.detail else ""
    line = f"{_where(change)}: {change.kind}{detail}{_ack_text(change)}"
    old, new = change.old, change.new
    if old is not None and new is not None:
        line += (
            f"; slope {old.slope} -> {new.slope} B/token, intercept {old.intercept} -> "
            f"{new.intercept} B, max tokens {_tokens(old.max_tokens)} -> {_tokens(new.max_tokens)}"
        )
    return line


EMITTERS = {"text": text, "json": as_json, "markdown": markdown, "github": github}
