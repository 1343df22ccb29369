"""An imported model is a first-class model (issue 32): import-hf reads the spellings
transformers' config classes accept, names the missing field (and where a config of several
models keeps it) in every refusal, imports the text model of a composite config whatever its
vision/audio fields, writes comments only about fields the config holds, and records the
architecture the engines choose their model class by.

The configs are the corpus's (tests/fixtures/hf/corpus: each built by transformers 5.24.0's
own config class, the cache its tiny model held measured beside it)."""

from __future__ import annotations

import json
import re

import pytest
from kvgen._importhf import import_config
from kvgen._spec.loader import load_bytes

from tests.cli import hf_corpus


def _entry(model_type: str) -> dict:
    (entry,) = [e for e in hf_corpus.load_corpus()["entries"] if e["model_type"] == model_type]
    return entry


def _import(text: str, **kw):
    return import_config("config.json", text, kv_cache_dtype="fp32", **kw)


@pytest.mark.parametrize(
    ("model_type", "heads", "head_dim", "k_per_token"),
    # Kosmos2TextConfig / Kosmos2_5TextConfig defaults: attention_heads 32 and 16, embed_dim
    # 2048 and 1536, layers 24; no KV-head count, so one KV head per query head: head_dim
    # 2048 / 32 = 64 and 1536 / 16 = 96, K per token 32 x 64 = 2,048 and 16 x 96 = 1,536
    # elements, what transformers' cache held (the corpus's k_per_token).
    [("kosmos-2", 32, 64, 2048), ("kosmos-2.5", 16, 96, 1536)],
)
def test_kosmos_spellings_layers_and_attention_heads_are_read(
    model_type: str, heads: int, head_dim: int, k_per_token: int
) -> None:
    entry = _entry(model_type)
    result = _import(entry["config"])
    assert result.diagnostics == [] and result.text is not None
    family = load_bytes("k.yaml", result.text.encode()).family
    assert family is not None
    model = family.models[0]
    (kind,) = model.layer_kinds.values()
    assert (model.layers.count, model.num_attention_heads) == (24, heads)
    assert (kind.kv_heads, kind.head_dim) == (heads, head_dim)
    assert kind.kv_heads * kind.head_dim == k_per_token == entry["layers"][0]["k_per_token"]
    assert f"kv_heads: {heads}  # config.json text_config.attention_heads" in result.text
    assert hf_corpus.verdict(entry).verdict == "match"


def test_a_composite_config_imports_its_text_model_whatever_its_own_fields() -> None:
    """Granite 4 Vision's top level holds its projector's deepstack_layer_map,
    spatial_target_layers and spatial_vision_layer; Qwen2.5-Omni's thinker its audio
    position_id_per_seconds and seconds_per_chunk: fields of the towers, noted, not
    blocking. The thinker's text model: 28 query heads, 4 KV heads, hidden 3584 / 28 = 128,
    K per token 4 x 128 = 512 elements, what transformers held."""
    for model_type in ("granite4_vision", "qwen2_5_omni_thinker", "qwen3_omni_moe_thinker"):
        result = _import(_entry(model_type)["config"])
        assert result.diagnostics == [], [d.render() for d in result.diagnostics]
        noted = [d.message for d in result.notes]
        assert any("a composite config's own field" in n for n in noted), noted
    thinker = _entry("qwen2_5_omni_thinker")
    assert hf_corpus.verdict(thinker).verdict == "match"
    assert thinker["layers"][0]["k_per_token"] == 4 * 128


def test_blip_text_decoder_is_refused_for_its_per_layer_cross_attention() -> None:
    (said,) = _import(_entry("blip")["config"]).diagnostics
    assert said.code == "KV305" and "model_type 'blip_text_model'" in said.message
    assert "cross-attention cache over the image encoder" in said.message


