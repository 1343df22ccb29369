"""Project identity: the home URL (one constant) and the version.

``__version__`` is the release this source tree is; pyproject.toml's ``[project] version`` must
say the same (tests/cli/test_startup.py), so the installed metadata agrees with it. A constant
rather than ``importlib.metadata``: that import alone costs ~10 ms, a fifth of the start-up
budget of ``kvgen --version`` (bench/bench_startup.py).

``PROJECT_URL`` is a placeholder until the project's public home is confirmed; every link kvgen
prints or writes (SARIF ``informationUri``/``helpUri``, docs) derives from it.
"""

from __future__ import annotations

__all__ = ["CODES_DOC", "PROJECT_URL", "__version__", "code_url", "version"]

__version__ = "0.1.0"

PROJECT_URL = "https://github.com/kvgen-project/kvgen"
CODES_DOC = "docs/codes.md"


def code_url(code: str) -> str:
    """Where the documentation of ``code`` lives, e.g. ``.../blob/main/docs/codes.md#kv201``."""
    return f"{PROJECT_URL}/blob/main/{CODES_DOC}#{code.lower()}"


def version() -> str:
    """kvgen's version (the same as the installed package metadata)."""
    return __version__
