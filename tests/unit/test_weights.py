"""Weights per rank from safetensors headers (kvgen._deploy.weights).

The checkpoint below is a tiny Llama written by hand: hidden 64, 8 query heads of 8, 2 KV heads,
intermediate 128, vocabulary 100, 3 layers, bf16 (2 B). Per layer at tp 1:
  2 norms [64]           2 x 128    =    256
  q_proj, o_proj [64,64] 2 x 8,192  = 16,384
  k_proj, v_proj [16,64] 2 x 2,048  =  4,096
  gate/up/down [128x64]  3 x 16,384 = 49,152      layer total 69,888
plus embed_tokens and lm_head [100, 64] = 12,800 each and the final norm 128:
total 3 x 69,888 + 25,728 = 235,392 B.
"""

from __future__ import annotations

import json
import os
import struct
import threading
from pathlib import Path

import pytest
from kvgen._deploy import weights

BF16 = 2
LAYER = {
    "input_layernorm.weight": (64,),
    "post_attention_layernorm.weight": (64,),
    "self_attn.q_proj.weight": (64, 64),
    "self_attn.k_proj.weight": (16, 64),
    "self_attn.v_proj.weight": (16, 64),
    "self_attn.o_proj.weight": (64, 64),
    "mlp.gate_proj.weight": (128, 64),
    "mlp.up_proj.weight": (128, 64),
    "mlp.down_proj.weight": (64, 128),
}


def tiny_llama(
    layers: int = 3, *, tied: bool = False, kv_rows: int = 16
) -> dict[str, tuple[int, ...]]:
    """The tiny Llama above; ``kv_rows`` widens k_proj/v_proj to another spec's KV heads x
    head dim (Llama-3.1-8B: 8 x 128 = 1,024) with the other projections unchanged."""
    shape_of = {name: (kv_rows, 64) if "k_proj" in name or "v_proj" in name else shape
                for name, shape in LAYER.items()}  # fmt: skip
    shapes = {
        f"model.layers.{i}.{name}": shape for i in range(layers) for name, shape in shape_of.items()
    }
    shapes["model.embed_tokens.weight"] = (100, 64)
    shapes["model.norm.weight"] = (64,)
    if not tied:
        shapes["lm_head.weight"] = (100, 64)
    return shapes


