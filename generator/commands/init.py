"""``kvgen init``: set up kvgen in the current repository.

Creates the spec directory, a copy of the spec format's JSON Schema (for editors), the
``[tool.kvgen]`` table in pyproject.toml (or a kvgen.toml when there is no pyproject.toml), a
``.pre-commit-config.yaml`` with kvgen's hooks, and a GitHub Actions workflow that installs
kvgen itself, lints with SARIF upload, checks that generated code is up to date, and comments
the ``kvgen diff`` report on the pull request. Then it prints the next steps.

Idempotent: a file that exists is kept (and reported) unless --force; an existing
``[tool.kvgen]`` table is never rewritten. Exit codes: 0 done, 2 usage error.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from kvgen.config import KVGEN_TOML, OUT_DIR, PYPROJECT, SCHEMA_FILE, SPEC_DIR, find_config
from kvgen.exits import Exit, UsageError

log = logging.getLogger("kvgen")

WORKFLOW = Path(".github/workflows/kvgen.yml")
PRE_COMMIT = Path(".pre-commit-config.yaml")
_RELATIVE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]*$")  # quoted into YAML and regexes


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "init",
        help="set up kvgen in this repository",
        description=__doc__.split("\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--specs", metavar="DIR", help=f"spec directory (default: {SPEC_DIR})")
    parser.add_argument(
        "--out", metavar="DIR", help=f"output package directory (default: {OUT_DIR})"
    )
    parser.add_argument("--force", action="store_true", help="overwrite files kvgen init owns")
    parser.set_defaults(func=run)


def requirement() -> str:
    """``kvgen>=X.Y,<X.Y+1`` (0.x) or ``<X+1`` (1.x on): the releases compatible with this one."""
    from kvgen.cli import version

    match = re.match(r"(\d+)\.(\d+)", version())
    if match is None:
        return "kvgen"
    major, minor = int(match.group(1)), int(match.group(2))
    upper = f"{major}.{minor + 1}" if major == 0 else f"{major + 1}"
    return f"kvgen>={major}.{minor},<{upper}"


@dataclass(frozen=True)
class Layout:
    specs: str
    out: str
    schema: str


def config_table(layout: Layout, header: str) -> str:
    return (
        f"{header}\n"
        f'specs = "{layout.specs}"      # spec directory\n'
        f'out = "{layout.out}"      # output package directory (import name: its last part)\n'
        f'schema = "{layout.schema}"      # JSON Schema of the spec format, for editors\n'
        "\n"
        f"{'[tool.kvgen.deployment]' if header.startswith('[tool') else '[deployment]'}"
        "      # defaults of kvgen plan and kvgen diff\n"
        "max_batch_size = 8\n"
        "max_num_tokens = 8192\n"
        "max_seq_len = 32768\n"
        "tp_size = 1\n"
        'gpu_memory = "40GiB"\n'
        'semantics = "trtllm-v2"\n'
    )


def pre_commit_config(layout: Layout) -> str:
    """The hooks as a ``repo: local`` entry running the kvgen installed beside pre-commit
    (``language: system``): they work offline and before kvgen's first release, where a
    hook that pre-commit installs itself (``language: python``) fails to find kvgen on the
    package index. The remote form, for once a release tag exists, is in the comment."""
    from kvgen._meta import PROJECT_URL, version

    spec_files = re.escape(layout.specs) + r"/.*\.ya?ml"
    out_files = re.escape(layout.out) + r"/.*\.py"
    return f"""\
# kvgen hooks (https://pre-commit.com); both read [tool.kvgen]. They run the kvgen that is
# installed where pre-commit runs (as the one that wrote this file), so they work offline and
# before kvgen is released. Once the release tag v{version()} exists, pre-commit can install
# kvgen itself instead: replace the `repo: local` entry below with this one (with specs outside
# schema/families, add each hook's `files:` line below to it):
#   - repo: {PROJECT_URL}
#     rev: v{version()}
#     hooks: [{{id: kvgen-lint}}, {{id: kvgen-generate-check}}]
# The hooks of an unreleased kvgen clone: pre-commit try-repo /path/to/kvgen --all-files
repos:
  - repo: local
    hooks:
      - id: kvgen-lint
        name: kvgen lint
        entry: kvgen lint
        language: system
        files: ^{spec_files}$
      - id: kvgen-generate-check
        name: kvgen generate --check
        entry: kvgen generate --check
        language: system
        pass_filenames: false
        files: ^({spec_files}|{out_files}|pyproject\\.toml|kvgen\\.toml)$
"""


def workflow() -> str:
    return f"""\
# kvgen in pull requests: lint (SARIF to code scanning), generated code up to date, and the
# capacity review of `kvgen diff` as a pull-request comment. Written by `kvgen init`.
name: kvgen
on: pull_request
permissions:
  contents: read
  pull-requests: write  # the review comment
  security-events: write  # the SARIF upload
