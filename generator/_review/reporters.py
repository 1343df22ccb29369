"""Output formats of ``kvgen diff``: one emitter per format, beside the lint reporters.

Each emitter turns a ``Review`` into the full text written to stdout. Text and Markdown are
for people (the Markdown one is a pull-request comment), JSON for tools, ``github`` for
workflow annotations anchored at the spec line of the model or profile that changed.
Every string a spec author or a ref controls (reasons, names, paths, the ref, details quoting
them) reaches the output only through its format's function of ``kvgen._util.escaping``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kvgen._review import Capacity, Change, Review
from kvgen._util import escaping
from kvgen._util.units import format_size

__all__ = ["EMITTERS", "FORMATS", "as_json", "github", "markdown", "spec_line", "text"]


def spec_line(review: Review, change: Change) -> int:
    """The new spec's line naming the change's model, else its profile, else its family."""
    lines = review.spec_lines.get(change.family, {})
    for key in (f"model:{change.model}", f"profile:{change.profile}", "family"):
        if key in lines:
            return lines[key]
    return 1


def _tokens(value: int | None) -> str:
    return "unbounded" if value is None else str(value)


def _delta(old: int | None, new: int | None, unit: str = "") -> str:
    if old is None or new is None or old == new:
        return ""
    text = f"{new - old:+d}{unit}"
    if unit == " B" and abs(new - old) >= 1024:
        text += f", {'+' if new > old else '-'}{format_size(abs(new - old))}"
    return f"  ({text})"


def _where(change: Change) -> str:
    """``family/model/profile/manager``, raw: each emitter escapes it for its format."""
    return "/".join((change.family, change.model, change.profile, change.manager))


def _ack_text(change: Change) -> str:
    """Raw like ``_where``: the reason is the spec author's text."""
    if change.kind not in ("capacity-reducing", "api"):
        return ""
    if change.acknowledged is not None:
        return f" (acknowledged: {change.acknowledged})"
    return " (NOT ACKNOWLEDGED)"


def _deployment_line(review: Review) -> str:
    d = review.deployment
    return (
        f"max_batch_size {d.max_batch_size}, max_num_tokens {d.max_num_tokens}, "
        + (
            f"max_seq_len {d.max_seq_len} (RoPE-scaled past native lengths), "
            if d.rope_scaled
            else f"max_seq_len min(native, {d.max_seq_len}), "
        )
        + f"tp_size {d.tp_size}, "
        f"GPU KV budget {format_size(d.gpu_budget)} (split per docs/cost-model.md §6), "
        f"semantics {d.semantics}"
        + "".join(f", {key} {value}" for key, value in d.what_ifs().items() if key != "rope_scaled")
    )


def _counts(review: Review) -> str:
    kinds = ("capacity-reducing", "capacity-increasing", "api", "added")
    parts = [f"{sum(c.kind == kind for c in review.changes)} {kind}" for kind in kinds]
    statuses = ("changed", "added", "removed", "cosmetic", "unchanged")
    fams = [f"{sum(s == status for s in review.families.values())} {status}" for status in statuses]
    return (
        f"{', '.join(parts)}; {len(review.blocking)} not acknowledged; families: {', '.join(fams)}"
    )


def _ack_entries(review: Review) -> tuple[dict[str, list[str]], list[str]]:
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


def _ack_hint(review: Review) -> list[str]:
    """YAML lines to paste, each escaped as plain text (a path is the only free text)."""
    entries, removed = _ack_entries(review)
    lines = []
    for path, items in sorted(entries.items()):
        lines += [f"# {path}", "acknowledge:", *items]
    lines += [
        f"# {family}: a removed family has no spec to acknowledge it in" for family in removed
    ]
    return [escaping.text(line) for line in lines]


def text(review: Review) -> str:
    shown = escaping.text
    lines = [
        f"kvgen diff {shown(review.ref)} -> working tree",
        f"reference: {_deployment_line(review)}",
    ]
    for change in review.changes:
        detail = f": {change.detail}" if change.detail else ""
        lines.append(shown(f"{_where(change)}: {change.kind}{detail}{_ack_text(change)}"))
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
            lines.append(f"{shown(family)}: cosmetic (no numeric change)")
    lines.append(f"summary: {_counts(review)}")
    lines += [shown(line) for line in _engine_lines(review)]
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


def _sentence(change: Change, review: Review) -> str | None:
    """``this change reserves 469 MiB more per GPU for m at batch 8; ...`` for a PR comment."""
    old, new = change.old, change.new
    if old is None or new is None:
        return None
    d = review.deployment
    where = change.model if change.profile == "none" else f"{change.model} ({change.profile})"
    where = escaping.markdown(where)
    if change.manager != "target":
        where += f" {change.manager} pool"
    parts = []
    if new.intercept != old.intercept:
        more = "more" if new.intercept > old.intercept else "less"
        size = format_size(abs(new.intercept - old.intercept))
        parts.append(f"reserves {size} {more} per GPU for {where} at batch {d.max_batch_size}")
    new_tokens, old_tokens = new.max_tokens, old.max_tokens
    if new_tokens != old_tokens and new_tokens is not None and old_tokens is not None:
        fewer = "fewer" if new_tokens < old_tokens else "more"
        count = abs(new_tokens - old_tokens)
        target = "" if parts else f" for {where}"
        parts.append(f"fits {count} {fewer} tokens{target} in {format_size(d.gpu_budget)}")
    return "this change " + " and ".join(parts) if parts else None


