"""Every lint output format with author-controlled text in the path and message (issue 18 #8).

A diagnostic quotes its spec (a file name, a value); whatever that text holds, the text format
stays one printable line per finding and starts no workflow command, GitHub annotations stay one
command each, and JSON/SARIF hold no raw control or separator character.
"""

from __future__ import annotations

import json

from kvgen._lint.reporters import render
from kvgen._util.diagnostics import Diagnostic

# A file name may hold ':' and ','; a message quotes a spec value with a newline, a forged
# command, a terminal escape and a line separator.
PATH = "::error file=x,line=1::forged.yaml"
MESSAGE = "value 'a\n::error file=x,line=1::INJECTED\x1b[31m\u2028' is odd, 50%"
HOSTILE = [Diagnostic(PATH, 3, 5, "KV101", MESSAGE, fix="drop\nit")]


def test_text_is_one_printable_line_that_starts_no_command():
    assert render("text", HOSTILE) == (
        "\\x3a:error file=x,line=1::forged.yaml:3:5: KV101 value 'a\\n::error file=x,line=1::"
        "INJECTED\\x1b[31m\\u2028' is odd, 50% (fix: drop\\nit)\n"
    )


def test_github_is_one_command_with_escaped_properties_and_data():
    assert render("github", HOSTILE) == (
        "::error file=%3A%3Aerror file=x%2Cline=1%3A%3Aforged.yaml,line=3,col=5,title=KV101::"
        "value 'a%0A::error file=x,line=1::INJECTED\\x1b[31m\\u2028' is odd, 50%25 "
        "(fix: drop%0Ait)\n"
    )


def test_json_and_sarif_hold_no_raw_control_character_and_round_trip():
    for fmt in ("json", "sarif"):
        out = render(fmt, HOSTILE)
        assert "\u2028" not in out and "\x1b" not in out, fmt
        assert all(line.isprintable() for line in out.splitlines()), fmt
    (item,) = json.loads(render("json", HOSTILE))
    assert (item["path"], item["message"], item["fix"]) == (PATH, MESSAGE, "drop\nit")
    (result,) = json.loads(render("sarif", HOSTILE))["runs"][0]["results"]
    assert result["message"]["text"] == f"{MESSAGE} (fix: drop\nit)"
    assert "\"value 'a\\n::error file=x,line=1::INJECTED\\u001b[31m\\u2028'" in render(
        "json", HOSTILE
    )
