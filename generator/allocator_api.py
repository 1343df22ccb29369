"""The runtime names every generated allocator re-exports, declared once.

``generated/<family>/allocator.py`` star-imports this module so that callers need only the
family's module (``allocator.OutOfPagesError``, ``allocator.live_pages``); a name added to the
shim runtime's surface is added here, in one file, not in every generated allocator. The
family's own ``KVCacheShim`` subclass, tables and literals are the generated module's.
Imports torch (through ``kvgen.runtime.allocator``).
"""

from kvgen.runtime.allocator import (
    NO_PAGE,  # block-table entry of a page not held (stale, scratch, or past capacity)
    SEMANTICS,
    AllocatorError,
    CacheManager,
    DoubleFreeError,
    DuplicateRequestError,
    InvalidRequestIdError,
    InvalidStepError,
    Layer,
    LayerKind,
    LayerStack,
    OutOfPagesError,
    Pool,
    PoolAllocationError,
    QuotaTooSmallError,
    RequestError,
    ResumeRefusedError,
    UnknownNameError,
    UnknownRequestError,
    live_pages,
    peak_live_pages,
    select_device,
)

__all__ = [
    "NO_PAGE",
    "SEMANTICS",
    "AllocatorError",
    "CacheManager",
    "DoubleFreeError",
    "DuplicateRequestError",
    "InvalidRequestIdError",
    "InvalidStepError",
    "Layer",
    "LayerKind",
    "LayerStack",
    "OutOfPagesError",
    "Pool",
    "PoolAllocationError",
    "QuotaTooSmallError",
    "RequestError",
    "ResumeRefusedError",
    "UnknownNameError",
    "UnknownRequestError",
    "live_pages",
    "peak_live_pages",
    "select_device",
]
