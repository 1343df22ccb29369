"""Byte sizes as people write them (``80GiB``, ``1.5TiB``, ``512MiB``, ``17179869184B``).

Binary units (KiB, MiB, GiB, TiB, PiB) are powers of 1024, decimal ones (KB, MB, GB, TB, PB)
powers of 1000; units are case-insensitive and may follow a space. Where a person writes the
size (a flag, a config value) the unit is required (``parse_size_with_unit``). A size must come
to a whole number of bytes: ``1.5KiB`` is 1536 B, ``0.1B`` is an error rather than a silent
rounding.
"""

from __future__ import annotations

import argparse
import re
from fractions import Fraction

__all__ = [
    "GiB",
    "KiB",
    "MiB",
    "TiB",
    "count",
    "format_bytes",
    "format_size",
    "fraction",
    "parse_size",
    "parse_size_with_unit",
    "positive_int",
    "size_argument",
]

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
TiB = 1 << 40

_UNITS = {
    "": 1,
    "b": 1,
    "kib": KiB,
    "mib": MiB,
    "gib": GiB,
    "tib": TiB,
    "pib": 1 << 50,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "pb": 10**15,
}
# Sizes and counts are 64-bit in every engine and in torch; a larger one describes no device
# (and would overflow the float arithmetic of the engine policies and of format_size).
MAX_COUNT = (1 << 63) - 1
_SIZE = re.compile(r"^\s*(\d+(?:_\d+)*(?:\.\d+)?|\.\d+)\s*([a-zA-Z]*)\s*$")
_BINARY = (("PiB", 1 << 50), ("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB))


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text)} characters)"


def parse_size(text: str) -> int:
    """Bytes in ``text``; raises ``ValueError`` naming the accepted forms."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS:
        raise ValueError(
            f"invalid size {text!r}: use a number of bytes or a number with a unit "
            "(B, KiB, MiB, GiB, TiB, PiB, KB, MB, GB, TB, PB), e.g. 80GiB or 1.5TiB"
        )
    digits = match.group(1).replace("_", "")
    value = Fraction(digits) * _UNITS[unit] if len(digits) <= 64 else Fraction(MAX_COUNT + 1)
    if value > MAX_COUNT:
        raise ValueError(f"invalid size {_shown(text)}: over 2**63 - 1 bytes (8 EiB)")
    if value.denominator != 1:
        raise ValueError(f"invalid size {text!r}: {float(value):g} is not a whole number of bytes")
    return int(value)


def format_size(size: int) -> str:
    """A short binary-unit form: ``16 GiB``, ``468.75 MiB``, ``512 B`` (two decimals at most)."""
    sign = "-" if size < 0 else ""
    size = abs(size)
    for unit, scale in _BINARY:
        if size >= scale:
            text = f"{size / scale:.2f}".rstrip("0").rstrip(".")
            return f"{sign}{text} {unit}"
    return f"{sign}{size} B"


def format_bytes(size: int) -> str:
    """``format_size`` and the exact count when they differ: ``16 GiB (17179869184 B)``."""
    short = format_size(size)
    return short if short.endswith(" B") else f"{short} ({size} B)"


def parse_size_with_unit(text: str) -> int:
    """``parse_size``, where a bare number is refused with the likely reading: a size a person
    writes (a flag, a config value) names its unit, since ``80`` would mean 80 bytes, which
    nobody means (``80B`` still says bytes)."""
    match = _SIZE.match(text)
    digits = match.group(1).replace("_", "") if match and not match.group(2) else None
    # A number past 2**63 - 1 is refused as such whatever its unit (parse_size says so).
    if digits is not None and len(digits) <= 64 and Fraction(digits) <= MAX_COUNT:
        bytes_form = "" if "." in digits else f"write {digits}B for bytes; "
        raise ValueError(
            f"size {_shown(text)} has no unit: did you mean {digits}GiB? ({bytes_form}units: "
            "B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
        )
    return parse_size(text)


def size_argument(text: str) -> int:
    """``parse_size_with_unit`` as an argparse ``type=`` (a bad size is a usage error, exit 2)."""
    try:
        return parse_size_with_unit(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_int(text: str) -> int:
    """An argparse ``type=`` for counts such as max_batch_size (``count``)."""
    try:
        value = int(text) if len(text) <= 64 else 0
    except ValueError:
        value = 0
    try:
        return count(value, shown=_shown(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def count(value: object, shown: str | None = None) -> int:
    """A count as the flags take it (``--max-batch-size``, ``--tp-size``, ``--gpus``) and a
    file gives it: an int in [1, 2**63 - 1], never a bool or a float; ``ValueError`` otherwise
    (``shown``: the value as the user wrote it)."""
    if type(value) is not int or not 1 <= value <= MAX_COUNT:
        got = shown if shown is not None else _shown_value(value)
        raise ValueError(f"expected a positive integer up to 2**63 - 1, got {got}")
    return value


def fraction(value: object, shown: str | None = None) -> float:
    """A memory fraction as ``--gpu-memory-utilization`` takes it and a file gives it: a finite
    number in (0, 1] (never NaN, an infinity, a bool or a string), as a float; ``ValueError``
    otherwise."""
    if type(value) not in (int, float) or not 0 < value <= 1:  # type: ignore[operator]
        got = shown if shown is not None else _shown_value(value)
        raise ValueError(f"expected a fraction in (0, 1], got {got}")
    return float(value)  # type: ignore[arg-type]


def _shown_value(value: object) -> str:
    # A value read from a file, as TOML wrote it where it can (nan, inf, 7); long ones cut.
    text = _shown(value) if isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"
