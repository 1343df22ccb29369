"""``docs/codes.md``: the reference of every diagnostic code, generated from the registry.

``kvgen explain --write-docs`` writes it, ``kvgen explain --check-docs`` fails on drift (a
test runs the check), so the page can never disagree with ``kvgen explain``.

``kvgen/_cli/catalogue.py`` is the same registry as a literal table, for ``kvgen explain CODE`` to
read without importing the rules (and pydantic with them). ``python -m kvgen._lint.codes_doc``
rewrites it; tests/unit/test_codes_registry.py fails while it is stale.
"""

from __future__ import annotations

from kvgen._util.codes._registry import Code
from kvgen._util.meta import CODES_DOC

__all__ = ["CATALOGUE", "render_catalogue", "render_codes_page"]

CATALOGUE = "_cli/catalogue.py"  # under kvgen/, beside the command that reads it

_ORIGINS = (
    ("reader", "Reading the file (KV0xx)", "Emitted by the loader before the schema is checked."),
    ("schema", "The schema (KV1xx)", "Types, ranges, unknown and missing keys."),
    ("lint", "Lint rules (KV2xx)", "Semantic checks on a spec that passed the schema."),
    ("import-hf", "kvgen import-hf (KV3xx)", "Problems in a Hugging Face config.json."),
    ("diff", "kvgen diff (KV4xx)", "Entries `kvgen diff` refuses to compare, at the ref or here."),
)


def _section(code: Code) -> str:
    summary, _, body = code.doc.partition("\n")
    # The rule docs use level-2 headings; inside the page they sit below the code's heading.
    body = "\n".join(f"#{line}" if line.startswith("## ") else line for line in body.splitlines())
    fix = f"\nDefault fix hint: {code.fix}.\n" if code.fix else ""
    return (
        f'<a id="{code.code.lower()}"></a>\n\n'
        f"## {code.code} {code.name}\n\n"
        f"{code.severity} · {code.origin} · `kvgen explain {code.code}`\n\n"
        f"{summary.strip()}\n{body.rstrip()}\n{fix}"
    )


def render_codes_page(codes: tuple[Code, ...]) -> str:
    """The full text of ``docs/codes.md`` for ``codes`` (sorted by code)."""
    parts = [
        "# Diagnostic codes\n\n"
        f"<!-- Generated from kvgen's code registry by `kvgen explain --write-docs`; do not\n"
        f"     edit by hand. `kvgen explain --check-docs` fails when {CODES_DOC} is stale. -->\n\n"
        "Every finding of `kvgen lint`, `kvgen generate`, `kvgen import-hf` and `kvgen diff` "
        "carries one of these codes.\nCodes are stable: a code never changes meaning and a "
        "retired code is never reused.\n`kvgen explain CODE` prints the same text.\n"
    ]
    for origin, title, about in _ORIGINS:
        group = [code for code in codes if code.origin == origin]
        if not group:
            continue
        rows = "".join(
            f"| [{c.code}](#{c.code.lower()}) | `{c.name}` | {c.severity} | {c.summary} |\n"
            for c in group
        )
        parts.append(
            f"\n## {title}\n\n{about}\n\n| Code | Name | Severity | Summary |\n"
            f"| --- | --- | --- | --- |\n{rows}"
        )
    parts.append("\n---\n")
    parts.extend(f"\n{_section(code)}" for code in codes)
    return "".join(parts)


def render_catalogue(codes: tuple[Code, ...]) -> str:
    """The full text of ``kvgen/_cli/catalogue.py``: code -> (name, severity, fix, doc)."""
    rows = "".join(
        f"    {c.code!r}: ({c.name!r}, {c.severity!r}, {c.fix!r}, {c.doc!r}),\n" for c in codes
    )
    return (
        '"""Every diagnostic code as a literal table: code -> (name, severity, fix, doc).\n\n'
        "Generated from kvgen's code registry by ``python -m kvgen._lint.codes_doc``; do not\n"
        "edit. ``kvgen explain CODE`` reads it so that it starts without importing the rules.\n"
        '"""\n\n'
        "# ruff: noqa: E501\n"
        "# fmt: off\n"
        f"CODES: dict[str, tuple[str, str, str, str]] = {{\n{rows}}}\n"
    )


if __name__ == "__main__":
    from pathlib import Path

    import kvgen
    from kvgen._lint.rules import all_codes

    target = Path(kvgen.__file__).parent / CATALOGUE
    target.write_text(render_catalogue(all_codes()), encoding="utf-8")
    print(f"wrote {target}")
