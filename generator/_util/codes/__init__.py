"""The registry of diagnostic codes, used by the loader, the lint rules, ``kvgen import-hf``,
``kvgen explain``, the SARIF reporter and ``docs/codes.md``.

Codes are stable forever; a retired code stays in ``RETIRED`` and is never reused.

- ``KV0xx`` reading the file, ``KV1xx`` the schema: ``kvgen._util.codes.reader`` (KV015, what a
  line is: ``kvgen._util.codes.lines``; KV020-KV024 the file-access layer ``kvgen._util.files``:
  ``kvgen._util.codes.files``)
- ``KV2xx`` semantic lint rules: one module each under ``kvgen._lint.rules``, which also gives
  the whole catalogue (``kvgen._lint.rules.all_codes``): the rules depend on this package, never
  the reverse
- ``KV3xx`` ``kvgen import-hf``: ``kvgen._util.codes.hf``
- ``KV4xx`` ``kvgen diff``: ``kvgen._util.codes.review``
"""

from __future__ import annotations

from kvgen._util.codes import files, hf, lines, reader, review
from kvgen._util.codes._registry import Code, declare, declared

__all__ = ["RETIRED", "Code", "declare", "declared", "files", "hf", "lines", "reader", "review"]

# code -> why it was retired. Never reuse one of these codes.
RETIRED: dict[str, str] = {}
