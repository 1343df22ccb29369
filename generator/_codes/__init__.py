"""The registry of diagnostic codes, used by the loader, the lint rules, ``kvgen import-hf``,
``kvgen explain``, the SARIF reporter and ``docs/codes.md``.

Codes are stable forever; a retired code stays in ``RETIRED`` and is never reused.

- ``KV0xx`` reading the file, ``KV1xx`` the schema: ``kvgen._codes.reader`` (KV015, what a
  line is: ``kvgen._codes.lines``; KV020-KV024 the file-access layer ``kvgen._files``:
  ``kvgen._codes.files``)
- ``KV2xx`` semantic lint rules: one module each under ``kvgen._rules``, which also gives
  the whole catalogue (``kvgen._rules.all_codes``): the rules depend on this package, never
  the reverse
- ``KV3xx`` ``kvgen import-hf``: ``kvgen._codes.hf``
- ``KV4xx`` ``kvgen diff``: ``kvgen._codes.review``
"""

from __future__ import annotations

from kvgen._codes import files, hf, lines, reader, review
from kvgen._codes._registry import Code, declare, declared

__all__ = ["RETIRED", "Code", "declare", "declared", "files", "hf", "lines", "reader", "review"]

# code -> why it was retired. Never reuse one of these codes.
RETIRED: dict[str, str] = {}
