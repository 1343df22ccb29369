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

import json
import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

__all__ = ["HEADER_LIMIT", "Tensor", "WeightsError", "pp_layer_ranges", "rank_bytes", "read"]

#: safetensors refuses headers above 100 MB; so does kvgen, before reading them.
HEADER_LIMIT = 100_000_000
INDEX_NAME = "model.safetensors.index.json"
#: an index file is small JSON (a few MB for the largest models)
INDEX_LIMIT = 64 << 20
VOCAB_PADDING = 64  # vLLM's DEFAULT_VOCAB_PADDING_SIZE

_COLUMN = frozenset(
    {"q_proj", "gate_proj", "up_proj", "gate_up_proj", "qkv_proj", "w1", "w3", "fc1", "c_fc"}
    | {"q_b_proj", "kv_b_proj", "query_key_value", "c_attn", "in_proj", "conv1d"}
)
_ROW = frozenset({"o_proj", "down_proj", "w2", "fc2", "c_proj", "out_proj", "dense"})
_KV = frozenset({"k_proj", "v_proj"})
_VOCAB = frozenset({"embed_tokens", "lm_head", "wte", "word_embeddings", "tok_embeddings"})
_HEAD_PARAMS = frozenset({"A_log", "A", "D", "dt_bias"})  # Mamba per-head vectors, split by head
_LAYER = re.compile(r"(?:^|\.)(?:layers|h|blocks)\.(\d+)\.")


class WeightsError(ValueError):
    """A weights path that is not a readable safetensors model; the message says why."""


@dataclass(frozen=True)
class Tensor:
    """One tensor of a checkpoint as its header describes it."""

    name: str
    shape: tuple[int, ...]
    nbytes: int


def read(path: Path) -> list[Tensor]:
    """Tensors of a model directory, an index file or one ``.safetensors`` file."""
    if path.is_dir():
        index = path / INDEX_NAME
        if index.exists():
            return _read_index(index)
        shards = sorted(path.glob("*.safetensors"))
        if not shards:
            raise WeightsError(f"{path}: no *.safetensors file and no {INDEX_NAME}")
        return [t for shard in shards for t in _read_header(shard)]
    if path.name.endswith(".json"):
        return _read_index(path)
    return _read_header(path)


def _read_index(index: Path) -> list[Tensor]:
    try:
        weight_map = json.loads(_read_bounded(index, INDEX_LIMIT))["weight_map"]
        shards = sorted(set(weight_map.values()))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise WeightsError(f"{index}: not a safetensors index ({exc})") from None
    for shard in shards:
        if not isinstance(shard, str) or Path(shard).name != shard:
            raise WeightsError(f"{index}: shard {shard!r} is not a file name beside the index")
    return [t for shard in shards for t in _read_header(index.parent / shard)]


def _read_header(path: Path) -> list[Tensor]:
    with _open_regular(path) as handle:
        prefix = handle.read(8)
        if len(prefix) != 8:
            raise WeightsError(f"{path}: shorter than a safetensors header")
        length = int.from_bytes(prefix, "little")
        if length > HEADER_LIMIT:
            raise WeightsError(f"{path}: header of {length} bytes is over {HEADER_LIMIT}")
        text = handle.read(length)
        size = os.fstat(handle.fileno()).st_size
    if len(text) != length:
        raise WeightsError(f"{path}: header cut short ({len(text)} of {length} bytes)")
    try:
        header = json.loads(text)
    except ValueError as exc:
        raise WeightsError(f"{path}: header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise WeightsError(f"{path}: header is not a JSON object")
    return [_tensor(path, name, entry, size - 8 - length) for name, entry in sorted(header.items())
            if name != "__metadata__"]  # fmt: skip


def _tensor(path: Path, name: str, entry: object, data_bytes: int) -> Tensor:
    try:
        assert isinstance(entry, dict)
        begin, end = entry["data_offsets"]
        shape = tuple(entry["shape"])
        ok = all(type(v) is int and v >= 0 for v in (begin, end, *shape)) and begin <= end
    except (AssertionError, KeyError, TypeError, ValueError):
        ok = False
    if not ok or end > data_bytes:
        raise WeightsError(f"{path}: tensor {name!r} has no valid shape and data_offsets")
    return Tensor(name, shape, end - begin)


def _open_regular(path: Path) -> BinaryIO:
    """Open for reading without blocking on a FIFO or device; only regular files pass.

    Not ``kvgen._files``: weights lie outside the project, and a Hugging Face cache's snapshot
    files are links into its blob store, so links are followed here (to regular files only).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise WeightsError(f"{path}: cannot open ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WeightsError(f"{path}: not a regular file")
    return os.fdopen(fd, "rb")


def _read_bounded(path: Path, limit: int) -> bytes:
    with _open_regular(path) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise WeightsError(f"{path}: larger than {limit} bytes")
    return data


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
