"""``kvgen import-hf CONFIG.json``: write a family spec from a Hugging Face config.json."""

from __future__ import annotations

import argparse
import logging
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, NoReturn

from kvgen._generate.writer import write_atomic
from kvgen._util.exits import Exit, UsageError

if TYPE_CHECKING:
    from kvgen._spec.models import Family
    from kvgen._util.hf_cache import Snapshot

# kvgen._spec.models.DTYPES, spelt out: registering the command must not import pydantic (a test
# checks the two agree).
DTYPES = (
    "fp32",
    "bf16",
    "fp16",
    "fp8",
    "nvfp4",
    "fp8_per_token_head",
    "int8_per_token_head",
    "mxfp8",
    "mxfp4",
    "fp8_ds_mla",
)

log = logging.getLogger("kvgen")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "import-hf",
        help="write a family spec from a Hugging Face config.json",
        description="Read a local config.json (no downloads) and write a kvgen family spec. "
        "Unknown or contradictory fields are reported at their JSON key; nothing is written "
        "then (exit 1).",
    )
    parser.add_argument(
        "config",
        metavar="CONFIG",
        help="a model's config.json, a model directory holding one, or a repository id "
        "(org/name) already in the local Hugging Face cache (read offline)",
    )
    parser.add_argument("--family", help="family identifier (default: config model_type)")
    parser.add_argument(
        "--model", help="model identifier (default: from _name_or_path or the file name)"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", metavar="FILE", help="write a new spec here (default: stdout)")
    where.add_argument(
        "--into",
        metavar="FAMILY.yaml",
        help="add the model to this existing family file (its text and comments are kept)",
    )
    parser.add_argument("--force", action="store_true", help="let --out replace an existing file")
    parser.add_argument(
        "--tokens-per-block",
        type=int,
        metavar="N",
        help="page size (default 32, or the --into family's)",
    )
    parser.add_argument(
        "--kv-cache-dtype", choices=DTYPES, help="cache dtype (default: the config's torch_dtype)"
    )
    parser.add_argument(
        "--max-seq-len",
        type=int,
        metavar="N",
        help="context length: required when the config has none (pure state-space models), "
        "or a cap below the config's max_position_embeddings",
    )
    parser.add_argument(
        "--ignore-field",
        action="append",
        default=[],
        metavar="NAME",
        help="a reviewed field that does not change the cache (repeatable)",
    )
    parser.set_defaults(func=run)


def _usage(message: str) -> NoReturn:
    raise UsageError(f"import-hf: {message}")  # printed once by cli.main, exit 2


def run(args: argparse.Namespace) -> Exit:
    from kvgen._importhf import import_config, to_identifier
    from kvgen._importhf._import import MAX_CONFIG_BYTES
    from kvgen._spec.loader import display_path
    from kvgen._util.codes import hf as codes
    from kvgen._util.files import exists, read_bytes
    from kvgen._util.lines import line_break_diagnostics

    for flag, value in (("--family", args.family), ("--model", args.model)):
        if value is not None and to_identifier(value) != value:
            return _usage(f"{flag} {value!r} is not an identifier (^[a-z][a-z0-9_]*$)")
    into = _into_family(Path(args.into)) if args.into else None
    tpb = args.tokens_per_block or (into.tokens_per_block if into else 32)
    if tpb < 1 or tpb > 4096 or tpb & (tpb - 1):
        return _usage(f"--tokens-per-block {tpb} is not a power of two in [1, 4096]")
    if args.out is not None and exists(Path(args.out)) and not args.force:
        return _usage(
            f"{display_path(args.out)} exists; --force replaces it, "
            "--into adds the model to an existing family file"
        )
    if args.max_seq_len is not None and not 1 <= args.max_seq_len <= 1 << 24:
        return _usage(f"--max-seq-len {args.max_seq_len} is not in [1, {1 << 24}]")
    located = _config_path(args.config)
    source = located.path
    raw = read_bytes(source, limit=MAX_CONFIG_BYTES, too_large=codes.CONFIG_TOO_LARGE)
    display = located.display or display_path(source)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        refused = codes.UNREADABLE_CONFIG.at(
            display, (1, 1), "file is not valid UTF-8", "save it as UTF-8"
        )
        print(refused.render())
        return Exit.FINDINGS
    breaks = line_break_diagnostics(display, text)  # positions must be git's, as in specs
    if breaks:
        print("".join(f"{diagnostic.render()}\n" for diagnostic in breaks), end="")
        return Exit.FINDINGS
    result = import_config(
        display,
        text,
        family=args.family or (into.family if into else None),
        model=args.model or located.model,
        tokens_per_block=tpb,
        kv_cache_dtype=args.kv_cache_dtype,
        ignore_fields=args.ignore_field,
        max_seq_len=args.max_seq_len,
        source=located.provenance,
    )
    for note in result.notes:  # stderr: stdout may be the spec itself
        print(note.render(), file=sys.stderr)
    if result.text is None:
        for diagnostic in result.diagnostics:
            print(diagnostic.render())
        return Exit.FINDINGS
    if args.into:
        return _write_into(Path(args.into), result.text, display, args.project.root)
    _say_if_taken(result.text, args)
    if args.out is None:
        sys.stdout.write(result.text)
        return Exit.OK
    write_atomic(Path(args.out), result.text, root=args.project.root)
    log.info("wrote %s", display_path(args.out))
    return Exit.OK


_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


class _Located(NamedTuple):
    """The file import-hf reads and, for a Hugging Face cache repository, how it is shown
    (the snapshot's config.json), named (``ORG/NAME@REVISION``) and the model's default name
    (NAME as an identifier)."""

    path: Path
    display: str | None = None
    provenance: str | None = None
    model: str | None = None


def _config_path(given: str) -> _Located:
    """CONFIG as a file, a model directory (its config.json), a Hugging Face cache repository
    folder (``models--ORG--NAME``, its refs/main snapshot) or snapshot folder, or ``org/name``
    found in the local Hugging Face cache by huggingface_hub's offline lookup (no network
    call, ever)."""
    from kvgen._spec.loader import display_path
    from kvgen._util.files import exists
    from kvgen._util.hf_cache import CacheError, snapshot_of

    path = Path(given)
    if path.is_dir():
        try:
            snapshot = snapshot_of(path)
        except CacheError as exc:
            _usage(str(exc))
        if snapshot is not None:
            return _from_cache(snapshot, given)
        inside = path / "config.json"
        if not exists(inside):
            _usage(f"{display_path(path)} is a directory without a config.json")
        return _Located(inside)
    if exists(path):
        return _Located(path)
    if not _REPO_ID.match(given):
        _usage(f"cannot read {display_path(path)}: No such file or directory")
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        _usage(
            f"{given!r} is no file here; reading a repository id from the Hugging Face cache "
            "needs huggingface_hub (pip install 'kvgen[hf]'), or pass the config.json path"
        )
    try:
        found = try_to_load_from_cache(given, "config.json")  # a cache lookup, never a download
    except ValueError as exc:  # huggingface_hub's HFValidationError: not a repository id
        _usage(f"{given!r} is no file here and not a repository id: {str(exc)[:120]}")
    if not isinstance(found, str):
        _usage(
            f"{given!r} is no file here and has no config.json in the local Hugging Face "
            "cache (import-hf never downloads; fetch it first, e.g. `hf download "
            f"{given} config.json`)"
        )
    snapshot = snapshot_of(Path(found).parent)
    if snapshot is None:  # not the hub's layout: read it as a file, never through a link
        return _Located(Path(found))
    return _from_cache(snapshot._replace(repo_id=given), given)


def _from_cache(snapshot: Snapshot, given: str) -> _Located:
    """The snapshot's config.json, read only where its link lands inside the same cache
    repository: a snapshot's ``config.json`` is a link to ``../../blobs/<hash>``, and one that
    points anywhere else (``/etc/...``, another repository, a folder outside the cache) is
    refused without being read."""
    from kvgen._importhf import to_identifier
    from kvgen._spec.loader import display_path
    from kvgen._util.hf_cache import CacheError, inside

    try:
        target = inside(snapshot, "config.json")
    except CacheError as exc:
        _usage(f"{given!r}: {exc}")
    if target is None:
        _usage(f"{display_path(snapshot.folder)} has no config.json (fetch it first)")
    return _Located(
        target,
        display_path(snapshot.folder / "config.json"),
        snapshot.provenance,
        to_identifier(snapshot.name) or None,
    )


def _into_family(path: Path) -> Family:
    from kvgen._spec.loader import load_path

    loaded = load_path(path)
    if loaded.family is None:
        for diagnostic in loaded.diagnostics:
            print(diagnostic.render())
        raise UsageError(f"import-hf: --into {loaded.path} does not load; fix it first")
    return loaded.family


def _write_into(path: Path, spec: str, source: str, root: Path) -> Exit:
    from kvgen._importhf._into import IntoRefused, add_model
    from kvgen._spec.loader import load_path

    loaded = load_path(path, root)
    try:
        merged = add_model(loaded.path, loaded.raw.decode("utf-8"), spec, source)
    except IntoRefused as exc:
        for diagnostic in exc.diagnostics:
            print(diagnostic.render())
        return _usage(f"{exc.message}; nothing was written")
    write_atomic(path, merged, root=root)
    log.info("added the model to %s", loaded.path)
    if "\nspeculative:" in spec:  # family-wide profiles are the family owner's decision
        log.warning("the import's speculative profile (mtp) was not added; add it by hand")
    return Exit.OK


def _say_if_taken(spec: str, args: argparse.Namespace) -> None:
    """A family name that a spec of the project already defines is said, never silent: with
    ``--out`` and a name kvgen chose it is refused (lint would report KV010)."""
    import re

    from kvgen._generate.project import spec_paths
    from kvgen._spec.loader import display_path

    family = re.search(r"^family: (\S+)$", spec, re.M)
    assert family is not None  # the importer always writes one
    name = family.group(1)
    if not args.project.spec_dir.is_dir():
        return
    taken = _defined_by(name, spec_paths(None, default=args.project.spec_dir))
    if taken is None or (args.out and Path(args.out).resolve() == taken.resolve()):
        return
    where = display_path(taken)
    if args.out is not None and args.family is None:
        _usage(
            f"family '{name}' (from the config's model_type) is already defined by {where}; "
            f"give --family NAME for a new family, or --into {where} to add the model to it"
        )
    log.warning(
        "family '%s' is already defined by %s: give --family NAME for a new family, or "
        "--into %s to add the model to it",
        name,
        where,
        where,
    )


def _defined_by(name: str, specs: list[Path]) -> Path | None:
    import re

    from kvgen._spec.loader import MAX_BYTES
    from kvgen._util.files import Refused, read_bytes

    pattern = re.compile(
        rb"^family:\s*['\"]?" + re.escape(name.encode()) + rb"['\"]?\s*(#|$)", re.M
    )
    for path in specs:
        try:
            if pattern.search(read_bytes(path, limit=MAX_BYTES)):
                return path
        except Refused:
            continue  # lint reports it; a name check is no place for that
    return None