def markdown(review: Review) -> str:
    blocking = len(review.blocking)
    cell = escaping.markdown
    lines = [f"### kvgen diff: {escaping.markdown_code(review.ref)} → working tree", ""]
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
                "**no**" if c.acknowledged is None else f"yes: {cell(c.acknowledged)}"
            )  # fmt: skip
            cells = [cell(value) for value in (c.family, c.model, c.profile, c.manager, kind)]
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
        lines += ["", f"Cosmetic (no numeric change): {cell(', '.join(cosmetic))}."]
    hints = _ack_hint(review)
    if hints:
        # A fence longer than any run of backticks in the hints (a path may hold some).
        fence = "`" * max([3, *(len(run) + 1 for run in re.findall("`+", "\n".join(hints)))])
        lines += ["", "To acknowledge a reviewed change, add to the new spec:", "", f"{fence}yaml"]
        lines += [*hints, fence]
    engine = _engine_lines(review)
    if engine:
        lines += ["", f"**{cell(engine[0])}**", ""]
        lines += [f"- {cell(line.strip())}" for line in engine[1:]]
    lines += ["", f"<sub>{_counts(review)}</sub>"]
    return "".join(f"{line}\n" for line in lines)


def _engine_value(value: tuple[int, float] | str | None) -> str:
    if value is None:
        return "absent"
    if isinstance(value, str):
        return f"no answer ({value})"
    return f"{value[0]} KV tokens, {value[1]:.3f} requests at max_seq_len"


def _engine_lines(review: Review) -> list[str]:
    """``--engine``: a block of its own (nothing without it, so the default report is as it
    was): per engine, each model and profile whose engine capacity changed, old -> new. The
    block is informational; acknowledgements and the exit code follow the changes above."""
    engines = review.deployment.engines
    if not engines:
        return []
    from kvgen.sizing.engines_registry import release

    named = "; ".join(release(engine).described for engine in engines)
    lines = [f"engine capacity changes ({named}; informational, not classified):"]
    for c in review.engine_changes:
        where = "/".join((c.family, c.model, c.profile))
        served = f" ({c.served})" if c.served else ""
        lines.append(
            f"  {c.engine} {where}: {_engine_value(c.old)} -> {_engine_value(c.new)}{served}"
        )
    if len(lines) == 1:
        lines.append("  none")
    return lines


def _change_json(change: Change) -> dict[str, object]:
    def cap(value: Capacity | None) -> dict[str, object] | None:
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


def as_json(review: Review) -> str:
    deployment = dict(vars(review.deployment))
    for key in ("pp_size", "dcp_size", "kv_cache_dtype", "block_size", "rope_scaled"):
        if key not in review.deployment.what_ifs():  # the default report stays as it was
            del deployment[key]
    if not deployment["engines"]:
        del deployment["engines"]
    else:
        deployment["engines"] = list(deployment["engines"])
    data = {
        "ref": review.ref,
        "deployment": deployment,
        "families": dict(sorted(review.families.items())),
        "changes": [_change_json(change) for change in review.changes],
        "not_acknowledged": len(review.blocking),
    }
    if review.deployment.engines:
        data["engine_changes"] = [
            {**{k: v for k, v in vars(c).items() if k != "served" or v}, "old": c.old, "new": c.new}
            for c in review.engine_changes
        ]
    return escaping.json_dumps(data) + "\n"


def github(review: Review) -> str:
    """Workflow commands: an error per unacknowledged change, a notice per other change."""
    lines = []
    for change in review.changes:
        level = "error" if change.blocking else "notice"
        path = review.spec_paths.get(change.family)
        line = spec_line(review, change)
        props = f"file={escaping.github_property(path)},line={line}," if path else ""
        props += f"title={escaping.github_property(f'kvgen diff: {change.kind}')}"
        lines.append(f"::{level} {props}::{escaping.github_data(text_line(change))}")
    return "".join(f"{line}\n" for line in lines)


def text_line(change: Change) -> str:
    detail = f": {change.detail}" if change.detail else ""
    line = f"{_where(change)}: {change.kind}{detail}{_ack_text(change)}"
    old, new = change.old, change.new
    if old is not None and new is not None:
        line += (
            f"; slope {old.slope} -> {new.slope} B/token, intercept {old.intercept} -> "
            f"{new.intercept} B, max tokens {_tokens(old.max_tokens)} -> {_tokens(new.max_tokens)}"
        )
    return line


EMITTERS: dict[str, Callable[[Review], str]] = {
    "text": text,
    "json": as_json,
    "markdown": markdown,
    "github": github,
}
FORMATS = tuple(EMITTERS)
