"""Project identity: the home URL (one constant) and the installed version.

``PROJECT_URL`` is a placeholder until the project's public home is confirmed; every link kvgen
prints or writes (SARIF ``informationUri``/``helpUri``, docs) derives from it.
"""

from __future__ import annotations

from functools import cache

__all__ = ["CODES_DOC", "PROJECT_URL", "code_url", "version"]

PROJECT_URL = "https://github.com/kvgen-project/kvgen"
CODES_DOC = "docs/codes.md"


def code_url(code: str) -> str:
    """Where the documentation of ``code`` lives, e.g. ``.../blob/main/docs/codes.md#kv201``."""
    return f"{PROJECT_URL}/blob/main/{CODES_DOC}#{code.lower()}"


@cache
def version() -> str:
    """kvgen's version from the installed package metadata (``0+unknown`` when not installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as _version

    try:
        return _version("kvgen")
    except PackageNotFoundError:  # pragma: no cover - running from a bare source tree
        return "0+unknown"
