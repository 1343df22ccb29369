"""Import a Hugging Face ``config.json`` into a kvgen family spec (``kvgen import-hf``).

The importer reads only what decides the KV cache: layer count, KV heads, head size, which
layers slide and how far, MLA latent sizes, recurrent state sizes, dtype and context length.
It never guesses: a field it does not know, or two fields that disagree, become diagnostics
anchored at the JSON key, and no spec is produced.

Codes: KV3xx, declared once in ``kvgen._util.codes.hf`` (``kvgen explain KV301``).
"""

from __future__ import annotations

from kvgen._importhf._import import ImportResult, import_config
from kvgen._importhf._render import compact_pattern, to_identifier

__all__ = ["ImportResult", "compact_pattern", "import_config", "to_identifier"]
