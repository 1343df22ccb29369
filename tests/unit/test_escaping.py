"""``kvgen.escaping``: one function per output format, snapshots with hostile text (issue 18 #8).

Each hostile string is what a spec author can put in an acknowledgement reason (a
double-quoted YAML string may hold any character through its escapes).
"""

from __future__ import annotations

import json

import pytest
from kvgen import escaping

# A forged workflow command on its own line, an HTML comment that would hide the rest of a pull
# request comment, a table break, a terminal escape and a line separator.
HOSTILE = "ok\n::error file=x,line=1::INJECTED | <!-- `hidden` \x1b[2J\u2028##[error]old %0A"


def test_text_shows_control_characters_escaped_and_starts_no_command():
    assert escaping.text(HOSTILE) == (
        "ok\\n::error file=x,line=1::INJECTED | <!-- `hidden` \\x1b[2J\\u2028##\\x5berror]old %0A"
    )
    assert escaping.text("::error::x") == "\\x3a:error::x"
    assert escaping.text("  ::warning::x") == "  \\x3a:warning::x"
    assert escaping.text("a::b") == "a::b"  # only a line start can make a command
    assert escaping.text("\r\t\x00\x85\u2029\u202e") == "\\r\\t\\x00\\x85\\u2029\\u202e"


def test_text_leaves_printable_text_alone_and_is_idempotent():
    for value in ("schema/families/é.yaml", "toy/toy_a/none/target", "caf\u00e9 50% [x]"):
        assert escaping.text(value) == value
    assert escaping.text(escaping.text(HOSTILE)) == escaping.text(HOSTILE)


def test_markdown_neutralises_html_tables_links_and_newlines():
    assert escaping.markdown(HOSTILE) == (
        "ok\\\\n::error file=x,line=1::INJECTED \\| &lt;\\!-- \\`hidden\\` \\\\x1b\\[2J"
        "\\\\u2028##\\\\x5berror\\]old %0A"
    )
    assert escaping.markdown("[click](https://e.x) ![i](t) **no** ~~x~~ a&b") == (
        "\\[click\\](https://e.x) \\!\\[i\\](t) \\*\\*no\\*\\* \\~\\~x\\~\\~ a&amp;b"
    )
    assert escaping.markdown("toy_a") == "toy_a"  # identifiers stay as they are
    for value in (HOSTILE, "<!--", "a\nb"):
        shown = escaping.markdown(value)
        assert "\n" not in shown and "<" not in shown and "|" not in shown.replace("\\|", "")


def test_markdown_code_fence_outgrows_every_backtick_run():
    assert escaping.markdown_code("HEAD") == "`HEAD`"
    assert escaping.markdown_code("a`b") == "``a`b``"
    assert escaping.markdown_code("`x``") == "``` `x`` ```"
    assert escaping.markdown_code("main\n# x") == "`main\\n# x`"


def test_github_escapes_what_github_documents_and_shows_other_controls():
    assert escaping.github_data(HOSTILE) == (
        "ok%0A::error file=x,line=1::INJECTED | <!-- `hidden` \\x1b[2J\\u2028##[error]old %250A"
    )
    assert escaping.github_data("a\r\nb 100%") == "a%0D%0Ab 100%25"
    assert escaping.github_property("a,b:c\nd") == "a%2Cb%3Ac%0Ad"


def test_json_escapes_every_control_and_separator_and_round_trips():
    data = {"reason": HOSTILE + "\x7f\u0085\U000e0001 é"}
    dumped = escaping.json_dumps(data)
    assert json.loads(dumped) == data
    assert all(ch.isprintable() or ch in "\n" for ch in dumped)
    assert "\\u2028" in dumped and "\\u007f" in dumped and "\\udb40\\udc01" in dumped
    assert "é" in dumped  # printable Unicode stays readable


@pytest.mark.parametrize("char", ["\n", "\r", "\u2028", "\u2029", "\x85", "\x1b", "\x00"])
def test_no_format_lets_a_line_break_through(char):
    value = f"a{char}::error::b"
    for escape in (escaping.text, escaping.markdown, escaping.github_data):
        assert escape(value).isprintable(), (escape, char)
