"""Byte sizes as written on the command line, and how reports print them."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kvgen._util.units import format_bytes, format_size, parse_size, positive_int, size_argument


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("80GiB", 80 * 2**30),
        ("16GiB", 17179869184),
        ("1.5TiB", 3 * 2**39),
        ("512MiB", 512 * 2**20),
        ("4KiB", 4096),
        ("1PiB", 2**50),
        ("17179869184", 17179869184),
        ("1_000", 1000),
        ("64B", 64),
        ("80 GiB", 80 * 2**30),
        ("80gib", 80 * 2**30),
        ("2GB", 2 * 10**9),
        ("1.5KB", 1500),
        ("3MB", 3 * 10**6),
        ("1TB", 10**12),
        (".5KiB", 512),
        ("0", 0),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    "text", ["", "GiB", "80 gigs", "-1GiB", "1e3", "80GiBs", "1..5GiB", "0x10"]
)
def test_parse_size_rejects_malformed_sizes(text):
    with pytest.raises(ValueError, match="invalid size"):
        parse_size(text)


def test_parse_size_rounds_fractional_bytes_down_and_says_so():
    # Issue 32: 36.28 x 2**30 = 38654705664 + 0.28 x 1073741824 (300647710.72) = 38955353374.72
    from kvgen._util.units import rounding

    assert parse_size("36.28GiB") == 38955353374
    assert rounding("36.28GiB") == "36.28GiB is 38955353374.72 B: rounded down to 38955353374 B"
    assert parse_size("0.1B") == 0 and rounding("0.1B") is not None
    assert rounding("80GiB") is None and rounding("1.5KiB") is None  # 1536 B: whole


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1 KiB"),
        (16 << 30, "16 GiB"),
        (491520000, "468.75 MiB"),
        (16169288644, "15.06 GiB"),
        (3 << 39, "1.5 TiB"),
        (-(16 << 20), "-16 MiB"),
    ],
)
def test_format_size(size, expected):
    assert format_size(size) == expected


def test_format_bytes_keeps_the_exact_count():
    assert format_bytes(16 << 30) == "16 GiB (17179869184 B)"
    assert format_bytes(512) == "512 B"


@given(st.integers(min_value=0, max_value=1 << 60))
def test_plain_byte_counts_round_trip(size):
    assert parse_size(str(size)) == size


def test_argparse_types_raise_argument_type_errors():
    assert size_argument("1GiB") == 1 << 30
    assert positive_int("8") == 8
    for convert, bad in ((size_argument, "lots"), (positive_int, "0"), (positive_int, "x")):
        with pytest.raises(argparse.ArgumentTypeError):
            convert(bad)


def test_a_size_a_person_writes_needs_its_unit():
    # issue 20: `--gpu-memory 80` meant 80 bytes; now it is refused with the likely reading.
    from kvgen._util.units import parse_size_with_unit

    assert parse_size_with_unit("85899345920B") == 80 << 30
    assert parse_size_with_unit("80GB") == 80 * 10**9
    for bare in ("80", "1.5", " 80 "):
        with pytest.raises(ValueError, match="has no unit: did you mean"):
            parse_size_with_unit(bare)
    with pytest.raises(argparse.ArgumentTypeError, match=r"did you mean 80GiB\?"):
        size_argument("80")
    assert parse_size("80") == 80  # the parser itself still reads bytes (spec and API values)
