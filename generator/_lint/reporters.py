"""Output formats of ``kvgen lint``: one small emitter per format, in a registry by name.

Each emitter turns sorted diagnostics into the full text written to stdout (``""`` when there
is nothing to say). They never touch stderr; the command logs the summary there. Paths and
messages may quote a spec: each format escapes them with its one function of
``kvgen._util.escaping`` (text through ``Diagnostic.render``). Findings that a ``# kvgen: noqa``
comment suppressed (``suppressed``) appear only in SARIF, which has a place for them
(``suppressions``); the text summary counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kvgen._util.diagnostics import Diagnostic
from kvgen._util.escaping import github_data as escape_data
from kvgen._util.escaping import github_property as escape_property
from kvgen._util.escaping import json_dumps
from kvgen._util.meta import PROJECT_URL, code_url, version

if TYPE_CHECKING:
    from kvgen._util.codes import Code

__all__ = ["REPORTERS", "escape_data", "escape_property", "render"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
Emitter = Callable[..., str]  # (diagnostics, *, suppressed=()) -> the text of stdout


def _lines(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


def text(diagnostics: Sequence[Diagnostic], suppressed: Sequence[Diagnostic] = ()) -> str:
    """``path:line:col: CODE message (fix: ...)``, one per line."""
    return _lines([d.render() for d in diagnostics])


def _rule_name(code: str) -> str:
    from kvgen._lint.rules import find_code  # the rule registry: not needed to list the formats

    rule = find_code(code)
    return rule.name if rule else ""


def as_json(diagnostics: Sequence[Diagnostic], suppressed: Sequence[Diagnostic] = ()) -> str:
    """A stable JSON list: one object per diagnostic, keys in a fixed order."""
    items = [
        {
            "path": d.path,
            "line": d.line,
            "col": d.col,
            "code": d.code,
            "name": _rule_name(d.code),
            "severity": d.severity,
            "message": d.message,
            "fix": d.fix,
        }
        for d in diagnostics
    ]
    return json_dumps(items) + "\n"


def github(diagnostics: Sequence[Diagnostic], suppressed: Sequence[Diagnostic] = ()) -> str:
    """GitHub Actions workflow commands: ``::error file=..,line=..,col=..,title=CODE::message``."""
    lines = []
    for d in diagnostics:
        message = f"{d.message} (fix: {d.fix})" if d.fix else d.message
        props = f"file={escape_property(d.path)},line={d.line},col={d.col},title={d.code}"
        lines.append(f"::{d.severity} {props}::{escape_data(message)}")
    return _lines(lines)


def sarif(
    diagnostics: Sequence[Diagnostic],
    rules: Sequence[Code] | None = None,
    *,
    suppressed: Sequence[Diagnostic] = (),
) -> str:
    """SARIF 2.1.0: every documented code as a rule (sorted by code), one result per finding.

    The driver names kvgen's version and home; each rule links its section of docs/codes.md
    (``helpUri``) and carries its What/Why/Example/Fix as ``help`` markdown, which code
    scanning UIs show beside the finding."""
    from kvgen._lint.rules import all_codes

    rules = sorted(all_codes() if rules is None else rules, key=lambda rule: rule.code)
    index = {rule.code: i for i, rule in enumerate(rules)}
    driver = {
        "name": "kvgen",
        "version": version(),
        "informationUri": PROJECT_URL,
        "rules": [
            {
                "id": rule.code,
                "name": rule.name,
                "shortDescription": {"text": rule.summary},
                "fullDescription": {"text": rule.doc},
                "helpUri": code_url(rule.code),
                "help": {"text": rule.doc, "markdown": rule.doc},
                "defaultConfiguration": {"level": rule.severity},
            }
            for rule in rules
        ],
    }
    results = []
    hidden = set(suppressed)
    for d in sorted([*diagnostics, *suppressed]):
        result: dict[str, object] = {"ruleId": d.code}
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        result["level"] = d.severity
        result["message"] = {"text": f"{d.message} (fix: {d.fix})" if d.fix else d.message}
        result["locations"] = [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": d.path},
                    "region": {"startLine": d.line, "startColumn": d.col},
                }
            }
        ]
        if d in hidden:  # SARIF 2.1.0 §3.27.23: reported, and marked as suppressed in source
            result["suppressions"] = [{"kind": "inSource"}]
        results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "results": results}],
    }
    return json_dumps(log) + "\n"


REPORTERS: dict[str, Emitter] = {"text": text, "json": as_json, "github": github, "sarif": sarif}


def render(
    format_name: str, diagnostics: Sequence[Diagnostic], suppressed: Sequence[Diagnostic] = ()
) -> str:
    """Render with the emitter registered as ``format_name`` (KeyError if there is none)."""
    return REPORTERS[format_name](diagnostics, suppressed=suppressed)
