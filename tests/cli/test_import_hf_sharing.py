"""``kvgen import-hf`` on KV sharing across layers (Gemma 3n ``num_kv_shared_layers``): the
last n layers become kinds that read the last earlier layer of their type, and configs where
no such layer exists are KV311, pointed at the field."""

from __future__ import annotations

import json

from kvgen._importhf import import_config

from tests.cli.test_import_hf import FIXTURES, _import_text, imported

E4B = json.loads((FIXTURES / "gemma-3n-E4B.json").read_text())


def test_gemma_3n_e4b_shared_layers_read_the_last_owner_of_their_type():
    family = imported("gemma-3n-E4B", "--tokens-per-block", "64")
    model = family.models[0]
    kinds = model.layer_kinds
    # 35 layers, 15 shared: first shared layer 35 - 15 = 20; layer 19 is the last full layer
    # ((19 + 1) % 5 == 0) and 18 the last sliding one before it.
    assert kinds["shared_sliding"].reads == 18
    assert kinds["shared_full"].reads == 19
    pattern = model.layers.pattern
    assert model.layers.count == len(pattern) == 35
    assert pattern[:20] == ["sliding"] * 4 + ["full"] + ["sliding"] * 4 + ["full"] * 1 + [
        "sliding"
    ] * 4 + ["full"] + ["sliding"] * 4 + ["full"]
    assert pattern[20:] == (["shared_sliding"] * 4 + ["shared_full"]) * 3
    # The readers keep the owners' shapes (lint KV236 would report otherwise).
    assert kinds["shared_sliding"].model_copy(update={"reads": None}) == kinds["sliding"]
    assert kinds["shared_full"].model_copy(update={"reads": None}) == kinds["full"]


def test_gemma_3n_e2b_has_ten_readers():
    model = imported("gemma-3n-E2B", "--tokens-per-block", "64").models[0]
    # 30 layers, 10 shared: first shared 20, so the readers are again 18 and 19.
    assert model.layer_kinds["shared_sliding"].reads == 18
    assert model.layer_kinds["shared_full"].reads == 19
    assert model.layers.pattern[20:] == (["shared_sliding"] * 4 + ["shared_full"]) * 2


def test_zero_shared_layers_is_plain_gemma():
    config = {**E4B, "text_config": {**E4B["text_config"], "num_kv_shared_layers": 0}}
    result = import_config("config.json", json.dumps(config))
    assert result.diagnostics == [] and result.text is not None
    assert "reads:" not in result.text


def test_a_shared_type_without_an_earlier_owner_is_kv311():
    # Layers 0..4: s s s s f, with the last 2 shared: layer 4 (full) has no earlier full
    # layer before layer 3 (5 - 2) to read.
    text = dict(
        E4B["text_config"],
        num_hidden_layers=5,
        num_kv_shared_layers=2,
        layer_types=["sliding_attention"] * 4 + ["full_attention"],
        activation_sparsity_pattern=[0.0] * 5,
    )
    (diagnostic,) = _import_text({**E4B, "text_config": text})
    assert "KV311 layer 4 (full) is one of the last 2 shared layers" in diagnostic


def test_every_layer_shared_is_kv311():
    text = dict(E4B["text_config"], num_kv_shared_layers=35)
    (diagnostic,) = _import_text({**E4B, "text_config": text})
    assert "KV311 num_kv_shared_layers 35 leaves no layer with its own cache" in diagnostic
