"""Byte sizes as people write them (``80GiB``, ``1.5TiB``, ``512MiB``, ``17179869184B``).

Binary units (KiB, MiB, GiB, TiB, PiB) are powers of 1024, decimal ones (KB, MB, GB, TB, PB)
powers of 1000; units are case-insensitive and may follow a space. Where a person writes the
size (a flag, a config value) the unit is required (``parse_size_with_unit``). A fractional size
(``36.28GiB``, as kvgen prints a budget) is rounded down to whole bytes and ``rounding`` states
it (``0.5B`` is 0 B, which a command then refuses as no budget).

Token counts (``--max-seq-len 32k``) read as vLLM's ``human_readable_int`` reads them
(vllm/utils/argparse_utils.py): k, m, g, t are powers of 1000 and may follow a decimal
(``25.6k`` is 25600), K, M, G, T powers of 1024 after a whole number (``32K`` is 32768).
"""

from __future__ import annotations

import argparse
import re
import sys
from fractions import Fraction

__all__ = [
    "GiB",
    "KiB",
    "MiB",
    "TiB",
    "count",
    "engine_bytes",
    "format_bytes",
    "format_size",
    "fraction",
    "parse_size",
    "parse_size_with_unit",
    "positive_int",
    "rounding",
    "size_argument",
    "token_count",
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
# The number at the start of the stripped text; the rest must be blanks and a unit. Matched as
# a prefix with single-character repetitions, then checked with string methods: no
# backtracking, linear in the text (issue 29: `\s*([a-zA-Z]*)\s*$` retried every split of a
# blank run, quadratic in a 1 MiB config value).
_NUMBER = re.compile(r"\d[\d_]*(?:\.\d+)?|\.\d+")


def _split_size(text: str) -> tuple[str, str] | None:
    """``(number, unit)`` of a size as written (``"80 GiB"``: ``("80", "GiB")``), else None.
    Underscores only between digits (``1_024``), as in Python's literals."""
    stripped = text.strip()
    match = _NUMBER.match(stripped)
    if match is None:
        return None
    number, unit = match.group(), stripped[match.end() :].lstrip()
    whole = number.partition(".")[0]
    if "__" in whole or whole.endswith("_"):
        return None
    if unit and not (unit.isascii() and unit.isalpha()):
        return None
    return number, unit


_BINARY = (("PiB", 1 << 50), ("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB))


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text)} characters)"


def parse_size(text: str) -> int:
    """Bytes in ``text``; raises ``ValueError`` naming the accepted forms."""
    match = _split_size(text)
    unit = match[1].lower() if match else ""
    if not match or unit not in _UNITS:
        raise ValueError(
            f"invalid size {_shown(text)}: use a number of bytes or a number with a unit "
            "(B, KiB, MiB, GiB, TiB, PiB, KB, MB, GB, TB, PB), e.g. 80GiB or 1.5TiB"
        )
    digits = match[0].replace("_", "")
    value = Fraction(digits) * _UNITS[unit] if len(digits) <= 64 else Fraction(MAX_COUNT + 1)
    if value > MAX_COUNT:
        raise ValueError(f"invalid size {_shown(text)}: over 2**63 - 1 bytes (8 EiB)")
    return int(value)  # a fraction of a byte rounds down (``rounding`` says so)


def rounding(text: str) -> str | None:
    """The statement that ``parse_size(text)`` rounded a fractional byte count down, or None
    when ``text`` is a whole number of bytes (or not a size at all)."""
    match = _split_size(text)
    unit = match[1].lower() if match else ""
    if not match or unit not in _UNITS or len(match[0]) > 64:
        return None
    exact = Fraction(match[0].replace("_", "")) * _UNITS[unit]
    if exact.denominator == 1:
        return None
    whole = int(exact)
    return f"{text.strip()} is {float(exact):.2f} B: rounded down to {whole} B"


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
    match = _split_size(text)
    digits = match[0].replace("_", "") if match and not match[1] else None
    # A number past 2**63 - 1 is refused as such whatever its unit (parse_size says so).
    if digits is not None and len(digits) <= 64 and Fraction(digits) <= MAX_COUNT:
        bytes_form = "" if "." in digits else f"write {digits}B for bytes; "
        raise ValueError(
            f"size {_shown(text)} has no unit: did you mean {digits}GiB? ({bytes_form}units: "
            "B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
        )
    return parse_size(text)


def size_argument(text: str) -> int:
    """``parse_size_with_unit`` as an argparse ``type=`` (a bad size is a usage error, exit 2);
    a fractional byte count is rounded down, said on stderr."""
    try:
        size = parse_size_with_unit(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    note = rounding(text)
    if note is not None:
        print(f"kvgen: {note}", file=sys.stderr)
    return size


def engine_bytes(text: str) -> int:
    """A byte count as an engine's own flag takes it (vLLM --kv-cache-memory-bytes: a bare
    number of bytes or ``token_count``'s suffixes), or a size with kvgen's units."""
    try:
        return token_count(text)
    except argparse.ArgumentTypeError:
        pass
    try:
        size = parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if size < 1:
        raise argparse.ArgumentTypeError(f"expected a positive size, got {_shown(text)}")
    return size


_HUMAN = re.compile(r"^(\d+(?:\.\d+)?)([kKmMgGtT])$")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_POWERS = {"K": KiB, "M": MiB, "G": GiB, "T": TiB}


def token_count(text: str) -> int:
    """An argparse ``type=`` for a count of tokens: a positive integer, or a number with vLLM's
    suffixes (``32k`` 32000, ``32K`` 32768, ``1M`` 1048576, ``25.6k`` 25600)."""
    match = _HUMAN.match(text.strip()) if len(text) <= 64 else None
    if match is None:
        return positive_int(text.strip())
    number, suffix = match.groups()
    if suffix in _POWERS and "." in number:
        raise argparse.ArgumentTypeError(
            f"{text!r}: decimals are not allowed with the binary suffix {suffix} (as vLLM "
            f"reads it): did you mean {number}{suffix.lower()}?"
        )
    value = Fraction(number) * (_DECIMAL.get(suffix) or _POWERS[suffix])
    if value.denominator != 1 or not 1 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(
            f"expected a whole positive count up to 2**63 - 1, got {_shown(text)} "
            f"({float(value):g})"
        )
    return int(value)


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
    # type(), not isinstance: a bool (an int subclass) is no fraction; mypy does not narrow it
    if type(value) not in (int, float) or not 0 < value <= 1:  # type: ignore[operator]
        got = shown if shown is not None else _shown_value(value)
        raise ValueError(f"expected a fraction in (0, 1], got {got}")
    return float(value)  # type: ignore[arg-type]  # an int or a float, as checked above


def _shown_value(value: object) -> str:
    # A value read from a file, as TOML wrote it where it can (nan, inf, 7); long ones cut.
    text = _shown(value) if isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"
