"""``kvgen init``: set up kvgen in the current repository.

Creates the spec directory, a copy of the spec format's JSON Schema (for editors), the
``[tool.kvgen]`` table in pyproject.toml (or a kvgen.toml when there is no pyproject.toml), a
``.pre-commit-config.yaml`` with kvgen's hooks, and a GitHub Actions workflow that installs
kvgen itself (kvgen is not on the package index yet: a pinned git URL, the commit this kvgen
came from or its release tag, or with --install the wheel you give, copied into .kvgen/ so the
repository carries it), lints with SARIF upload, checks that generated code is up to date,
and comments the ``kvgen diff`` report on the pull request. Then it prints the next steps.

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
from typing import TYPE_CHECKING, Any

from kvgen._generate.config import (
    KVGEN_TOML,
    OUT_DIR,
    PYPROJECT,
    SCHEMA_FILE,
    SPEC_DIR,
    find_config,
)
from kvgen._util.exits import Exit, UsageError
from kvgen.sizing.engines_registry import DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_NUM_TOKENS

if TYPE_CHECKING:
    from tomlkit.items import Table

log = logging.getLogger("kvgen")

WORKFLOW = Path(".github/workflows/kvgen.yml")
PRE_COMMIT = Path(".pre-commit-config.yaml")
GITIGNORE = ".gitignore"
_RELATIVE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]*$")  # quoted into YAML and regexes


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    parser.add_argument(
        "--install", metavar="WHEEL|REQUIREMENT",
        help="what the CI workflow installs as kvgen: a wheel file (copied into .kvgen/ and "
        "installed from there: the repository's own wheel) or a pip requirement (default: "
        "the git commit this kvgen was installed from, else its release tag, pinned)",
    )  # fmt: skip
    parser.set_defaults(func=run)


def requirement() -> str:
    """``kvgen==X.Y.Z``: the workflow installs exactly the release that wrote it, so that every
    pull request is judged by the same rules and a newer kvgen is a reviewed change of the
    workflow, never one a pull request or a new release makes (docs/security.md, "What CI must
    pin")."""
    from kvgen._cli.main import version

    return f"kvgen=={version()}"


WHEELS = Path(".kvgen")  # where --install WHEEL puts the repository's own copy of the wheel
# A requirement the workflow passes to pip, double-quoted for the shell in YAML: PEP 508
# names, versions, extras and URLs only (no quote, no `$`, no backtick, no line break).
_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-\[\], <>=!~@/:+#%]*$")


@dataclass(frozen=True)
class Install:
    """What the CI workflow installs as kvgen, and the comment that says so."""

    requirement: str  # the argument of `python -m pip install`
    why: str  # one comment line


def default_install(direct_url: dict[str, Any] | None = None) -> Install:
    """A pinned git URL: the commit this kvgen was installed from when pip recorded one (PEP
    610 ``direct_url.json`` of an install from git), else the release tag of this version in
    kvgen's repository. kvgen is not on the package index yet, so a version range would fail."""
    from kvgen._util.meta import PROJECT_URL, version

    vcs = (direct_url or {}).get("vcs_info") or {}
    url = (direct_url or {}).get("url", "")
    commit = vcs.get("commit_id", "")
    if (
        vcs.get("vcs") == "git"
        and re.fullmatch(r"[0-9a-f]{40}", commit)
        and not url.startswith("file:")
    ):
        requirement = f"kvgen @ git+{url}@{commit}"
        if _REQUIREMENT.match(requirement):
            return Install(requirement, "pinned to the commit of the kvgen that wrote this file")
    return Install(
        f"kvgen @ git+{PROJECT_URL}@v{version()}",
        "pinned to the release tag of the kvgen that wrote this file",
    )


def _direct_url() -> dict[str, Any] | None:
    """This kvgen's PEP 610 record (``direct_url.json``), or None (an index install has none)."""
    import json
    from importlib import metadata

    try:
        text = metadata.distribution("kvgen").read_text("direct_url.json")
        return json.loads(text) if text else None
    except (metadata.PackageNotFoundError, ValueError):
        return None


def _install(args: argparse.Namespace, done: list[str]) -> Install:
    """``--install``: a wheel copied into the repository, or a requirement; else the default."""
    given = args.install
    if given is None:
        return default_install(_direct_url())
    wheel = Path(given)
    if wheel.suffix == ".whl":
        from kvgen._util.files import Refused, exists, read_bytes, write_bytes

        if not wheel.is_file():
            raise UsageError(f"--install {given}: no such wheel file")
        if not re.fullmatch(r"kvgen-[A-Za-z0-9_.+-]+\.whl", wheel.name):
            raise UsageError(f"--install {given}: not a kvgen wheel (kvgen-VERSION-...whl)")
        try:
            data = read_bytes(wheel, limit=64 << 20, root=wheel.parent)
        except Refused as exc:
            raise UsageError(exc.diagnostic.render()) from None
        target = WHEELS / wheel.name
        verb = "replaced" if exists(target) else "created "
        write_bytes(target, data, inside=Path.cwd())
        done.append(f"{verb} {target.as_posix()} (the wheel the CI workflow installs)")
        return Install(f"./{target.as_posix()}", "the wheel this repository carries")
    if not _REQUIREMENT.match(given):
        raise UsageError(
            f"--install {given!r}: give a wheel file or a pip requirement (letters, digits "
            "and .-_[],<>=!~@/:+#% only)"
        )
    return Install(given, "as given to `kvgen init --install`")


@dataclass(frozen=True)
class ProjectLayout:
    """Where a new project keeps its specs, output and schema, as ``kvgen init`` writes them."""

    specs: str
    out: str
    schema: str


# Deployment defaults that hold for every model (kvgen's own, kvgen.sizing.engines_registry). No
# max_seq_len: plan and diff then use each model's native length (capped at
# DEFAULT_MAX_SEQ_LEN), where a fixed value would refuse every model with a shorter context.
DEPLOYMENT_DEFAULTS: dict[str, object] = {
    "max_batch_size": DEFAULT_MAX_BATCH_SIZE,
    "max_num_tokens": DEFAULT_MAX_NUM_TOKENS,
    "tp_size": 1,
    "gpu_memory": "40GiB",
    "semantics": "trtllm-v2",
}


def config_table(layout: ProjectLayout, header: str) -> str:
    """The settings as TOML text, under ``header`` (``[tool.kvgen]`` or a comment line)."""
    import tomlkit

    doc = tomlkit.document()
    if not header.startswith("["):
        doc.add(tomlkit.comment(header.lstrip("# ")))
    table = _settings(layout)
    if header.startswith("["):
        tool = tomlkit.table(is_super_table=True)
        tool.append("kvgen", table)
        doc.append("tool", tool)
    else:
        for key, item in table.items():
            doc.append(key, item)
    return tomlkit.dumps(doc)


def _settings(layout: ProjectLayout) -> Table:
    import tomlkit
    from kvgen._generate.config import PROJECT_KEYS

    table = tomlkit.table()
    for key, value in (("specs", layout.specs), ("out", layout.out), ("schema", layout.schema)):
        table.append(key, value)
        table[key].comment(PROJECT_KEYS[key][1])
    deployment = tomlkit.table()
    deployment.comment(PROJECT_KEYS["deployment"][1] + " (max_seq_len: each model's own)")
    for key, default in DEPLOYMENT_DEFAULTS.items():
        deployment.append(key, default)
    table.append("deployment", deployment)
    return table


def pre_commit_config(layout: ProjectLayout) -> str:
    """The hooks as a ``repo: local`` entry running the kvgen installed beside pre-commit
    (``language: system``): they work offline and before kvgen's first release, where a
    hook that pre-commit installs itself (``language: python``) fails to find kvgen on the
    package index. The remote form, for once a release tag exists, is in the comment."""
    from kvgen._util.meta import PROJECT_URL, version

    spec_files = re.escape(layout.specs) + r"/.*\.ya?ml"
    out_files = re.escape(layout.out) + r"/.*\.py"
    return f"""\
# kvgen hooks (https://pre-commit.com); both read [tool.kvgen] and check the whole spec
# directory whenever a spec or the configuration changes (two specs of one family are KV010).
# They run the kvgen that is installed where pre-commit runs (as the one that wrote this
# file), so they work offline and before kvgen is released. Once the release tag v{version()}
# exists, pre-commit can install kvgen itself instead: replace the `repo: local` entry below
# with this one (with specs outside schema/families, add each hook's `files:` line below):
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
        pass_filenames: false
        files: ^({spec_files}|pyproject\\.toml|kvgen\\.toml)$
      - id: kvgen-generate-check
        name: kvgen generate --check
        entry: kvgen generate --check
        language: system
        pass_filenames: false
        files: ^({spec_files}|{out_files}|pyproject\\.toml|kvgen\\.toml)$
"""


def workflow(install: Install | None = None) -> str:
    install = install or default_install()
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
      # kvgen itself, not this repository: {install.why}.
      # kvgen is not on the package index yet; once it is, "{requirement()}" works too.
      - run: python -m pip install "{install.requirement}"
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
    """Write one of init's files below the working directory (``kvgen._util.files``: no link on the
    way, never outside the repository)."""
    from kvgen._util.files import exists, write_bytes

    if exists(path) and not force:
        done.append(f"kept     {path.as_posix()} (exists; --force overwrites it)")
        return
    verb = "replaced" if exists(path) else "created "
    write_bytes(path, text.encode("utf-8"), inside=Path.cwd())
    done.append(f"{verb} {path.as_posix()}")


def _layout(args: argparse.Namespace) -> ProjectLayout:
    project = args.project
    if project.source is not None and project.root != Path.cwd().resolve():
        where = os.path.relpath(project.source)
        raise UsageError(f"kvgen is already set up by {where}; run `kvgen init` in its directory")
    specs = (args.specs or project.specs.as_posix()).rstrip("/")
    out = (args.out or project.out.as_posix()).rstrip("/")
    for flag, value in (("--specs", specs), ("--out", out)):
        if not _RELATIVE.match(value) or ".." in Path(value).parts:
            shown = (
                repr(value) if len(value) <= 80 else f"{value[:40]!r}... ({len(value)} characters)"
            )
            raise UsageError(f"{flag} {shown}: give a relative path inside the repository")
    # Beside the spec directory, where the specs' `$schema=../kvspec.schema.json` finds it.
    schema = project.schema if project.source else Path(specs).parent / Path(SCHEMA_FILE).name
    return ProjectLayout(specs, out, schema.as_posix())


def _configure(layout: ProjectLayout, force: bool, done: list[str]) -> str:
    """Write [tool.kvgen] or kvgen.toml; returns the file that configures the project."""
    from kvgen._util.files import exists

    found = find_config(Path.cwd())
    if found is not None and found.parent.resolve() == Path.cwd().resolve():
        if found.name == PYPROJECT:
            done.append(f"kept     {PYPROJECT} [tool.kvgen] (edit it by hand)")
            return PYPROJECT
        _write(Path(KVGEN_TOML), config_table(layout, "# kvgen configuration"), force, done)
        return KVGEN_TOML
    if exists(Path(PYPROJECT)):
        return _add_to_pyproject(layout, done)
    _write(Path(KVGEN_TOML), config_table(layout, "# kvgen configuration"), force, done)
    if done[-1].startswith(("created", "replaced")):
        done += _shown(config_table(layout, "# kvgen configuration"))
    return KVGEN_TOML


def _shown(settings: str) -> list[str]:
    """The settings written, indented under the file's line: the user sees every default."""
    return [f"           {line}" for line in settings.splitlines() if line and line[0] != "#"]


def _add_to_pyproject(layout: ProjectLayout, done: list[str]) -> str:
    """Add ``[tool.kvgen]`` to pyproject.toml with tomlkit, which keeps every other byte of
    the file; an invalid file is refused at its line:col and left as it was."""
    import tomlkit
    from kvgen._generate.config import MAX_CONFIG_BYTES
    from kvgen._util import toml as _toml
    from kvgen._util.files import read_bytes, write_bytes
    from tomlkit.exceptions import ParseError

    text = _toml.decode(PYPROJECT, read_bytes(Path(PYPROJECT), limit=MAX_CONFIG_BYTES))
    _toml.check_lines(PYPROJECT, text)  # positions are git's (KV015)
    _toml.check_nesting(PYPROJECT, text)  # tomlkit recurses too
    try:
        doc = tomlkit.parse(text if not text or text.endswith("\n") else text + "\n")
    except ParseError as exc:
        reason = str(exc).rsplit(" at line ", 1)[0]
        raise UsageError(
            f"{PYPROJECT}:{exc.line}:{exc.col + 1}: invalid TOML: {reason}; "  # col: 0-based
            "fix it, then run kvgen init again"
        ) from None
    tool = doc.get("tool")
    if tool is not None and not isinstance(tool, tomlkit.items.Table):
        # `tool = 5` or `tool = "kvgen"`: never looked into (`"kvgen" in 5` raised TypeError,
        # `"kvgen" in "kvgen"` kept a string as if it were our table), refused at its key.
        line, col = _toml.position(text, "tool", "")
        raise UsageError(
            f"{PYPROJECT}:{line}:{col}: `tool` is {_kind(tool)}, not a table: kvgen init adds "
            "[tool.kvgen] to the [tool] table (make `tool` a table, or add [tool.kvgen] by hand)"
        )
    if tool is not None and "kvgen" in tool:  # only when tool.kvgen is not a table of ours
        done.append(f"kept     {PYPROJECT} tool.kvgen (edit it by hand)")
        return PYPROJECT
    if tool is None:
        doc.append("tool", tomlkit.table(is_super_table=True))
    doc["tool"].append("kvgen", _settings(layout))
    write_bytes(Path(PYPROJECT), tomlkit.dumps(doc).encode("utf-8"), inside=Path.cwd())
    done.append(f"updated  {PYPROJECT} (added [tool.kvgen])")
    done += _shown(config_table(layout, "[tool.kvgen]"))
    return PYPROJECT


def _kind(item: object) -> str:
    """What a TOML value is, in the words of the TOML spec (for a refusal)."""
    import datetime

    import tomlkit

    kinds: list[tuple[type, str]] = [
        (tomlkit.items.InlineTable, "an inline table"),
        (tomlkit.items.AoT, "an array of tables"),
        (list, "an array"),
        (bool, "a boolean"),  # before int: a bool is an int
        (int, "an integer"),
        (float, "a float"),
        (str, "a string"),
        (datetime.datetime, "a date-time"),  # before date: a datetime is a date
        (datetime.date, "a date"),
        (datetime.time, "a time"),
    ]
    return next((what for kind, what in kinds if isinstance(item, kind)), "not a table")


def ignored(layout: ProjectLayout) -> list[str]:
    """The .gitignore lines for what ``kvgen generate`` keeps beside its output: the lock,
    and the staging and backup folders a killed run leaves for the next one to remove."""
    from kvgen._generate.writer import BACKUP_SUFFIX, LOCK_SUFFIX, STAGE_SUFFIX

    name = Path(layout.out).name
    return [f".{name}{LOCK_SUFFIX}", f".{name}{STAGE_SUFFIX}/", f".{name}{BACKUP_SUFFIX}/"]


def _ignore(layout: ProjectLayout, done: list[str]) -> None:
    """Add the lines of ``ignored`` that .gitignore lacks, keeping the rest of it."""
    from kvgen._generate.config import MAX_CONFIG_BYTES
    from kvgen._util.files import exists, read_bytes, write_bytes

    path = Path(GITIGNORE)
    raw = read_bytes(path, limit=MAX_CONFIG_BYTES) if exists(path) else b""
    present = {line.strip() for line in raw.decode("utf-8", "replace").splitlines()}
    missing = [line for line in ignored(layout) if line not in present]
    if not missing:
        done.append(f"kept     {GITIGNORE} (ignores kvgen's lock and staging folders)")
        return
    separator = b"" if not raw or raw.endswith(b"\n") else b"\n"
    added = "# kvgen generate: its lock, and what a killed run leaves behind\n"
    added += "".join(f"{line}\n" for line in missing)
    # Bytes: whatever the file held stays byte for byte, even if it is not UTF-8.
    write_bytes(path, raw + separator + added.encode("utf-8"), inside=Path.cwd())
    verb = "updated " if raw else "created "
    done.append(f"{verb} {GITIGNORE} (ignores {', '.join(missing)})")


def _check_targets(layout: ProjectLayout) -> None:
    """Every path init may write, checked before the first write (``kvgen._util.files``): a link or
    a non-regular file at one of them refuses the whole run, so nothing is half set up."""
    from kvgen._util.files import check_writable

    here = Path.cwd()
    for path in (PYPROJECT, KVGEN_TOML, layout.schema, PRE_COMMIT, WORKFLOW, GITIGNORE):
        check_writable(Path(path), root=here, inside=here)
    check_writable(Path(layout.specs), root=here, inside=here, directory=True)
    check_writable(Path(layout.specs) / ".gitkeep", root=here, inside=here)


def run(args: argparse.Namespace) -> Exit:
    from kvgen._spec.schema_export import export_schema
    from kvgen._util.files import make_dirs

    layout = _layout(args)
    _check_targets(layout)
    if args.install and args.install.endswith(".whl"):  # its copy too, before any write
        from kvgen._util.files import check_writable

        here = Path.cwd()
        check_writable(WHEELS, root=here, inside=here, directory=True)
        check_writable(WHEELS / Path(args.install).name, root=here, inside=here)
    done: list[str] = []
    config_file = _configure(layout, args.force, done)
    specs = Path(layout.specs)
    if specs.is_dir() and not specs.is_symlink():
        done.append(f"kept     {layout.specs}/")
    else:
        make_dirs(specs, inside=Path.cwd())  # a link on the way is refused (KV020)
        _write(specs / ".gitkeep", "", False, [])  # git keeps no empty directory; CI lints it
        done.append(f"created  {layout.specs}/")
    _write(Path(layout.schema), export_schema(), args.force, done)
    _write(PRE_COMMIT, pre_commit_config(layout), args.force, done)
    install = _install(args, done)
    _write(WORKFLOW, workflow(install), args.force, done)
    if done[-1].startswith(("created", "replaced")):
        done[-1] += f" (CI installs {install.requirement}: {install.why})"
    _ignore(layout, done)
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