def write_safetensors(path: Path, shapes: dict[str, tuple[int, ...]]) -> None:
    """A real safetensors layout: u64 header length, JSON header, then (sparse) tensor bytes."""
    header, offset = {}, 0
    for name, shape in sorted(shapes.items()):
        size = BF16
        for dim in shape:
            size *= dim
        header[name] = {
            "dtype": "BF16",
            "shape": list(shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    text = json.dumps(header).encode()
    with path.open("wb") as handle:
        handle.write(struct.pack("<Q", len(text)) + text)
        handle.truncate(8 + len(text) + offset)


def test_one_file_totals_every_tensor(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "model.safetensors", tiny_llama())
    tensors = weights.read(tmp_path)
    assert sum(t.nbytes for t in tensors) == 235_392
    assert weights.rank_bytes(tensors, num_layers=3, kv_heads=2) == [235_392]


def test_tp4_splits_projections_replicates_norms_and_kv_heads(tmp_path: Path) -> None:
    # tp 4, per layer: norms 256 (replicated); q, o 8,192/4 = 2,048 each; k, v: 2 KV heads < 4
    # ranks, so each rank holds max(1, 2 // 4) = 1 head: 2,048 / 2 = 1,024 each; gate/up/down
    # 16,384 / 4 = 4,096 each. 256 + 4,096 + 2,048 + 12,288 = 18,688.
    # Embedding and LM head: vocabulary 100 padded to 128 rows, 32 rows x 128 B = 4,096 each.
    # 3 x 18,688 + 2 x 4,096 + 128 (final norm) = 64,384.
    write_safetensors(tmp_path / "model.safetensors", tiny_llama())
    tensors = weights.read(tmp_path)
    assert weights.rank_bytes(tensors, num_layers=3, kv_heads=2, tp_size=4) == [64_384]


def test_pp_deals_leftover_layers_before_the_last_rank() -> None:
    # vLLM's get_pp_indices: 62 layers over 4 ranks are 15 each and 2 left over, which go to
    # ranks -2 and -3: [15, 16, 16, 15].
    ranges = weights.pp_layer_ranges(62, 4)
    assert [len(r) for r in ranges] == [15, 16, 16, 15]
    assert [r.start for r in ranges] == [0, 15, 31, 47]
    assert [len(r) for r in weights.pp_layer_ranges(3, 2)] == [2, 1]


def test_pp2_puts_embedding_first_and_head_last(tmp_path: Path) -> None:
    # 3 layers over 2 ranks: [2, 1]. Rank 0: 2 x 69,888 + embedding 12,800 = 152,576;
    # rank 1: 69,888 + final norm 128 + LM head 12,800 = 82,816.
    write_safetensors(tmp_path / "model.safetensors", tiny_llama())
    tensors = weights.read(tmp_path)
    assert weights.rank_bytes(tensors, num_layers=3, kv_heads=2, pp_size=2) == [152_576, 82_816]


def test_tied_embedding_is_held_by_the_last_rank_too(tmp_path: Path) -> None:
    # No lm_head tensor; the last rank builds its LM head from the embedding (12,800 B).
    write_safetensors(tmp_path / "model.safetensors", tiny_llama(tied=True))
    tensors = weights.read(tmp_path)
    assert weights.rank_bytes(
        tensors, num_layers=3, kv_heads=2, pp_size=2, tie_word_embeddings=True
    ) == [152_576, 82_816]
    assert weights.rank_bytes(tensors, num_layers=3, kv_heads=2, tie_word_embeddings=True) == [
        235_392 - 12_800
    ]


def test_sharded_checkpoint_reads_the_index(tmp_path: Path) -> None:
    shapes = tiny_llama()
    first = {k: v for k, v in shapes.items() if "layers.0." in k or "embed" in k}
    rest = {k: v for k, v in shapes.items() if k not in first}
    write_safetensors(tmp_path / "a.safetensors", first)
    write_safetensors(tmp_path / "b.safetensors", rest)
    weight_map = {k: "a.safetensors" for k in first} | {k: "b.safetensors" for k in rest}
    (tmp_path / weights.INDEX_NAME).write_text(json.dumps({"weight_map": weight_map}))
    assert sum(t.nbytes for t in weights.read(tmp_path)) == 235_392
    assert sum(t.nbytes for t in weights.read(tmp_path / weights.INDEX_NAME)) == 235_392


def test_index_naming_a_path_outside_its_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / weights.INDEX_NAME).write_text(
        json.dumps({"weight_map": {"x": "../x.safetensors"}})
    )
    with pytest.raises(weights.WeightsError, match=r"is not a \.safetensors file name beside"):
        weights.read(tmp_path)


def test_a_huge_header_length_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
    with pytest.raises(weights.WeightsError, match="header length field is over") as refused:
        weights.read(path)
    assert str(1 << 40) not in str(refused.value)  # the file's first 8 bytes are never shown


def test_offsets_past_the_file_are_refused(tmp_path: Path) -> None:
    header = json.dumps({"w": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8]}}).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)  # 4 of 8 data bytes
    with pytest.raises(weights.WeightsError, match="file shorter than its header says"):
        weights.read(path)


def test_devices_are_refused(tmp_path: Path) -> None:
    # refused by its name, before it is opened; a device named *.safetensors by its type
    with pytest.raises(weights.WeightsError, match=r"not a \.safetensors file or an index"):
        weights.read(Path("/dev/zero"))
    os.symlink("/dev/zero", tmp_path / "model.safetensors")
    with pytest.raises(weights.WeightsError, match="is a symbolic link"):
        weights.read(tmp_path)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []
    reader = threading.Thread(target=lambda: _catch(outcome, fifo), daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert isinstance(outcome[0], weights.WeightsError)


def _catch(outcome: list[BaseException], path: Path) -> None:
    try:
        weights.read(path)
    except BaseException as exc:  # the test inspects what was raised
        outcome.append(exc)


@pytest.mark.parametrize(
    "names",
    [
        ["model-00001-of-00000.safetensors"],  # a set of no shards
        ["model-00001-of-00001.safetensors", "model-00002-of-00001.safetensors"],
        ["model.safetensors", "model-00001-of-00001.safetensors"],  # a file and a set
    ],
)
def test_a_folder_without_index_must_hold_one_checkpoint(tmp_path: Path, names) -> None:
    for name in names:
        write_safetensors(tmp_path / name, tiny_llama())
    with pytest.raises(weights.WeightsError, match="name the index or one"):
        weights.read(tmp_path)


def test_only_a_class_name_from_config_json_is_shown(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "model.safetensors", tiny_llama())
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["Llama\x1b[2J"]}))
    assert weights.load(tmp_path).architecture is None
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    assert weights.load(tmp_path).architecture == "LlamaForCausalLM"


def test_a_layer_index_of_thousands_of_digits_is_no_layer(tmp_path: Path) -> None:
    shapes = tiny_llama()
    shapes["model.layers." + "9" * 5000 + ".mlp.w.weight"] = (2,)
    write_safetensors(tmp_path / "model.safetensors", shapes)
    tensors = weights.read(tmp_path)
    assert weights.rank_bytes(tensors, num_layers=3, kv_heads=2) == [235_392 + 4]  # on rank 0