jobs:
  specs:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with: {{fetch-depth: 0}}  # kvgen diff reads origin/<base branch>
      - uses: actions/setup-python@v5
        with: {{python-version: "3.12"}}
      - run: python -m pip install "{requirement()}"  # kvgen itself, not this repository
      - name: Lint (code scanning)
        run: kvgen lint --format sarif > kvgen.sarif
      - name: Upload SARIF
        if: always()
        uses: github/codeql-action/upload-sarif@v3
        with: {{sarif_file: kvgen.sarif, category: kvgen}}
      - run: kvgen lint --format github
      - run: kvgen generate --check
      - name: Capacity review
        run: kvgen diff --format github  # exit 1 on an unacknowledged reducing or API change
      - name: Capacity review comment
        if: always()
        env: {{GH_TOKEN: "${{{{ github.token }}}}"}}
        run: |
          kvgen -q diff --format markdown > kvgen-diff.md || true
          cat kvgen-diff.md >> "$GITHUB_STEP_SUMMARY"
          gh pr comment "${{{{ github.event.pull_request.number }}}}" --body-file kvgen-diff.md
"""


def _write(path: Path, text: str, force: bool, done: list[str]) -> None:
    from kvgen.writer import write_atomic

    if path.exists() and not force:
        done.append(f"kept     {path.as_posix()} (exists; --force overwrites it)")
        return
    verb = "replaced" if path.exists() else "created "
    write_atomic(path, text)
    done.append(f"{verb} {path.as_posix()}")


def _layout(args: argparse.Namespace) -> Layout:
    project = args.project
    if project.source is not None and project.root != Path.cwd().resolve():
        where = os.path.relpath(project.source)
        raise UsageError(f"kvgen is already set up by {where}; run `kvgen init` in its directory")
    specs = (args.specs or project.specs.as_posix()).rstrip("/")
    out = (args.out or project.out.as_posix()).rstrip("/")
    for flag, value in (("--specs", specs), ("--out", out)):
        if not _RELATIVE.match(value) or ".." in Path(value).parts:
            raise UsageError(f"{flag} {value!r}: give a relative path inside the repository")
    # Beside the spec directory, where the specs' `$schema=../kvspec.schema.json` finds it.
    schema = project.schema if project.source else Path(specs).parent / Path(SCHEMA_FILE).name
    return Layout(specs, out, schema.as_posix())


def _configure(layout: Layout, force: bool, done: list[str]) -> str:
    """Write [tool.kvgen] or kvgen.toml; returns the file that configures the project."""
    from kvgen.writer import write_atomic

    found = find_config(Path.cwd())
    pyproject = Path(PYPROJECT)
    if found is not None and found.parent.resolve() == Path.cwd().resolve():
        if found.name == PYPROJECT:
            done.append(f"kept     {PYPROJECT} [tool.kvgen] (edit it by hand)")
            return PYPROJECT
        _write(Path(KVGEN_TOML), config_table(layout, "# kvgen configuration"), force, done)
        return KVGEN_TOML
    if pyproject.is_file():
        text = pyproject.read_text(encoding="utf-8")
        separator = "\n" if text.endswith("\n") else "\n\n" if text else ""
        write_atomic(pyproject, text + separator + config_table(layout, "[tool.kvgen]"))
        done.append(f"updated  {PYPROJECT} (added [tool.kvgen])")
        return PYPROJECT
    _write(Path(KVGEN_TOML), config_table(layout, "# kvgen configuration"), force, done)
    return KVGEN_TOML


def run(args: argparse.Namespace) -> Exit:
    from kvgen.schema_export import export_schema

    layout = _layout(args)
    done: list[str] = []
    config_file = _configure(layout, args.force, done)
    specs = Path(layout.specs)
    if specs.is_dir():
        done.append(f"kept     {layout.specs}/")
    else:
        specs.mkdir(parents=True)
        (specs / ".gitkeep").write_text("")  # git keeps no empty directory; CI lints this one
        done.append(f"created  {layout.specs}/")
    _write(Path(layout.schema), export_schema(), args.force, done)
    _write(PRE_COMMIT, pre_commit_config(layout), args.force, done)
    _write(WORKFLOW, workflow(), args.force, done)
    sys.stdout.write("".join(f"{line}\n" for line in done))
    sys.stdout.write(
        f"""
kvgen is set up ({config_file} holds its settings). Next steps:
  1. write a spec: kvgen import-hf path/to/config.json --out {layout.specs}/<family>.yaml
  2. kvgen lint && kvgen generate      # writes {layout.out}/<family>/sizing.py and allocator.py
  3. import it: from {layout.out.replace("/", ".")}.<family> import sizing
  4. commit {layout.specs}/, {layout.out}/ and the files above; `pre-commit install` runs
     the hooks on every commit, and the workflow reviews every pull request
"""
    )
    return Exit.OK
