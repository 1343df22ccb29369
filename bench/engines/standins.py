"""The runners' stand-ins for engine internals, failing clearly when a release moves them.

Imported by the runners inside an engine's own virtual environment (never by kvgen). Each
runner calls ``bind(engine_module)`` once; then
- ``engine_api(owner, name, used_by)`` fetches an internal API a stand-in borrows or imitates
  (``VllmConfig.max_concurrent_batches``, a planner function), and where the installed release
  lacks it raises ``MovedAPI`` naming the API and the stand-in that uses it;
- a config stand-in built on ``StandIn`` (or ``Fields(stands_for, **fields)``) carries only the
  fields the engine's code reads; a field a release reads that the stand-in lacks raises
  ``MovedAPI`` naming the field, the stand-in and the engine's file:line that read it.
A release that moves an internal API therefore stops the refresh with a message saying what
to update (CONTRIBUTING, "Following a new engine release"), not an AttributeError deep in the
engine's planner.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

_ENGINE: dict[str, Any] = {"name": "the engine", "version": "?", "root": None}


def bind(engine: ModuleType) -> None:
    """Name the engine package whose internals the stand-ins imitate (its version, its files)."""
    _ENGINE.update(
        name=engine.__name__,
        version=getattr(engine, "__version__", "?"),
        root=Path(str(engine.__file__)).resolve().parents[1],
    )


class MovedAPI(AttributeError):
    """The installed engine lacks an internal API a stand-in uses or imitates."""


def _release() -> str:
    return f"{_ENGINE['name']} {_ENGINE['version']}"


def engine_api(owner: Any, name: str, used_by: str) -> Any:
    """``owner.name`` from the installed engine, or MovedAPI naming it and ``used_by``."""
    try:
        return getattr(owner, name)
    except AttributeError:
        module = getattr(owner, "__module__", None)
        qualified = getattr(owner, "__qualname__", None) or getattr(owner, "__name__", "?")
        where = f"{module}.{qualified}" if module and module != qualified else qualified
        raise MovedAPI(
            f"{_release()} has no {where}.{name}, which {used_by} uses: the release moved or "
            "removed it; update that stand-in (CONTRIBUTING: Following a new engine release)"
        ) from None


def _reading_site() -> str:
    """The engine's file:line that read a missing field (the nearest engine frame)."""
    root = _ENGINE["root"]
    frame = sys._getframe(2)
    while frame is not None:
        path = Path(frame.f_code.co_filename).resolve()
        if root is not None and root in path.parents and "site-packages" in path.parts:
            return f"{path.relative_to(root).as_posix()}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return "the runner"


class StandIn:
    """Mixin of a config stand-in: reading a field it lacks raises MovedAPI naming it."""

    stands_for = "an engine config"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        for klass in type(self).__mro__:
            if name in klass.__dict__:
                # A property borrowed from the engine's class raised AttributeError (Python
                # then asks __getattr__): run it again so the field it lacks is named.
                try:
                    return klass.__dict__[name].__get__(self, type(self))
                except MovedAPI:
                    raise
                except AttributeError as exc:
                    raise MovedAPI(
                        f"{type(self).__name__}.{name} ({_release()}'s own, borrowed) failed "
                        f"on the stand-in: {exc}"
                    ) from None
        raise MovedAPI(
            f"{type(self).__name__} (standing in for {self.stands_for}) has no field "
            f"{name!r}, which {_release()} reads at {_reading_site()}: give the stand-in that "
            "field with the value an H100 launch resolves"
        )


class Fields(StandIn, SimpleNamespace):
    """A stand-in carrying the given fields (``StandIn``'s message for any other)."""

    def __init__(self, stands_for: str, **fields: Any) -> None:
        SimpleNamespace.__init__(self, **fields)
        self.__dict__["stands_for"] = stands_for
