"""Model weights per rank, read from safetensors headers (never the tensors).

A safetensors file starts with an 8-byte little-endian header length and a JSON header naming
each tensor's dtype, shape and byte range; that is all kvgen reads. A model directory holds one
``*.safetensors`` file or several shards listed by ``model.safetensors.index.json``.

How a tensor lands on a rank follows vLLM's layer classes (the split TensorRT-LLM and SGLang
make for the same layers is the same):

- tensor parallelism (``tp``): column-parallel projections (``q_proj``, ``gate_proj``, ...) are
  split along their output rows, row-parallel ones (``o_proj``, ``down_proj``, ...) along their
  input columns (their bias is replicated); ``k_proj``/``v_proj`` split by KV head and are
  replicated once ``tp`` exceeds the KV heads (``QKVParallelLinear``: ``max(1, kv_heads // tp)``
  heads per rank); embeddings and the LM head split by vocabulary rows after padding the
  vocabulary to a multiple of 64 (``VocabParallelEmbedding``); everything else (norms, routers,
  scalars, ``ReplicatedLinear`` such as MLA's ``q_a_proj``) is counted on every rank.
- pipeline parallelism (``pp``): decoder layers are dealt out as ``vllm.distributed.utils.
  get_pp_indices`` does (``L // pp`` each; the ``L % pp`` left over go one each to the ranks
  just before the last); the embedding lives on the first rank, the final norm and LM head on the
  last, and a tied embedding is held by the last rank too.

The answer is an estimate of the weight memory (quantisation workspaces, activations and CUDA
graphs are not weights: ``kvgen plan`` asks for them as an explicit reserve).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from kvgen._util.files import display_path
from kvgen._util.nesting import MAX_DEPTH, json_too_deep, position

__all__ = [
    "DTYPE_BITS",
    "HEADERS_LIMIT",
    "HEADER_LIMIT",
    "Checkpoint",
    "LayerShape",
    "Tensor",
    "WeightsError",
    "check_model",
    "load",
    "pp_layer_ranges",
    "rank_bytes",
    "read",
]

#: One shard's header, checked before it is read. safetensors itself refuses headers over
#: 100 MB; a real shard's header is a few hundred KB and a single-file checkpoint of 100,000
#: tensors about 13 MB. A header is parsed whole, and a hostile one costs up to about 20 bytes of
#: memory per byte, so the bound is set by the largest real header, not by safetensors' limit.
HEADER_LIMIT = 16 << 20
#: All shards' headers together, summed from their length fields before any header is read. The
#: largest real checkpoints (an FP4 trillion-parameter MoE: about 280,000 tensors) hold ~40 MB.
HEADERS_LIMIT = 64 << 20
INDEX_NAME = "model.safetensors.index.json"
#: an index file is small JSON (a few MB for the largest models, ~30 MB for an FP4 trillion)
INDEX_LIMIT = 64 << 20
CONFIG_NAME = "config.json"
CONFIG_LIMIT = 4 << 20  # as import-hf's bound on a config.json
VOCAB_PADDING = 64  # vLLM's DEFAULT_VOCAB_PADDING_SIZE
_U64 = 1 << 64  # safetensors checks shape and offsets arithmetic in usize (64 bits)

#: safetensors' dtypes and their width in bits (``Dtype::bitsize`` of the safetensors crate,
#: 0.6+): a tensor's bytes are ``elements x bits / 8``, and a name outside this table is refused.
DTYPE_BITS = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8,
    "F8_E4M3": 8, "F8_E8M0": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32,
    "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}  # fmt: skip
#: dtypes whose 2-D weight keeps one row per output feature (packed integer layouts such as
#: bitsandbytes' 4-bit ``[N/2, 1]`` or NVFP4's two values a byte do not): the rows check below
_FLOAT_DTYPES = frozenset({"F8_E5M2", "F8_E4M3", "F16", "BF16", "F32", "F64"})

_COLUMN = frozenset(
    {"q_proj", "gate_proj", "up_proj", "gate_up_proj", "qkv_proj", "w1", "w3", "fc1", "c_fc"}
    | {"q_b_proj", "kv_b_proj", "query_key_value", "c_attn", "in_proj", "conv1d"}
)
_ROW = frozenset({"o_proj", "down_proj", "w2", "fc2", "c_proj", "out_proj", "dense"})
_KV = frozenset({"k_proj", "v_proj"})
_VOCAB = frozenset({"embed_tokens", "lm_head", "wte", "word_embeddings", "tok_embeddings"})
_HEAD_PARAMS = frozenset({"A_log", "A", "D", "dt_bias"})  # Mamba per-head vectors, split by head
_LAYER = re.compile(r"(?:^|\.)(?:layers|h|blocks)\.(\d{1,9})\.")  # 9 digits: an int, cheaply
# A multi-token-prediction layer stored after the decoder (DeepSeek-V3, GLM-4.5: layer L holds
# eh_proj, enorm, hnorm and shared_head): not a decoder layer of the spec.
_MTP_PARTS = ("eh_proj.", "enorm.", "hnorm.", "shared_head.")
# transformers' shard names: model-00001-of-00004.safetensors
_SHARD = re.compile(r"^(.+)-(\d{5})-of-(\d{5})\.safetensors$")
_CONSOLIDATED = "consolidated"


class WeightsError(ValueError):
    """A weights path that is not a readable safetensors model; the message says why."""


class Tensor(NamedTuple):
    """One tensor of a checkpoint as its header describes it (a tuple: a checkpoint holds up
    to hundreds of thousands)."""

    name: str
    shape: tuple[int, ...]
    nbytes: int
    dtype: str = "BF16"


@dataclass(frozen=True)
class Checkpoint:
    """The tensors of one checkpoint, each shard counted once, and how the shards were chosen."""

    tensors: list[Tensor]
    shards: tuple[str, ...]
    rule: str  # which files were read, and why (shown with the figure)
    architecture: str | None = None  # config.json's architectures[0] beside the weights


@dataclass(frozen=True)
class LayerShape:
    """What the spec says one decoder layer's K and V projections hold: their output rows
    (KV heads x head dim, and x the V head dim), 0 where the layer has no plain K/V (MLA,
    recurrent or cache-free layers), so nothing is checked there."""

    k_rows: int
    v_rows: int


def read(path: Path) -> list[Tensor]:
    """Tensors of a model directory, an index file or one ``.safetensors`` file."""
    return load(path).tensors


def load(path: Path) -> Checkpoint:
    """A model directory, an index file or one ``.safetensors`` file, read header by header.

    Reads stay in the named folder: every file is a plain name in it (an index naming
    ``../x`` or ``/x`` is refused), no symbolic link is followed except a Hugging Face cache
    snapshot's links into the same repository's ``blobs/``, only ``*.safetensors`` shards, the
    index and ``config.json`` are opened, and no byte of a file appears in a message before its
    header parsed as a JSON object."""
    path = _cache_snapshot(path)
    folder, index, names, rule = _select(path)
    with contextlib.ExitStack() as stack:
        opened = [(name, stack.enter_context(_open(folder, name))) for name in names]
        prefixes = [_prefix(folder, name, handle) for name, handle in opened]
        total = sum(length for length, _ in prefixes)
        if total > HEADERS_LIMIT:
            raise WeightsError(
                f"{_shown(index or folder)}: the headers of its {len(names)} shards hold "
                f"{total} bytes, over the {HEADERS_LIMIT} kvgen reads (give the bytes per rank "
                "instead, e.g. --weights 17GiB)"
            )
        tensors = [
            tensor
            for (name, handle), (length, size) in zip(opened, prefixes, strict=True)
            for tensor in _header(folder / name, handle, length, size)
        ]
    return Checkpoint(tensors, tuple(names), rule, _architecture(folder))


def _cache_snapshot(path: Path) -> Path:
    """A Hugging Face cache repository folder (``models--ORG--NAME``) as its refs/main
    snapshot folder (kvgen._util.hf_cache); any other path as it is."""
    from kvgen._util.hf_cache import CacheError, snapshot_of

    if not path.name.startswith("models--"):
        return path
    try:
        snapshot = snapshot_of(path)
    except CacheError as exc:
        raise WeightsError(str(exc)) from None
    return path if snapshot is None else snapshot.folder


def _shown(path: Path) -> str:
    return display_path(path)


def _select(path: Path) -> tuple[Path, Path | None, list[str], str]:
    """The folder, the index (if any), the shard names read and the rule that chose them."""
    if path.is_dir():
        folder = path
        try:
            entries = set(os.listdir(folder))
        except OSError as exc:
            raise WeightsError(f"{_shown(folder)}: cannot list ({exc.strerror})") from None
        if INDEX_NAME in entries:
            index = folder / INDEX_NAME
            return folder, index, _read_index(folder, INDEX_NAME), f"shards listed by {INDEX_NAME}"
        found = sorted(name for name in entries if name.endswith(".safetensors"))
        if not found:
            raise WeightsError(f"{_shown(folder)}: no *.safetensors file and no {INDEX_NAME}")
        names, rule = _without_index(folder, found)
        return folder, None, names, rule
    folder, name = path.parent, path.name
    if name.endswith(".json"):
        return folder, path, _read_index(folder, name), f"shards listed by {name}"
    if not name.endswith(".safetensors"):
        raise WeightsError(
            f"{_shown(path)}: not a .safetensors file or an index (.json); give the model "
            "directory, its index or one .safetensors file"
        )
    return folder, None, [name], "one file"


def _without_index(folder: Path, found: list[str]) -> tuple[list[str], str]:
    """Shards of a folder without an index, each counted once.

    Mistral's repositories hold their own ``consolidated*.safetensors`` beside transformers'
    shards: the same weights twice. vLLM's and SGLang's default loaders read transformers'
    files (vLLM filters by the index; SGLang drops ``consolidated.safetensors`` beside
    ``model.safetensors``), so the consolidated files count only when nothing else is there.
    The rest must be one checkpoint: one file, or one complete set of ``NAME-0000i-of-0000n``
    shards."""
    consolidated = [name for name in found if name.startswith(_CONSOLIDATED)]
    others = [name for name in found if not name.startswith(_CONSOLIDATED)]
    names = others or consolidated
    skipped = (
        f"; {', '.join(map(display_path, consolidated))} not counted (Mistral's copy of the "
        "same weights)"
        if others and consolidated
        else ""
    )
    sets = {(m.group(1), m.group(3)) for m in map(_SHARD.match, names) if m}
    loose = [name for name in names if not _SHARD.match(name)]
    if len(sets) > 1 or (sets and loose) or (not sets and len(names) > 1):
        listed = ", ".join(map(display_path, names[:4])) + (", ..." if len(names) > 4 else "")
        raise WeightsError(
            f"{_shown(folder)}: holds more than one checkpoint ({listed}) and no {INDEX_NAME}; "
            "name the index or one .safetensors file"
        )
    if not sets:
        return names, "one file" + skipped
    ((stem, total),) = sets
    expected = [f"{stem}-{i:05d}-of-{total}.safetensors" for i in range(1, int(total) + 1)]
    missing = [name for name in expected if name not in names]
    if missing:
        raise WeightsError(f"{_shown(folder)}: shard {display_path(missing[0])} is missing")
    stray = sorted(set(names) - set(expected))
    if stray:  # model-00000-of-00004, model-00005-of-00004: not one of the set
        raise WeightsError(
            f"{_shown(folder)}: {display_path(stray[0])} is not one of the {int(total)} shards "
            f"its name says; name the index or one .safetensors file"
        )
    first, last = display_path(expected[0]), display_path(expected[-1])
    return expected, f"shards {first} to {last}" + skipped


def _read_index(folder: Path, name: str) -> list[str]:
    shown = _shown(folder / name)
    data = _json(folder, name, INDEX_LIMIT, "index")
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not all(
        isinstance(shard, str) for shard in weight_map.values()
    ):
        raise WeightsError(f"{shown}: not a safetensors index (no weight_map of file names)")
    shards = sorted(set(weight_map.values()))
    if not shards:
        raise WeightsError(f"{shown}: its weight_map is empty")
    for shard in shards:
        if not _plain_name(shard) or not shard.endswith(".safetensors"):
            raise WeightsError(
                f"{shown}: shard {_quoted(shard)} is not a .safetensors file name beside the "
                "index (no folders, no links out)"
            )
    return shards


def _plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and Path(name).name == name and "\\" not in name


def _quoted(text: str, limit: int = 80) -> str:
    """A name from a file, as messages show it: repr (control characters escaped), shortened."""
    shown = repr(text if len(text) <= limit else text[:limit] + "...")
    return shown


def _json(folder: Path, name: str, limit: int, what: str) -> object:
    """A small JSON file of the folder (an index, config.json): bounded, depth-checked."""
    shown = _shown(folder / name)
    with _open(folder, name) as handle:
        raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise WeightsError(f"{shown}: larger than {limit} bytes, too large for a {what}")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise WeightsError(f"{shown}: not UTF-8 text, not a {what}") from None
    deep = json_too_deep(text)
    if deep is not None:
        line, col = position(text, deep)
        raise WeightsError(
            f"{shown}: line {line}, column {col}: nests deeper than {MAX_DEPTH} levels, "
            f"not a {what}"
        )
    try:
        return json.loads(text)
    except ValueError as exc:  # the message is a position, never the text
        raise WeightsError(f"{shown}: not JSON ({_position(exc)}), not a {what}") from None


def _position(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    return "a number too large to read"


def _architecture(folder: Path) -> str | None:
    """``architectures[0]`` of the config.json beside the weights, when there is a readable one
    (it names the checkpoint in a refusal; nothing else is taken from it)."""
    try:
        data = _json(folder, CONFIG_NAME, CONFIG_LIMIT, "config")
    except WeightsError:
        return None
    names = data.get("architectures") if isinstance(data, dict) else None
    if isinstance(names, list) and names and isinstance(names[0], str):
        name = names[0]
        return name if _ARCHITECTURE.match(name) else None  # a class name, or nothing shown
    return None


_ARCHITECTURE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,79}$")


# --- files: the named folder only --------------------------------------------------------------


def _cache_repository(folder: Path) -> Path | None:
    """The Hugging Face cache repository (``.../models--org--name``) whose snapshot holds
    ``folder``, else None."""
    for parent in (folder, *folder.parents):
        if parent.name == "snapshots" and parent.parent.name.startswith("models--"):
            return parent.parent
    return None


def _open(folder: Path, name: str) -> BinaryIO:
    """Open ``folder/name`` without following a link (except a cache snapshot's link into its
    own ``blobs/``) and without blocking on a FIFO or device; only regular files pass."""
    path = folder / name
    shown = _shown(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        raise WeightsError(f"{shown}: no such file") from None
    except OSError as exc:
        raise WeightsError(f"{shown}: cannot open ({exc.strerror})") from None
    if stat.S_ISLNK(mode):
        repository = _cache_repository(folder)
        target = Path(os.path.realpath(path))
        blobs = None if repository is None else Path(os.path.realpath(repository / "blobs"))
        if blobs is None or target.parent != blobs:
            raise WeightsError(
                f"{shown}: is a symbolic link; kvgen follows links only from a Hugging Face "
                "cache snapshot into its own blobs/ (copy the file or name its real folder)"
            )
        path = target
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise WeightsError(f"{shown}: cannot open ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WeightsError(f"{shown}: not a regular file")
    return os.fdopen(fd, "rb")


# --- safetensors headers, validated as safetensors validates them ---------------------------


def _prefix(folder: Path, name: str, handle: BinaryIO) -> tuple[int, int]:
    """The header length (bounded) and the file's size, before any header byte is read."""
    shown = _shown(folder / name)
    prefix = handle.read(8)
    size = os.fstat(handle.fileno()).st_size
    if len(prefix) != 8:
        raise WeightsError(f"{shown}: shorter than a safetensors header (8 bytes)")
    length = int.from_bytes(prefix, "little")
    if length > HEADER_LIMIT:  # the figure is never shown: it is the file's first 8 bytes
        raise WeightsError(
            f"{shown}: not a safetensors file kvgen reads (its header length field is over "
            f"{HEADER_LIMIT} bytes)"
        )
    if 8 + length > size:
        raise WeightsError(f"{shown}: file shorter than its header says (cut short?)")
    return length, size


