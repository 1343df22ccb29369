"""Every config field a spec comment names, named where the config has it.

The importer reads a composite config's text model from its ``text_config`` (``HfConfig.inner``)
and writes each number's field by its own name; here those names become the path a reader
finds in the config (``text_config.num_key_value_heads``), so a comment never names a field
the config does not hold at that place."""

from __future__ import annotations

import re

from kvgen._importhf._config import HfConfig

__all__ = ["located"]

_SOURCE = re.compile(r"config\.json\b(.*)$")
_NAME = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*)(?![\w.])")


def located(cfg: HfConfig, text: str) -> str:
    """``text`` (the rendered spec) with the field names of its value comments prefixed by
    the block they come from, for a composite config; unchanged for a flat one."""
    if not cfg.prefix:
        return text
    block = ".".join(str(p) for p in cfg.prefix)

    def field(match: re.Match[str]) -> str:
        name = match.group(1)
        return f"{block}.{name}" if name in cfg.inner and name != block else name

    out = []
    for line in text.split("\n"):
        code, sep, comment = line.partition("  # ")
        if sep and not line.startswith("#"):
            source = _SOURCE.search(comment)
            if source is not None:
                start = source.start(1)
                comment = comment[:start] + _NAME.sub(field, comment[start:])
            line = code + sep + comment
        out.append(line)
    return "\n".join(out)
