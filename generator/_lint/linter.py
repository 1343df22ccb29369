"""Lint specs: the loader's reader and schema diagnostics, then the semantic rules.

Public API (used by ``kvgen lint`` and ``kvgen generate``, which both run ``check_paths``)::

    from kvgen._lint.linter import lint_loaded, lint_paths
    diagnostics = lint_paths(["schema/families"])   # sorted list[Diagnostic]

Importing this module must stay cheap: no jinja2, no torch, no jsonschema.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from kvgen._lint.noqa import directives, suppress
from kvgen._lint.rules import lint_rules
from kvgen._lint.rules._base import Finding, RuleContext
from kvgen._spec.loader import SPEC_SUFFIXES, LoadedSpec, SourceMap, expand_paths, load_path
from kvgen._spec.models import Family
from kvgen._util.codes import reader as codes
from kvgen._util.diagnostics import Diagnostic, Severity

__all__ = [
    "SPEC_SUFFIXES",
    "LintReport",
    "check_paths",
    "duplicate_family",
    "expand_paths",
    "lint_family",
    "lint_loaded",
    "lint_paths",
    "lint_report",
]


class LintReport(NamedTuple):
    """What lint reports, and the findings that ``# kvgen: noqa`` comments suppressed."""

    diagnostics: list[Diagnostic]
    suppressed: list[Diagnostic]


def lint_family(path: str, family: Family, source: SourceMap) -> list[Diagnostic]:
    """Run every semantic rule on a validated family; positions come from ``source``."""
    ctx = RuleContext(family)
    out = []
    for rule in lint_rules():
        assert rule.check is not None
        for finding in rule.check(ctx):
            out.append(_diagnostic(path, source, rule.code, rule.severity, finding))
    return out


def _diagnostic(
    path: str, source: SourceMap, code: str, severity: Severity, finding: Finding
) -> Diagnostic:
    line, col = source.key(finding.loc) if finding.at == "key" else source.value(finding.loc)
    return Diagnostic(path, line, col, code, finding.message, severity, finding.fix)


def lint_loaded(loaded: LoadedSpec) -> list[Diagnostic]:
    """Reader and schema diagnostics, plus rule diagnostics when the family validated (less
    those a ``# kvgen: noqa`` comment suppresses); sorted."""
    return report_loaded(loaded).diagnostics


def report_loaded(loaded: LoadedSpec) -> LintReport:
    """``lint_loaded``, with the suppressed findings beside it."""
    diagnostics = list(loaded.diagnostics)
    if loaded.family is None:
        return LintReport(sorted(diagnostics), [])
    diagnostics += lint_family(loaded.path, loaded.family, loaded.source)
    kept, suppressed = suppress(loaded.path, diagnostics, directives(loaded.raw))
    return LintReport(sorted(kept), suppressed)


def duplicate_family(path: str, at: tuple[int, int], family: str, first: str) -> Diagnostic:
    """KV010: ``family`` is defined by the spec at ``path`` and, earlier, by ``first``."""
    return codes.DUPLICATE_FAMILY.at(path, at, f"family '{family}' is also defined in {first}")


def lint_paths(paths: Iterable[str | Path], root: Path | None = None) -> list[Diagnostic]:
    """Lint files and directories; a file that cannot be read is a KV009 diagnostic (a link
    KV020, a FIFO or device KV021), a path that does not exist a ``UsageError``. ``root``
    (the project root) anchors the link checks of folders (default: the working directory)."""
    return lint_report(paths, root).diagnostics


def lint_report(paths: Iterable[str | Path], root: Path | None = None) -> LintReport:
    """``lint_paths``, with the suppressed findings beside it."""
    return check_paths(paths, root)[1]


def check_paths(
    paths: Iterable[str | Path], root: Path | None = None
) -> tuple[list[tuple[Path, LoadedSpec]], LintReport]:
    """Every check ``kvgen generate`` runs before it renders, on the files under ``paths``:
    each file's reader, schema and rule findings (``# kvgen: noqa`` applied), and KV010 for a
    clean spec whose family an earlier clean file (in path order) already defines. Returns the
    clean, first-of-their-family specs with their paths, and the report. ``kvgen lint`` prints
    the report; ``kvgen generate`` renders the specs only when the report has no error, so a
    set of files lints without an error exactly when generate accepts it."""
    clean: list[tuple[Path, LoadedSpec]] = []
    diagnostics: list[Diagnostic] = []
    suppressed: list[Diagnostic] = []
    seen: dict[str, str] = {}
    for path in dict.fromkeys(expand_paths(paths)):
        loaded = load_path(path, root)
        report = report_loaded(loaded)
        diagnostics += report.diagnostics
        suppressed += report.suppressed
        if loaded.family is None or any(d.severity == "error" for d in report.diagnostics):
            continue
        name = loaded.family.family
        if name in seen:
            at = loaded.source.value(("family",))
            diagnostics.append(duplicate_family(loaded.path, at, name, seen[name]))
            continue
        seen[name] = loaded.path
        clean.append((path, loaded))
    return clean, LintReport(sorted(diagnostics), sorted(suppressed))
