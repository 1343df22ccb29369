"""``kvgen._util.escaping``: one function per output format, snapshots with hostile text (issue 18
#8).

Each hostile string is what a spec author can put in an acknowledgement reason (a
double-quoted YAML string may hold any character through its escapes).
"""

from __future__ import annotations

import json
import re

import pytest
from kvgen._util import escaping

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
    # A word holding a URL goes into a code span whole (issue 29, I3; below), the rest escaped.
    assert escaping.markdown("[click](https://e.x) ![i](t) **no** ~~x~~ a&b") == (
        "`[click](https://e.x)` \\!\\[i\\](t) \\*\\*no\\*\\* \\~\\~x\\~\\~ a&amp;b"
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


def _hostile_review():
    from kvgen._review import Capacity, Change, ReferenceDeployment, Review

    # Names a lint-clean spec cannot hold (they are identifiers), built directly: the emitters
    # must not rely on lint for their escaping. One blocking change, one cosmetic family.
    review = Review("main`x", ReferenceDeployment())
    old, new = Capacity(2048, 0, 1 << 30, 100), Capacity(4096, 0, 1 << 30, 50)
    family, model = "f|<!--", "m\n::error::forged"
    review.changes.append(
        Change(family, model, "none", "target", "capacity-reducing", "", old, new)
    )
    review.families = {family: "changed", "c\u2028::warning::x": "cosmetic"}
    review.spec_paths = {family: "schema/```<b>.yaml"}
    return review


def test_every_diff_emitter_escapes_names_paths_and_the_ref():
    from kvgen._review.reporters import EMITTERS

    review = _hostile_review()
    text = EMITTERS["text"](review)
    assert not [line for line in text.splitlines() if line.lstrip().startswith("::")]
    assert "f|<!--/m\\n::error::forged/none/target: capacity-reducing" in text
    assert "c\\u2028::warning::x: cosmetic" in text
    assert "  # schema/```<b>.yaml" in text
    markdown = EMITTERS["markdown"](review)
    outside_code = markdown.split("````yaml\n")[0] + markdown.split("\n````\n")[1]
    html = outside_code.replace("<sub>", "").replace("</sub>", "")  # kvgen's own footer
    assert "<" not in html  # no HTML, no comment from the author: `<` only as &lt;
    assert markdown.startswith("### kvgen diff: ``main`x`` → working tree\n")
    assert (
        "| f\\|&lt;\\!-- | m\\\\n::error::forged | none | target | capacity-reducing |" in markdown
    )
    assert "- this change fits 50 fewer tokens for m\\\\n::error::forged in 40 GiB." in markdown
    assert "Cosmetic (no numeric change): c\\\\u2028::warning::x." in markdown
    # The hints are a code block whose fence outgrows the path's backticks: literal text there.
    block = markdown.split("````yaml\n", 1)[1].split("\n````\n", 1)[0]
    assert block.splitlines()[0] == "# schema/```<b>.yaml"
    github = EMITTERS["github"](review)
    assert github.count("\n") == 1 and github.startswith("::error file=schema/```<b>.yaml,line=1,")
    assert "f|<!--/m%0A::error::forged/none/target" in github
    assert json.loads(EMITTERS["json"](review))["changes"][0]["model"] == "m\n::error::forged"


# Issue 29, I3: GitHub turns bare URLs, www. links, e-mail addresses, @mentions and #refs of a
# comment into links (and notifies the people named). The markdown escaping puts every word that
# could do so in a code span, where GitHub links and notifies nothing, shown as written.
AUTOLINKED = (
    "see https://evil.example/x?a=1&b=2, (www.evil.example) or HTTP://E.X; "
    "ping @alice, cc a@b.co; fixes #12 and org/repo#3 and GH-9; mailto:x@y.z"
)


def _outside_code(markdown: str) -> str:
    """``markdown`` with its code spans (a fence of n backticks to the next run of exactly n,
    CommonMark's rule) blanked out."""
    return re.sub(r"(`+)(?:.+?)(?<!`)\1(?!`)", " ", markdown)


def test_markdown_neutralises_autolinks_mentions_and_references():
    shown = escaping.markdown(AUTOLINKED)
    outside = _outside_code(shown)
    for pattern in (r"://", r"(?i)www\.", r"@", r"#\d", r"(?i)gh-\d", r"(?i)mailto:"):
        assert not re.search(pattern, outside), (pattern, shown)
    # Each such word is kept as written, in a code span of its own.
    for word in ("https://evil.example/x?a=1&b=2,", "(www.evil.example)", "@alice,", "#12",
                 "org/repo#3", "GH-9;", "a@b.co;", "mailto:x@y.z", "HTTP://E.X;"):  # fmt: skip
        assert f"`{word}`" in shown, (word, shown)
    assert shown.startswith("see `https://")
    # What needs no code span is escaped as before; identifiers stay as they are.
    assert escaping.markdown("toy_a 50% a&b") == "toy_a 50% a&amp;b"


@pytest.mark.parametrize(
    "value",
    ["@a|b", "@a`b", "x@y\n::error::z", "https://e.x/<!--", "#1 | [x](y)", "www.a.b``c"],
)
def test_a_neutralised_word_cannot_break_out_of_its_code_span_or_the_table(value):
    shown = escaping.markdown(value)
    assert "\n" not in shown and "<" not in _outside_code(shown)
    # No unescaped pipe anywhere (a code span in a table cell ends at a bare pipe too).
    assert "|" not in shown.replace("\\|", "")
    assert shown.count("`") % 2 == 0 or "\\`" in shown
    assert not re.search(r"@|://|#\d", _outside_code(shown.replace("\\`", "")))


def test_the_diff_comment_links_and_mentions_nothing():
    import dataclasses

    from kvgen._review.reporters import EMITTERS

    review = _hostile_review()
    change = review.changes[0]
    review.changes[0] = dataclasses.replace(change, model="m @alice https://evil.example #1")
    markdown = EMITTERS["markdown"](review)
    outside = _outside_code(markdown.split("````yaml\n")[0])
    assert "@alice" not in outside and "https://" not in outside and "#1" not in outside
    assert "`@alice`" in markdown and "`https://evil.example`" in markdown
