"""The registry of diagnostic codes, used by the loader, the lint rules, ``kvgen import-hf``,
``kvgen explain``, the SARIF reporter and ``docs/codes.md``.

Codes are stable forever; a retired code stays in ``RETIRED`` and is never reused.

- ``KV0xx`` reading the file, ``KV1xx`` the schema: ``kvgen.codes.reader``
- ``KV2xx`` semantic lint rules: one module each under ``kvgen.rules``
- ``KV3xx`` ``kvgen import-hf``: ``kvgen.codes.hf``
"""

from __future__ import annotations

from functools import cache

from kvgen.codes import hf, reader
from kvgen.codes._registry import Code, declare, declared

__all__ = ["RETIRED", "Code", "all_codes", "declare", "find_code", "hf", "reader", "unknown_code"]

# code -> why it was retired. Never reuse one of these codes.
RETIRED: dict[str, str] = {}


@cache
def all_codes() -> tuple[Code, ...]:
    """Every code (reader, schema, lint rules, import-hf), sorted by code."""
    from kvgen.rules import lint_rules  # the rules import this package; load them lazily

    return tuple(sorted([*declared(), *lint_rules()], key=lambda entry: entry.code))


def find_code(code_or_name: str) -> Code | None:
    """Look a code up by code (any case) or by kebab name."""
    wanted = code_or_name.strip()
    for entry in all_codes():
        if entry.code == wanted.upper() or entry.name == wanted.lower():
            return entry
    return None


def unknown_code(code_or_name: str) -> str:
    """The message for a code that is not declared, with the closest code or name."""
    from kvgen.suggest import did_you_mean  # difflib: only on this error path

    choices = [entry.code for entry in all_codes()] + [entry.name for entry in all_codes()]
    wanted = code_or_name.strip()
    hint = did_you_mean(wanted.upper() if wanted[:2].lower() == "kv" else wanted, choices)
    return f"unknown code {code_or_name!r}{hint}; see 'kvgen lint --list-rules'"
