"""kvgen.runtime: the shim runtime that generated allocators import (torch + stdlib).

The public surface is :mod:`kvgen.runtime.allocator`; this package itself only exposes the
version check, so that a generated module can check the runtime before using it.
"""

from kvgen.runtime._version import RUNTIME_VERSION, require_version

__all__ = ["RUNTIME_VERSION", "require_version"]
