"""The runtime version that generated allocators check at import.

A generated allocator states the version of the runtime API it was generated for; the runtime
accepts it when it is at least that new and refuses a module generated for a newer runtime
with a message naming the fix, the way protobuf-generated code checks its runtime. Bump
``RUNTIME_VERSION`` when generated tables need something an older runtime lacks; a change
that breaks older generated modules must keep accepting them or say so here.
"""

from __future__ import annotations

__all__ = ["RUNTIME_VERSION", "require_version"]

RUNTIME_VERSION = 1


def require_version(generated_for: int, module: str = "generated/<family>/allocator.py") -> None:
    """Refuse, with ``ImportError``, a module generated for a newer runtime than this one."""
    if generated_for > RUNTIME_VERSION:
        raise ImportError(
            f"{module} was generated for kvgen runtime {generated_for}; installed kvgen "
            f"provides {RUNTIME_VERSION}: run `kvgen generate`"
        )
