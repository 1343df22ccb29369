"""The one exception hierarchy of the shim runtime.

Every call the shim refuses raises a subclass of :class:`AllocatorError` and leaves the shim
exactly as it was (requests, block tables, free lists, bytes in use, peak). Constructor
arguments that are out of range or of the wrong type raise ``ValueError`` instead: no shim
exists yet whose state could matter.

::

    AllocatorError
    ├── OutOfPagesError       a pool has too few free pages
    ├── ResumeRefusedError    resuming would lift a pool above max_util_for_resume
    ├── PoolAllocationError   the device cannot hold the pools (also a MemoryError)
    ├── RequestError          (also a LookupError)
    │   ├── UnknownRequestError    no request with this id
    │   ├── DuplicateRequestError  the id is already present
    │   ├── DoubleFreeError        the request was already freed
    │   └── InvalidRequestIdError  None or an unhashable id (also a TypeError)
    ├── UnknownNameError      no such manager, pool or layer (also a KeyError)
    ├── InvalidStepError      phase, acceptance, max_seq_len, chunk budget, argument types
    │                         (also a ValueError)
    └── QuotaTooSmallError    quota_bytes cannot hold the pools of zero tokens (also a
                              ValueError; raised by the constructor)
"""

from __future__ import annotations

__all__ = [
    "AllocatorError",
    "DoubleFreeError",
    "DuplicateRequestError",
    "InvalidRequestIdError",
    "InvalidStepError",
    "OutOfPagesError",
    "PoolAllocationError",
    "QuotaTooSmallError",
    "RequestError",
    "ResumeRefusedError",
    "UnknownNameError",
    "UnknownRequestError",
]


class AllocatorError(Exception):
    """Base class of every error the shim raises on purpose."""


class OutOfPagesError(AllocatorError):
    """A pool has fewer free pages than an operation needs; nothing was changed."""

    def __init__(self, manager: str, pool: str, needed: int, free: int) -> None:
        self.manager, self.pool, self.needed, self.free = manager, pool, needed, free
        super().__init__(f"{manager} pool {pool!r}: {needed} pages needed, {free} free")


class ResumeRefusedError(AllocatorError):
    """A pool's utilisation is above max_util_for_resume (a float32): a resume, and so an
    admission, is refused (TensorRT-LLM V2 checks before the resume)."""

    def __init__(self, manager: str, pool: str, utilisation: float, limit: float) -> None:
        self.manager, self.pool = manager, pool
        self.utilisation, self.limit = utilisation, limit
        super().__init__(
            f"{manager} pool {pool!r}: utilisation {utilisation:.6f} > max_util_for_resume "
            f"{limit:.6f}; a resume or an admission waits until pages are freed"
        )


class PoolAllocationError(AllocatorError, MemoryError):
    """The device cannot hold the pools; build them on device="meta" instead."""


class RequestError(AllocatorError, LookupError):
    """A request id that is unknown, already present, already freed, or not an id."""


class UnknownRequestError(RequestError):
    """No request has this id."""


class DuplicateRequestError(RequestError):
    """A request with this id is already present."""


class DoubleFreeError(RequestError):
    """The request was freed before."""


class InvalidRequestIdError(RequestError, TypeError):
    """Request ids are hashable and not None."""


class UnknownNameError(AllocatorError, KeyError):
    """No manager, pool or layer has this name."""

    def __str__(self) -> str:
        # KeyError quotes its message; a sentence reads better unquoted.
        return str(self.args[0]) if self.args else ""


class InvalidStepError(AllocatorError, ValueError):
    """A step the runtime cannot take (phase, draft acceptance, max_seq_len, budgets, types)."""


class QuotaTooSmallError(AllocatorError, ValueError):
    """A quota that cannot hold a manager's pools even for zero tokens."""
