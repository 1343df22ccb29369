"""Every example in README.md, CONTRIBUTING.md and docs/ is real, wherever the text moves.

- ``>>>`` sessions run against the committed generated modules (doctest, ELLIPSIS);
- a command between ``<!-- output:begin COMMAND -->`` (or ``emit:begin``, the `plan --emit`
  regions) and its ``end`` marker prints exactly what the region shows;
- the `kvgen diff` walk-through of docs/review.md is replayed in a scratch repository;
- every other console block that shows output is one of those, so no example goes unchecked;
- every `kvgen` command line shown anywhere parses with kvgen's own parser;
- every whole spec shown (a YAML block with ``schema_version: 1``) lints clean, ``--strict``;
- README's picture is what its command draws, and README stays a front door (< 300 lines).
"""

from __future__ import annotations

import doctest
import re
import shlex
import shutil
import subprocess

import pytest
from kvgen._cli.main import build_parser

from tests.doc_examples import DOCUMENTS, REGION, REPO, SESSION, kvgen, regions, text

CONSOLE = re.compile(r"(<!-- scenario: ([\w-]+) -->\n)?```console\n(.*?)```", re.S)
SCENARIOS = {"gemma3-window"}


# --- sessions and regions ----------------------------------------------------------------------


@pytest.mark.parametrize("document", [d for d in DOCUMENTS if SESSION.search(text(d))])
def test_python_sessions_run_as_written(document, monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.syspath_prepend(str(REPO))
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for number, session in enumerate(SESSION.findall(text(document))):
        name = f"{document}[{number}]"
        runner.run(doctest.DocTestParser().get_doctest(session, {}, name, document, 0))
    assert runner.summarize(verbose=False).failed == 0


@pytest.mark.parametrize(("document", "command", "shown"), regions(), ids=lambda v: v[:60])
def test_region_is_what_its_command_prints(document, command, shown):
    result = kvgen(command)
    # 1 is a finding (the lint example), never a usage error or a crash.
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == shown, f"{document}: {command}"


def test_the_examples_cover_the_documents_that_matter():
    # Guards against a pattern that silently stops matching after an edit.
    where = {document for document, _, _ in regions()}
    assert {"README.md", "docs/review.md", "docs/engines.md", "docs/deploy.md"} <= where
    readme = {command.split()[1] for document, command, _ in regions() if document == "README.md"}
    assert {"plan", "lint"} <= readme


# --- no unchecked example ------------------------------------------------------------------------


def console_blocks():
    for document in DOCUMENTS:
        body = text(document)
        inside = [(m.start(), m.end()) for m in REGION.finditer(body)]
        for match in CONSOLE.finditer(body):
            in_region = any(a <= match.start() < b for a, b in inside)
            yield document, match.group(2), match.group(3), in_region


def test_every_console_block_with_output_is_run():
    unchecked = []
    for document, scenario, block, in_region in console_blocks():
        shows_output = any(
            line and not line.startswith(("$ ", "    ")) for line in block.splitlines()
        )
        if shows_output and not in_region and scenario not in SCENARIOS:
            unchecked.append((document, block.splitlines()[0]))
    assert unchecked == []


def shown_kvgen_commands():
    for document in DOCUMENTS:
        body = text(document)
        for kind, block in re.findall(r"```(console|bash)\n(.*?)```", body, re.S):
            for line in block.replace("\\\n", " ").splitlines():
                if kind == "console":  # commands after the prompt; the rest is output
                    if not line.startswith("$ "):
                        continue
                    line = line[2:]
                if line.startswith("kvgen ") or line.startswith('eval "$(kvgen '):
                    yield document, line


def test_every_shown_kvgen_command_line_parses():
    parser = build_parser()
    seen = 0
    for document, line in shown_kvgen_commands():
        line = line.removeprefix('eval "$(').split(")")[0] if line.startswith("eval") else line
        argv = shlex.split(line, comments=True)
        argv = argv[: next((i for i, a in enumerate(argv) if a in ("|", ">", "||", "&&")), None)]
        try:
            parser.parse_args(argv[1:])
        except SystemExit as error:  # argparse's way of refusing
            pytest.fail(f"{document}: {line!r} does not parse ({error})")
        seen += 1
    assert seen >= 10


# --- the `kvgen diff` walk-through of docs/review.md ----------------------------------------------


def scenario_blocks(name: str) -> list[str]:
    body = text("docs/review.md")
    return re.findall(rf"<!-- scenario: {name} -->\n(`{{3,4}})\w+\n(.*?)\1\n", body, re.S)


def test_the_review_walk_through_replays_in_a_scratch_repository(tmp_path):
    # The page's story: every shipped spec committed, then gemma3_27b's sliding window raised
    # from 1024 to 1280 in the working tree, reviewed, then acknowledged.
    (text_block, markdown_block, after_block) = [b for _, b in scenario_blocks("gemma3-window")]
    repo = tmp_path / "repo"
    shutil.copytree(REPO / "schema" / "families", repo / "schema" / "families")
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com", "PATH": "/usr/bin:/bin",
           "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com"}  # fmt: skip
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "base"]):
        subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)
    spec = repo / "schema" / "families" / "gemma3.yaml"
    source = spec.read_text(encoding="utf-8")
    start = source.index("  - name: gemma3_27b")
    window = source.index("window: 1024", start)
    spec.write_text(source[:window] + "window: 1280" + source[window + len("window: 1024") :])

    command, _, shown = text_block.partition("\n")
    assert command == "$ kvgen -q diff --against HEAD"
    result = kvgen(command[2:], cwd=repo)
    assert result.returncode == 1  # unacknowledged capacity-reducing changes block
    assert result.stdout == shown

    result = kvgen("kvgen diff --against HEAD --format markdown", cwd=repo)
    assert result.returncode == 1
    assert result.stdout == markdown_block

    # The acknowledgement the page shows, added to the spec's own acknowledge list.
    (ack,) = re.findall(
        r"```yaml\nacknowledge:\n(  - \{change: capacity-reducing, model: gemma3_27b[^\n]*\n)```",
        text("docs/review.md"),
    )
    edited = spec.read_text(encoding="utf-8")
    assert edited.count("\nacknowledge:\n") == 1
    spec.write_text(edited.replace("\nacknowledge:\n", "\nacknowledge:\n" + ack, 1))
    command, _, shown = after_block.partition("\n")
    assert command == "$ kvgen -q diff --against HEAD | tail -1"
    result = kvgen("kvgen diff --against HEAD", cwd=repo)
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] + "\n" == shown


