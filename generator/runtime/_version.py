"""The runtime version that generated allocators check at import.

A generated allocator states the version of the runtime API it was generated for; the runtime
refuses a module generated for another version with a message naming the fix, the way
protobuf-generated code checks its runtime. Bump ``RUNTIME_VERSION`` whenever a change to
:mod:`kvgen.runtime.allocator` would break a module generated before it (and regenerate).
"""

from __future__ import annotations

__all__ = ["RUNTIME_VERSION", "require_version"]

RUNTIME_VERSION = 1


def require_version(generated_for: int, module: str = "generated/<family>/allocator.py") -> None:
    """Refuse, with ``ImportError``, a module generated for another runtime version."""
    if generated_for != RUNTIME_VERSION:
        raise ImportError(
            f"{module} was generated for kvgen runtime {generated_for}; installed kvgen "
            f"provides {RUNTIME_VERSION}: run `kvgen generate`"
        )
