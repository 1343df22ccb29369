"""Breaking-change review: the capacity of every spec at a git ref against the working tree.

``kvgen diff`` is the command; this package is its logic, free of any output format::

    review = review_specs("HEAD", ["schema/families"], ReferenceDeployment())
    review.blocking        # capacity-reducing or API changes nobody acknowledged

Each side is evaluated through a sizing module that THIS kvgen renders from that side's spec
(after lint), executed from memory: nothing committed at the ref runs, only its specs are read.
A module committed at the ref can therefore neither run code as the reviewer nor report false
capacities to hide a regression.

Reviewing a generator change (kvgen's own repository) needs the committed modules instead:
``trust_committed_modules=True`` (``kvgen diff --trust-committed-modules``) evaluates
``generated/<family>/sizing.py`` at the ref in a separate ``python -I`` process with a timeout,
and reads back only JSON; it still runs that code as the user, so use it only on refs you
trust. A committed module generated from another spec, or that fails, falls back to rendering.

Both sides are found by path, never through a link: the ref's trees by object id (``git
ls-tree -z``: NUL-separated, names unquoted), the working tree with ``lstat``. A symlink
(KV401) or another non-regular entry (KV402) at either side is a finding, never an added or
removed family (``kvgen._review._candidates``).

Every (family, model, profile, manager) is evaluated at one reference deployment
(``ReferenceDeployment``) and classified:

- ``capacity-reducing``: max tokens down, or intercept or slope up (blocks unless acknowledged);
- ``capacity-increasing``: any other change of slope, intercept or max tokens;
- ``api``: a family, model or profile renamed or removed, or a cache manager appearing or
  disappearing (blocks unless acknowledged);
- ``added``: a new family, model or profile (never blocks).

A family whose spec or module text changed without any of the above is ``cosmetic``.
An acknowledgement lives in the NEW spec: ``acknowledge: [{change, model, profile, reason}]``;
``model`` and ``profile`` match by name or ``*``. A removed family has no new spec, so its
removal cannot be acknowledged; a family renamed in the same file is acknowledged by the new one.
"""

from __future__ import annotations

from kvgen._review._git import GitTree, default_ref
from kvgen._review._layout import ReviewLayout, layout, output_drift
from kvgen._review._review import review_shipped, review_specs
from kvgen._review._types import (
    ADDED,
    API,
    BLOCKING,
    CAPACITY_INCREASING,
    CAPACITY_REDUCING,
    Capacity,
    Change,
    EngineChange,
    ReferenceDeployment,
    Review,
    ReviewError,
)

__all__ = [
    "ADDED",
    "API",
    "BLOCKING",
    "CAPACITY_INCREASING",
    "CAPACITY_REDUCING",
    "Capacity",
    "Change",
    "EngineChange",
    "GitTree",
    "ReferenceDeployment",
    "Review",
    "ReviewError",
    "ReviewLayout",
    "default_ref",
    "layout",
    "output_drift",
    "review_shipped",
    "review_specs",
]