# --- README as a front door -----------------------------------------------------------------------


def test_readme_is_a_front_door():
    readme = text("README.md")
    assert len(readme.splitlines()) < 300
    headings = re.findall(r"^## (.*)$", readme, re.M)
    # User first: what it is, install, a deployment, adoption; contributor material last.
    assert headings[:3] == ["Install", "Size a deployment", "Use kvgen in your repository"]
    assert "CONTRIBUTING.md" in readme


def test_the_readme_picture_is_what_its_command_draws(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    pins = (REPO / "constraints.txt").read_text()
    if f"matplotlib=={matplotlib.__version__}\n" not in pins:
        pytest.skip(f"PNG bytes are those of the pinned matplotlib, not {matplotlib.__version__}")
    (command,) = re.findall(r"<!-- plot: (kvgen compare [^\n]*?) -->", text("README.md"))
    argv = shlex.split(command)
    picture = argv[argv.index("--plot") + 1]
    assert f"]({picture})" in text("README.md")  # the image shown is the file written
    argv[argv.index("--plot") + 1] = str(tmp_path / "plot.png")
    result = kvgen(shlex.join(argv))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "plot.png").read_bytes() == (REPO / picture).read_bytes(), (
        f"rerun: {command}"
    )


def whole_specs():
    for document in DOCUMENTS:
        for block in re.findall(r"```yaml\n(.*?)```", text(document), re.S):
            if re.search(r"^schema_version: 1$", block, re.M):
                yield document, block


def test_every_whole_spec_shown_lints_clean(tmp_path):
    specs = list(whole_specs())
    assert any(document == "README.md" for document, _ in specs)
    for number, (document, block) in enumerate(specs):
        path = tmp_path / f"spec{number}.yaml"
        path.write_text(block, encoding="utf-8")
        result = kvgen(f"kvgen lint --strict {path}")
        assert result.returncode == 0, (document, result.stdout, result.stderr)


def test_every_relative_link_resolves():
    broken = []
    for document in DOCUMENTS:
        for target in re.findall(r"\]\(([^)\s]+)\)", text(document)):
            if target.startswith(("http://", "https://", "#")):
                continue
            if not ((REPO / document).parent / target.split("#")[0]).exists():
                broken.append((document, target))
    assert broken == []