def _header(path: Path, handle: BinaryIO, length: int, size: int) -> list[Tensor]:
    shown = _shown(path)
    raw = handle.read(length)
    if len(raw) != length:
        raise WeightsError(f"{shown}: file shorter than its header says (cut short?)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise WeightsError(f"{shown}: the header is not UTF-8 (not a safetensors file)") from None
    deep = json_too_deep(text)
    if deep is not None:
        line, col = position(text, deep)
        raise WeightsError(
            f"{shown}: the header nests deeper than {MAX_DEPTH} levels (header line {line}, "
            f"column {col})"
        )
    try:
        header = json.loads(text)
    except ValueError as exc:
        raise WeightsError(f"{shown}: the header is not JSON ({_position(exc)})") from None
    if not isinstance(header, dict):
        raise WeightsError(f"{shown}: the header is not a JSON object")
    del raw, text
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in metadata.items()
    ):
        raise WeightsError(f"{shown}: __metadata__ must map strings to strings")
    # safetensors sorts the tensors by data_offsets, then each must start where the one before
    # ended (no gap, no overlap) and fill its span exactly: elements x dtype bits / 8 bytes
    entries = sorted([_entry(shown, name, entry) for name, entry in header.items()])
    del header
    end = 0
    tensors = []
    for begin, stop, name, dtype, shape in entries:
        if begin != end:
            what = "overlaps the tensor before it" if begin < end else "leaves a gap before it"
            raise WeightsError(
                f"{shown}: tensor {_quoted(name)} {what} (data_offsets [{begin}, {stop}], the "
                f"previous tensor ends at {end}); safetensors refuses such a file"
            )
        elements = 1
        for dim in shape:
            elements *= dim
            if elements >= _U64:
                break
        bits = elements * DTYPE_BITS[dtype]
        if bits >= _U64 or bits % 8 or bits // 8 != stop - begin:
            raise WeightsError(
                f"{shown}: tensor {_quoted(name)} of shape {_dims(shape)} and dtype {dtype} "
                f"does not fill its data_offsets [{begin}, {stop}] ({stop - begin} bytes)"
            )
        end = stop
        tensors.append(Tensor(name, shape, stop - begin, dtype))
    if 8 + length + end > size:
        raise WeightsError(
            f"{shown}: file shorter than its header says (its tensors end at byte "
            f"{8 + length + end}, the file has {size})"
        )
    if 8 + length + end < size:
        raise WeightsError(
            f"{shown}: file longer than its header says ({size - 8 - length - end} bytes after "
            "the last tensor); safetensors refuses such a file"
        )
    tensors.sort(key=lambda tensor: tensor.name)
    return tensors


