"""The documents whose examples the doc tests run, and how to read and refresh their regions.

    python -m tests.doc_examples   # rewrite every output region with what its command prints now

Used by tests/acceptance/test_doc_examples.py and tests/snapshot.py.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Written by generators of their own, with their own currency tests.
GENERATED_DOCS = {"docs/codes.md", "docs/engine-coverage.md", "docs/import-hf-coverage.md"}
DOCUMENTS = [
    path.relative_to(REPO).as_posix()
    for path in [
        REPO / "README.md",
        REPO / "CONTRIBUTING.md",
        *sorted((REPO / "docs").glob("*.md")),
    ]
    if path.relative_to(REPO).as_posix() not in GENERATED_DOCS
]
# <!-- output:begin COMMAND --> ... <!-- output:end -->; `emit` for the `kvgen plan --emit` ones.
REGION = re.compile(r"<!-- (output|emit):begin (kvgen [^\n]*?) -->\n(.*?)<!-- \1:end -->", re.S)
SESSION = re.compile(r"```python\n(>>> .*?)```", re.S)


def text(document: str) -> str:
    return (REPO / document).read_text(encoding="utf-8")


def regions() -> list[tuple[str, str, str]]:
    """(document, command, what the region shows as the command's stdout)."""
    found = []
    for document in DOCUMENTS:
        for _, command, body in REGION.findall(text(document)):
            if body.startswith("```console\n"):
                first, _, rest = body[len("```console\n") :].partition("\n")
                assert first == f"$ {command}", (document, command)  # shown as it is run
                assert rest.endswith("```\n"), (document, command)
                body = rest[: -len("```\n")]
            found.append((document, command, body))
    return found


def kvgen(command: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(command)
    assert argv[0] == "kvgen", command
    return subprocess.run(
        [sys.executable, "-m", "kvgen", "-q", *argv[1:]], cwd=cwd, capture_output=True, text=True
    )


# --- refreshing the regions after a change that moves a printed number -----------------------


def refresh(document: str) -> bool:
    """Rewrite each region of DOCUMENT with what its command prints now; True if it changed."""
    body = text(document)

    def rerun(match: re.Match[str]) -> str:
        kind, command, old = match.groups()
        printed = kvgen(command).stdout
        if old.startswith("```console\n"):
            printed = f"```console\n$ {command}\n{printed}```\n"
        return f"<!-- {kind}:begin {command} -->\n{printed}<!-- {kind}:end -->"

    updated = REGION.sub(rerun, body)
    if updated != body:
        (REPO / document).write_text(updated, encoding="utf-8")
    return updated != body


if __name__ == "__main__":  # python -m tests.doc_examples
    for changed in [d for d in DOCUMENTS if refresh(d)]:
        print(f"refreshed {changed}")
