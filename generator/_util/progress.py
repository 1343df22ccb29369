"""A progress line on stderr for the commands that can run for seconds.

``kvgen diff`` over many families, ``kvgen generate`` of many families, ``plan --plot`` and
``compare --plot`` show ``kvgen: <label> i/n <item>`` on one line, redrawn in place, once they
have run for a second (``KVGEN_PROGRESS_AFTER_S``, for tests), and clear it when done. Only on
a terminal and never under ``-q``: pipes, files and CI logs receive nothing, so what they show
is the same as before. A log line printed meanwhile clears the progress line first.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from types import TracebackType
from typing import TextIO

__all__ = ["Progress"]

AFTER_S = 1.0  # a command that ends sooner never shows progress
CLEAR = "\r\033[K"


class Progress:
    """``with Progress("rendering", n) as progress: ... progress.advance(name)``."""

    def __init__(self, label: str, total: int, *, stream: TextIO | None = None):
        self.label, self.total, self.done = label, total, 0
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty()) and logging.getLogger("kvgen").isEnabledFor(
            logging.INFO
        )
        self.after = float(os.environ.get("KVGEN_PROGRESS_AFTER_S", AFTER_S))
        self.start = time.monotonic()
        self.shown = False
        self._filter = _ClearFirst(self)

    def __enter__(self) -> Progress:
        if self.enabled:
            for handler in logging.getLogger().handlers:
                handler.addFilter(self._filter)
        return self

    def advance(self, item: str = "") -> None:
        """One more step done; ``item`` names the next (or the one just done)."""
        self.done += 1
        if self.enabled and time.monotonic() - self.start >= self.after:
            text = f"kvgen: {self.label} {self.done}/{self.total} {item}".rstrip()
            self.stream.write(f"{CLEAR}{text}")
            self.stream.flush()
            self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write(CLEAR)
            self.stream.flush()
            self.shown = False

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.clear()
        for handler in logging.getLogger().handlers:
            handler.removeFilter(self._filter)


class _ClearFirst(logging.Filter):
    """Clears the progress line before a log record is written below it."""

    def __init__(self, progress: Progress):
        super().__init__()
        self.progress = progress

    def filter(self, record: logging.LogRecord) -> bool:
        self.progress.clear()
        return True