def _entry(shown: str, name: str, entry: object) -> tuple[int, int, str, str, tuple[int, ...]]:
    """(begin, end, name, dtype, shape) of one header entry, each field as safetensors reads
    it: a known dtype, a shape of unsigned integers, two unsigned data offsets, end >= begin."""
    if type(entry) is not dict:
        raise WeightsError(f"{shown}: tensor {_quoted(name)} is not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if type(dtype) is not str or dtype not in DTYPE_BITS:
        shown_dtype = _quoted(dtype) if isinstance(dtype, str) else "missing or not a string"
        raise WeightsError(
            f"{shown}: tensor {_quoted(name)} has dtype {shown_dtype}, which safetensors does "
            f"not define ({', '.join(DTYPE_BITS)})"
        )
    if type(shape) is not list or not _unsigned(shape):
        raise WeightsError(f"{shown}: tensor {_quoted(name)}'s shape is not a list of sizes")
    if type(offsets) is not list or len(offsets) != 2 or not _unsigned(offsets):
        raise WeightsError(
            f"{shown}: tensor {_quoted(name)}'s data_offsets are not [begin, end] with "
            "0 <= begin <= end"
        )
    begin, end = offsets
    if end < begin:
        raise WeightsError(
            f"{shown}: tensor {_quoted(name)}'s data_offsets end before they begin "
            f"([{begin}, {end}])"
        )
    return begin, end, name, dtype, tuple(shape)


def _unsigned(values: list[Any]) -> bool:  # a JSON array
    """Every value an integer in [0, 2**64) (not a bool, a float or a string): in C, by type."""
    return (
        set(map(type, values)) <= _INT
        and min(values, default=0) >= 0
        and (max(values, default=0) < _U64)
    )


_INT = frozenset({int})


def _dims(shape: tuple[int, ...]) -> str:
    text = ", ".join(map(str, shape[:8])) + (", ..." if len(shape) > 8 else "")
    return f"[{text}]"


# --- the checkpoint against the spec -------------------------------------------------------


def check_model(checkpoint: Checkpoint, model: str, layers: Sequence[LayerShape]) -> None:
    """Refuse a checkpoint that is not the spec's model: its decoder must have the spec's
    layer count, and every plain K/V projection the rows the spec's layer kind gives.

    A checkpoint's decoder layers are the ``<prefix>.layers.<i>.`` tensors of one prefix
    (``model``, ``language_model.model``, ``backbone``, ...); a vision tower or an MTP module
    under another prefix is another group, and an MTP layer stored after the decoder
    (``eh_proj``) is not counted. One group must have exactly the spec's layers."""
    groups: dict[str, dict[int, list[Tensor]]] = {}
    mtp: set[tuple[str, int]] = set()
    for tensor in checkpoint.tensors:
        match = _LAYER.search(tensor.name)
        if match is None:
            continue
        prefix, index = tensor.name[: match.start()], int(match.group(1))
        groups.setdefault(prefix, {}).setdefault(index, []).append(tensor)
        if tensor.name[match.end() :].startswith(_MTP_PARTS):
            mtp.add((prefix, index))
    decoders = {
        prefix: {i: ts for i, ts in found.items() if (prefix, i) not in mtp}
        for prefix, found in groups.items()
    }
    named = f"{checkpoint.architecture} " if checkpoint.architecture else ""
    matching = [
        prefix for prefix, found in decoders.items() if sorted(found) == list(range(len(layers)))
    ]
    if not matching:
        if decoders:
            prefix = max(
                decoders, key=lambda p: (_decoder_like(p), sum(map(len, decoders[p].values())))
            )
            found = decoders[prefix]
            where = f"{prefix}.layers" if prefix else "layers"
            has = f"{len(found)} decoder layers ({where}.{min(found)}-{max(found)})"
        else:
            has = "no decoder layers (no tensor named <prefix>.layers.<i>.*)"
        raise WeightsError(
            f"the {named}checkpoint has {has}; the spec's model '{model}' has {len(layers)}: "
            "these are not its weights (name the model's own checkpoint, or give the bytes per "
            "rank, e.g. --weights 17GiB)"
        )
    found = decoders[matching[0]]
    for index, shape in enumerate(layers):
        for tensor in found[index]:
            _check_rows(tensor, index, shape, model, named)


def _decoder_like(prefix: str) -> bool:
    """Whether a layer group may be the language model's decoder (a refusal names it)."""
    return not any(word in prefix.lower() for word in _NOT_DECODER)


_NOT_DECODER = ("vision", "visual", "image", "audio", "speech", "encoder", "mtp", "multi_modal")


def _check_rows(tensor: Tensor, index: int, shape: LayerShape, model: str, named: str) -> None:
    module, param = _module(tensor.name), tensor.name.rsplit(".", 1)[-1]
    if module not in _KV or param != "weight" or len(tensor.shape) != 2:
        return
    if tensor.dtype not in _FLOAT_DTYPES:  # packed layouts do not keep rows
        return
    expected = shape.k_rows if module == "k_proj" else shape.v_rows
    if expected and tensor.shape[0] != expected:
        raise WeightsError(
            f"the {named}checkpoint's layer {index} {module} has {tensor.shape[0]} rows "
            f"({_quoted(tensor.name)}); the spec's model '{model}' gives that layer "
            f"{expected} (KV heads x head dim): these are not its weights"
        )


def pp_layer_ranges(num_layers: int, pp_size: int) -> list[range]:
    """The decoder layers of each pipeline rank (vLLM's ``get_pp_indices``, no override)."""
    counts = [num_layers // pp_size] * pp_size
    for i in range(2, num_layers % pp_size + 2):
        counts[-i] += 1
    starts = [sum(counts[:rank]) for rank in range(pp_size)]
    return [range(start, start + count) for start, count in zip(starts, counts, strict=True)]


def rank_bytes(
    tensors: Sequence[Tensor],
    *,
    num_layers: int,
    kv_heads: int,
    tp_size: int = 1,
    pp_size: int = 1,
    tie_word_embeddings: bool = False,
) -> list[int]:
    """Weight bytes held by one tensor-parallel rank of each pipeline rank."""
    ranges = pp_layer_ranges(num_layers, pp_size)
    owner = {layer: rank for rank, layers in enumerate(ranges) for layer in layers}
    totals = [0] * pp_size
    for tensor in tensors:
        share = _tp_share(tensor, kv_heads, tp_size)
        for rank in _pp_ranks(tensor.name, owner, pp_size, tie_word_embeddings):
            totals[rank] += share
    return totals


def _pp_ranks(name: str, owner: dict[int, int], pp_size: int, tied: bool) -> Iterable[int]:
    layer = _LAYER.search(name)
    if layer:
        index = int(layer.group(1))
        return (owner[index],) if index in owner else ()  # an MTP layer past num_layers: none
    module = _module(name)
    if module in _VOCAB and module != "lm_head":
        return {0, pp_size - 1} if tied else (0,)
    if module == "lm_head" or "norm" in module:
        return (pp_size - 1,)
    return (0,)


def _module(name: str) -> str:
    """The layer a parameter belongs to: ``q_proj`` for ``...self_attn.q_proj.weight``.

    Fused expert tensors name the projection in the parameter itself
    (``...mlp.experts.gate_up_proj``, MXFP4's ``..._blocks`` / ``..._scales``).
    """
    parts = name.split(".")
    param = re.sub(r"_(?:blocks|scales|bias)$", "", parts[-1])
    if param in _COLUMN or param in _ROW:
        return param
    return parts[-2] if len(parts) > 1 else parts[0]


def _tp_share(tensor: Tensor, kv_heads: int, tp: int) -> int:
    module, param = _module(tensor.name), tensor.name.rsplit(".", 1)[-1]
    shape, size = tensor.shape, tensor.nbytes
    if tp == 1 or not shape:
        return size
    if module in _VOCAB:
        rows = shape[0]
        padded = -(-rows // VOCAB_PADDING) * VOCAB_PADDING
        return size // rows * (padded // tp) if rows else size
    if module in _KV:
        return size * max(1, kv_heads // tp) // kv_heads if shape[0] % kv_heads == 0 else size
    if len(shape) == 3 and (module in _COLUMN or module in _ROW):  # fused experts [E, ., .]
        return size // tp if shape[1] % tp == 0 or shape[2] % tp == 0 else size
    if module in _COLUMN or param in _HEAD_PARAMS:
        return size // tp if shape[0] % tp == 0 else size
    if module in _ROW and len(shape) >= 2:
        return size // tp if shape[-1] % tp == 0 else size
    return size
