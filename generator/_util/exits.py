"""Exit codes and the usage error, shared by every command (below the CLI layer)."""

from __future__ import annotations

import enum

__all__ = ["Exit", "UsageError"]


class Exit(enum.IntEnum):
    """0 clean, 1 findings or drift, 2 usage or internal error."""

    OK = 0
    FINDINGS = 1
    USAGE = 2


class UsageError(Exception):
    """A bad invocation: ``cli.main`` prints ``kvgen: error: <message>`` once and exits 2."""
