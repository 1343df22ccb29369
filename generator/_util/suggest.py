"""Suggestions ("did you mean") for every name a user can misspell: spec keys, families,
models, profiles, rule codes. One wording everywhere: a typo reads the same in every command."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["closest", "did_you_mean"]


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The single closest choice to ``word`` (case-insensitive), or None when nothing is near."""
    import difflib  # ~2 ms: only on the error path that suggests a name

    options = sorted(set(choices))
    lowered = {option.lower(): option for option in options}
    found = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[found[0]] if found else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, else the empty string."""
    match = closest(word, choices)
    return f" (did you mean {match!r}?)" if match is not None else ""
