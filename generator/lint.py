"""Lint specs: the loader's reader and schema diagnostics, then the semantic rules.

Public API (used by ``kvgen lint`` and ``kvgen generate``)::

    from kvgen.lint import lint_loaded, lint_paths
    diagnostics = lint_paths(["schema/families"])   # sorted list[Diagnostic]

Importing this module must stay cheap: no jinja2, no torch, no jsonschema.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kvgen.diagnostics import Diagnostic, Severity
from kvgen.loader import LoadedSpec, SourceMap, load_path
from kvgen.rules import lint_rules
from kvgen.rules._base import Finding, RuleContext
from kvgen.spec import Family

__all__ = ["SPEC_SUFFIXES", "expand_paths", "lint_family", "lint_loaded", "lint_paths"]

SPEC_SUFFIXES = (".yaml", ".yml")


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
    """Reader and schema diagnostics, plus rule diagnostics when the family validated; sorted."""
    diagnostics = list(loaded.diagnostics)
    if loaded.family is not None:
        diagnostics += lint_family(loaded.path, loaded.family, loaded.source)
    return sorted(diagnostics)


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given; directories expanded (recursively) to their *.yaml and *.yml files."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(
                child
                for child in path.rglob("*")
                if child.suffix in SPEC_SUFFIXES and child.is_file()
            )
        else:
            files.append(path)
    return files


def lint_paths(paths: Iterable[str | Path]) -> list[Diagnostic]:
    """Lint files and directories; a path that cannot be read is a KV009 diagnostic."""
    diagnostics: list[Diagnostic] = []
    for path in dict.fromkeys(expand_paths(paths)):
        diagnostics += lint_loaded(load_path(path))
    return sorted(diagnostics)
