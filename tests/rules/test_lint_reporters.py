"""Snapshot tests: the exact text of every output format of ``kvgen lint``."""

from __future__ import annotations

import importlib.metadata
import json
import textwrap
from pathlib import Path

from kvgen._lint.reporters import REPORTERS, render, sarif
from kvgen._lint.rules import RuleInfo
from kvgen._util.diagnostics import Diagnostic
from kvgen._util.meta import PROJECT_URL, version

ROOT = Path(__file__).resolve().parents[2]
DIAGNOSTICS = [
    Diagnostic("specs/a.yaml", 4, 19, "KV201", "tokens_per_block 48 is not a power of two",
               fix="use 32 or 64"),
    Diagnostic("specs/a.yaml", 11, 7, "KV206", "layer kind 'g' is unused, 100% idle",
               severity="warning"),
]  # fmt: skip


def test_registry_has_one_emitter_per_format():
    assert sorted(REPORTERS) == ["github", "json", "sarif", "text"]


def test_text():
    assert render("text", DIAGNOSTICS) == textwrap.dedent(
        """\
        specs/a.yaml:4:19: KV201 tokens_per_block 48 is not a power of two (fix: use 32 or 64)
        specs/a.yaml:11:7: KV206 [warning] layer kind 'g' is unused, 100% idle
        """
    )


def test_json():
    assert render("json", DIAGNOSTICS) == textwrap.dedent(
        """\
        [
          {
            "path": "specs/a.yaml",
            "line": 4,
            "col": 19,
            "code": "KV201",
            "name": "tokens-per-block-not-power-of-two",
            "severity": "error",
            "message": "tokens_per_block 48 is not a power of two",
            "fix": "use 32 or 64"
          },
          {
            "path": "specs/a.yaml",
            "line": 11,
            "col": 7,
            "code": "KV206",
            "name": "unused-layer-kind",
            "severity": "warning",
            "message": "layer kind 'g' is unused, 100% idle",
            "fix": ""
          }
        ]
        """
    )


def test_github_annotations_escape_their_data():
    assert render("github", DIAGNOSTICS) == textwrap.dedent(
        """\
        ::error file=specs/a.yaml,line=4,col=19,title=KV201::tokens_per_block 48 is not a power of two (fix: use 32 or 64)
        ::warning file=specs/a.yaml,line=11,col=7,title=KV206::layer kind 'g' is unused, 100%25 idle
        """  # noqa: E501
    )


def test_github_escapes_properties():
    odd = Diagnostic("a,b:c.yaml", 1, 1, "KV001", "line one\nline two")
    assert render("github", [odd]) == (
        "::error file=a%2Cb%3Ac.yaml,line=1,col=1,title=KV001::line one%0Aline two\n"
    )


def test_sarif():
    rules = [
        RuleInfo("KV206", "unused-layer-kind", "warning", "A kind no layer uses.\n\nMore."),
        RuleInfo("KV201", "tokens-per-block-not-power-of-two", "error", "Not a power of two."),
    ]
    assert sarif(DIAGNOSTICS, rules) == textwrap.dedent(
        """\
        {
          "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
          "version": "2.1.0",
          "runs": [
            {
              "tool": {
                "driver": {
                  "name": "kvgen",
                  "version": "VERSION",
                  "informationUri": "https://github.com/kvgen-project/kvgen",
                  "rules": [
                    {
                      "id": "KV201",
                      "name": "tokens-per-block-not-power-of-two",
                      "shortDescription": {
                        "text": "Not a power of two."
                      },
                      "fullDescription": {
                        "text": "Not a power of two."
                      },
                      "helpUri": "HELP_KV201",
                      "help": {
                        "text": "Not a power of two.",
                        "markdown": "Not a power of two."
                      },
                      "defaultConfiguration": {
                        "level": "error"
                      }
                    },
                    {
                      "id": "KV206",
                      "name": "unused-layer-kind",
                      "shortDescription": {
                        "text": "A kind no layer uses."
                      },
                      "fullDescription": {
                        "text": "A kind no layer uses.\\n\\nMore."
                      },
                      "helpUri": "HELP_KV206",
                      "help": {
                        "text": "A kind no layer uses.\\n\\nMore.",
                        "markdown": "A kind no layer uses.\\n\\nMore."
                      },
                      "defaultConfiguration": {
                        "level": "warning"
                      }
                    }
                  ]
                }
              },
              "results": [
                {
                  "ruleId": "KV201",
                  "ruleIndex": 0,
                  "level": "error",
                  "message": {
                    "text": "tokens_per_block 48 is not a power of two (fix: use 32 or 64)"
                  },
                  "locations": [
                    {
                      "physicalLocation": {
                        "artifactLocation": {
                          "uri": "specs/a.yaml"
                        },
                        "region": {
                          "startLine": 4,
                          "startColumn": 19
                        }
                      }
                    }
                  ]
                },
                {
                  "ruleId": "KV206",
                  "ruleIndex": 1,
                  "level": "warning",
                  "message": {
                    "text": "layer kind 'g' is unused, 100% idle"
                  },
                  "locations": [
                    {
                      "physicalLocation": {
                        "artifactLocation": {
                          "uri": "specs/a.yaml"
                        },
                        "region": {
                          "startLine": 11,
                          "startColumn": 7
                        }
                      }
                    }
                  ]
                }
              ]
            }
          ]
        }
        """
    ).replace("VERSION", version()).replace(  # kvgen's own version, from package metadata
        "HELP_KV201", "https://github.com/kvgen-project/kvgen/blob/main/docs/codes.md#kv201"
    ).replace("HELP_KV206", "https://github.com/kvgen-project/kvgen/blob/main/docs/codes.md#kv206")


def test_sarif_driver_version_is_the_installed_package_version():
    log = json.loads(render("sarif", []))
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["version"] == importlib.metadata.version("kvgen")
    assert driver["informationUri"] == PROJECT_URL


def test_sarif_rules_link_their_section_of_the_codes_page_and_carry_help_markdown():
    rules = json.loads(render("sarif", []))["runs"][0]["tool"]["driver"]["rules"]
    page = (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")
    for rule in rules:
        assert rule["helpUri"] == f"{PROJECT_URL}/blob/main/docs/codes.md#{rule['id'].lower()}"
        assert f'<a id="{rule["id"].lower()}"></a>' in page  # the anchor exists
        for section in ("## What it does", "## Why it matters", "## Example", "## Fix"):
            assert section in rule["help"]["markdown"], (rule["id"], section)


def test_sarif_by_default_lists_every_code_sorted_with_full_docs():
    log = json.loads(render("sarif", []))
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    ids = [rule["id"] for rule in rules]
    assert ids == sorted(ids)
    assert {"KV004", "KV101", "KV205"} <= set(ids)
    kv205 = rules[ids.index("KV205")]
    assert "## What it does" in kv205["fullDescription"]["text"]
    assert log["runs"][0]["results"] == []


def test_empty_outputs():
    assert render("text", []) == ""
    assert render("github", []) == ""
    assert render("json", []) == "[]\n"
