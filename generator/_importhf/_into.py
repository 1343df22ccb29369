"""``kvgen import-hf --into FAMILY.yaml``: add the imported model to an existing family file.

The family file is edited as text, not re-dumped: the model entry is inserted after the last
entry of its ``models:`` list, re-indented to that list's indentation, so every comment and
line of the file stays as it was. The result must load and lint clean, or nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvgen._util.diagnostics import Diagnostic

__all__ = ["IntoRefused", "add_model"]


@dataclass
class IntoRefused(Exception):
    """Why the model cannot be added: a message, and the merged file's diagnostics if any."""

    message: str
    diagnostics: tuple[Diagnostic, ...] = ()


def _model_block(imported: str) -> list[str]:
    """The lines of the imported spec's one model entry (``  - name:`` to ``layers``)."""
    lines = imported.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  - name: "))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("   ")), None)
    return lines[start:end]


def _reindent(block: list[str], dash: int, content: int) -> list[str]:
    """From the importer's layout (dash at column 2, keys at 4) to the file's own."""
    first = " " * dash + "-" + " " * (content - dash - 1) + block[0][4:]
    return [first] + [" " * content + line[4:] for line in block[1:]]


def _end_of_models(lines: list[str], key_line: int, dash: int) -> int:
    """The index after the last content line of the ``models:`` block list."""
    last = key_line
    for index in range(key_line + 1, len(lines)):
        stripped = lines[index].lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(lines[index]) - len(stripped)
        if indent < dash or (indent == dash and not stripped.startswith("-")):
            break
        last = index
    return last + 1


def add_model(display: str, family_text: str, imported: str, source: str) -> str:
    """``family_text`` with the model of ``imported`` (a spec ``import_config`` wrote) added.

    Raises ``IntoRefused`` when the family file does not load, already has a model of that
    name, disagrees on a family-wide setting, or would not lint clean with the model added.
    """
    from kvgen._lint.linter import lint_loaded
    from kvgen._spec.loader import load_bytes

    family = load_bytes(display, family_text.encode("utf-8"))
    if family.family is None:
        raise IntoRefused(f"{display} does not load; fix it first", tuple(family.diagnostics))
    new = load_bytes("import", imported.encode("utf-8")).family
    assert new is not None  # import_config only returns specs that load
    model = new.models[0].name
    if model in {m.name for m in family.family.models}:
        raise IntoRefused(
            f"model '{model}' is already in {display}; --model NAME adds it under another name"
        )
    for setting, flag in (("tokens_per_block", "--tokens-per-block"), ("kv_cache_dtype", None)):
        ours, theirs = getattr(family.family, setting), getattr(new, setting)
        if ours != theirs:
            hint = f"; give {flag} {ours}" if flag else f"; give --kv-cache-dtype {ours}"
            raise IntoRefused(f"{display} has {setting} {ours}, the import {theirs}{hint}")
    lines = family_text.splitlines()
    key_line = family.source.key(("models",))[0] - 1
    first_line, first_col = family.source.value(("models", 0))
    dash_line = lines[first_line - 1]
    dash = len(dash_line) - len(dash_line.lstrip(" "))
    if not dash_line.lstrip(" ").startswith("-"):
        raise IntoRefused(f"{display}: --into needs `models:` written as a block list (- name:)")
    block = [" " * dash + f"# {model}: imported by kvgen import-hf from {source}"]
    block += _reindent(_model_block(imported), dash, first_col - 1)
    at = _end_of_models(lines, key_line, dash)
    merged = "\n".join(lines[:at] + block + lines[at:]) + "\n"
    checked = load_bytes(display, merged.encode("utf-8"))
    errors = tuple(d for d in lint_loaded(checked) if d.severity == "error")
    if checked.family is None or errors:
        raise IntoRefused(f"{display} would not lint clean with '{model}' added", errors)
    return merged
