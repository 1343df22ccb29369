"""Every document kvgen cites ships with it, and nothing cites the team's unshipped notes.

Scanned: README, CONTRIBUTING, the package source (generator/), templates/, generated/, the
rule docs that `kvgen explain` prints, and the text the CLI prints (help of every command, a
`kvgen diff` report, a `kvgen plan` report).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from kvgen._cli.main import build_parser
from kvgen._lint.rules import all_codes

REPO = Path(__file__).resolve().parents[2]
CITATION = re.compile(r"docs/[A-Za-z0-9_./-]+?\.md")
# The team's working notes live outside the repository and never ship.
UNSHIPPED = re.compile(r"SIZING\.md|DESIGN\.md|STYLE\.md|\.\./shared|SIZING §")
COST_MODEL_SECTIONS = [
    "§1 Inputs",
    "§2 Speculative headroom H",
    "§3 Runtime page model",
    "§4 Static cost and quota",
    "§5 Block reuse backoff",
    "§6 Target/draft budget split",
    "§7 Drift sources",
    "§8 Recurrent state",
    "§9 Engine residents and terms outside the affine estimate",
    "§10 Verified against the engine (TensorRT-LLM KV cache manager V2)",
    "§11 TensorRT-LLM revisions",
]


def scanned_files() -> list[Path]:
    files = [REPO / "README.md", REPO / "CONTRIBUTING.md"]
    for folder, patterns in (
        ("generator", ("*.py",)),
        ("templates", ("*.j2",)),
        ("generated", ("*.py",)),
        ("docs", ("*.md",)),
        ("schema", ("*.yaml", "*.json")),
        ("bench", ("*.py",)),
        ("tests", ("*.py", "*.yaml", "*.json")),
        (".ci", ("run",)),
    ):
        for pattern in patterns:
            files += sorted((REPO / folder).rglob(pattern))
    this = Path(__file__).resolve()  # it names the team notes it forbids
    return [f for f in files if "__pycache__" not in f.parts and f.resolve() != this]


def cli_texts() -> dict[str, str]:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    texts = {f"kvgen {name} -h": sub.format_help() for name, sub in subparsers.choices.items()}
    texts.update({f"kvgen explain {rule.code}": rule.doc for rule in all_codes()})
    plan = subprocess.run(
        [sys.executable, "-m", "kvgen", "-q", "plan", "gemma3", "gemma3_27b", "--gpu-memory",
         "80GiB", "--speculative", "draft_1b"],
        cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    texts["kvgen plan"] = plan.stdout
    return texts


def test_cost_model_has_the_cited_section_numbers():
    headings = re.findall(r"^## (§\d+ .*)$", (REPO / "docs/cost-model.md").read_text(), re.M)
    assert headings == COST_MODEL_SECTIONS


def test_every_cited_document_exists_in_the_repository_and_the_wheel_layout():
    cited: dict[str, set[str]] = {}
    for path in scanned_files():
        for name in CITATION.findall(path.read_text(encoding="utf-8", errors="replace")):
            cited.setdefault(name, set()).add(path.relative_to(REPO).as_posix())
    for where, text in cli_texts().items():
        for name in CITATION.findall(text):
            cited.setdefault(name, set()).add(where)
    assert "docs/cost-model.md" in cited
    # docs/codes.md is generated from the code registry by another part of the project.
    missing = {
        name: sorted(sources)
        for name, sources in cited.items()
        if not (REPO / name).is_file() and name != "docs/codes.md"
    }
    assert missing == {}


@pytest.mark.parametrize("source", ["files", "cli"])
def test_nothing_cites_the_unshipped_team_notes(source):
    if source == "files":
        texts = {
            p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8", errors="replace")
            for p in scanned_files()
        }
    else:
        texts = cli_texts()
    offenders = {
        where: UNSHIPPED.findall(text) for where, text in texts.items() if UNSHIPPED.search(text)
    }
    assert offenders == {}


def test_cost_model_citations_name_existing_sections():
    sections = {heading.split()[0] for heading in COST_MODEL_SECTIONS}
    cited = set()
    for path in scanned_files():
        for match in re.finditer(
            r"docs/cost-model\.md`? (§\d+)", path.read_text(encoding="utf-8", errors="replace")
        ):
            cited.add(match.group(1))
    assert cited and cited <= sections
