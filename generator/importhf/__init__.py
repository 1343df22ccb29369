"""Import a Hugging Face ``config.json`` into a kvgen family spec (``kvgen import-hf``).

The importer reads only what decides the KV cache: layer count, KV heads, head size, which
layers slide and how far, MLA latent sizes, recurrent state sizes, dtype and context length.
It never guesses: a field it does not know, or two fields that disagree, become diagnostics
anchored at the JSON key, and no spec is produced.

Codes (stable; a retired code is never reused):
- ``KV301`` the file cannot be read as a JSON object
- ``KV302`` a field the importer does not know (it may change the cache)
- ``KV303`` fields that contradict each other
- ``KV304`` a required field is missing
- ``KV305`` a value or feature the spec cannot express
- ``KV306`` a duplicate key in a JSON object
- ``KV307`` a value of the wrong type or range
"""

from __future__ import annotations

from kvgen.importhf._import import IMPORT_CODES, ImportResult, import_config
from kvgen.importhf._render import compact_pattern, to_identifier

__all__ = ["IMPORT_CODES", "ImportResult", "compact_pattern", "import_config", "to_identifier"]
