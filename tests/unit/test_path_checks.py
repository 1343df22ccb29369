"""The loader's path check (KV011) takes a fast path through ``str.isprintable``; that is only
sound if ``isprintable`` is False exactly for the characters the check refuses (Unicode
categories C* and Z*, the space excepted)."""

from __future__ import annotations

import sys

from kvgen._util.escaping import is_control as _is_control
from kvgen._util.files import display_path, path_problem


def test_isprintable_refuses_exactly_the_characters_the_path_check_refuses():
    disagree = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if (not chr(code).isprintable()) != _is_control(chr(code))
    ]
    assert disagree == []


def test_a_printable_path_passes_and_a_separator_is_refused_and_escaped():
    assert path_problem("schema/families/llama3.yaml") is None
    assert path_problem("schema/families/x\u2028y.yaml") == "file name contains U+2028"
    assert display_path("schema/families/x\u2028y.yaml") == "schema/families/x\\u2028y.yaml"