@pytest.mark.parametrize(
    ("model_type", "blocks"),
    [
        ("qwen2_5_omni", "'talker_config', 'thinker_config.text_config'"),
        ("pi0", "'dit_config', 'vlm_config.text_config'"),
    ],
)
def test_a_config_of_several_models_names_the_field_and_where_it_is(
    model_type: str, blocks: str
) -> None:
    text = _entry(model_type)["config"]
    (said,) = _import(text, max_seq_len=4096).diagnostics
    assert said.code == "KV304"
    assert said.message.startswith("config has no 'num_hidden_layers' for one language model")
    assert blocks in said.message
    first = blocks.split("'")[1].split(".")[0]
    line = next(i for i, row in enumerate(text.splitlines(), 1) if f'"{first}"' in row)
    assert (said.line, said.col) != (1, 1) and said.line == line


def test_glm5_next_linear_layers_are_refused_at_their_field_not_a_missing_one() -> None:
    """GLM-5-Next's linear layers give one head count for q, k and v (Kimi Delta
    Attention's form): the refusal names that at linear_num_heads, not a missing
    linear_num_key_heads at 1:1, even when its indexer's unknown fields are passed."""
    text = _entry("glm5_next")["config"]
    ignored = ("index_kpool", "index_kpool_always_select_tail", "linear_lower_bound")
    for kw in ({}, {"ignore_fields": ignored}):
        (said,) = _import(text, **kw).diagnostics
        assert said.code == "KV305" and "'text_config.linear_num_heads'" in said.message
        assert (said.line, said.col) != (1, 1)


_NAMED = re.compile(r"(?<![\w.])([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)(?= \d)")


def _has(data: dict, path: str) -> bool:
    for part in path.split("."):
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def test_every_field_a_comment_names_is_in_the_config() -> None:
    """Each value comment's source (``config.json NAME``, and each ``NAME <number>`` of a
    derivation such as ``hidden_size 4096 / num_attention_heads 32``) names a field the config
    holds at that path: on c2a37ec 57 imports of the corpus named one it does not
    (gptj's num_key_value_heads, a composite's fields without text_config.)."""
    from kvgen._importhf._fields import ALIASES, CACHE_FIELDS, MODEL_ALIASES

    fields = set(CACHE_FIELDS) | set(ALIASES) | {"hidden_size", "vocab_size"}
    fields |= {alias for spellings in MODEL_ALIASES.values() for alias in spellings}
    wrong = {}
    for entry in hf_corpus.load_corpus()["entries"]:
        if "config" not in entry:
            continue
        data = json.loads(entry["config"])
        result = _import(entry["config"])
        if result.text is None:
            result = _import(entry["config"], max_seq_len=hf_corpus.CONTEXT)
        for line in (result.text or "").splitlines():
            comment = line.partition("  # ")[2]
            source = (
                comment[comment.find("config.json ") + 12 :] if "config.json " in comment else ""
            )
            first = source.split(" ", 1)[0].rstrip(":;,")
            named = [first] + [m for m in _NAMED.findall(source) if m.rsplit(".", 1)[-1] in fields]
            for name in named:
                if name.rsplit(".", 1)[-1] in fields and not _has(data, name):
                    wrong.setdefault(entry["model_type"], set()).add(name)
    assert wrong == {}


def test_the_architecture_is_the_configs_and_a_bare_config_gets_its_model_types() -> None:
    """config.json architectures[0] is the spec's architecture (the class the engines load);
    a config saved by its class alone (no architectures) gets the class transformers builds
    for its model_type where the engines' behaviour depends on it (MiniMax: vLLM 0.33.0 and
    SGLang 0.5.23 cannot run it)."""
    from kvgen._model.engine_rows import engine_arch

    minimax = _import(_entry("minimax")["config"])
    assert "architectures" not in json.loads(_entry("minimax")["config"])
    assert minimax.text is not None
    assert "    architecture: MiniMaxForCausalLM  # transformers' class of model_type " in (
        minimax.text
    )
    family = load_bytes("m.yaml", minimax.text.encode()).family
    assert family is not None
    assert engine_arch(family).vllm_unmodelled == "vllm_no_minimax"
    gpt2 = json.loads(_entry("gpt2")["config"])
    text = _import(json.dumps({**gpt2, "architectures": ["GPT2LMHeadModel"]})).text
    assert (
        text is not None
        and "    architecture: GPT2LMHeadModel  # config.json architectures[0]" in text
    )
