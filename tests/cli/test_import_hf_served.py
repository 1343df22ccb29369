"""A KV305 refusal of a cache kind says which engine releases serve the model (issue 32).

On c2a37ec these refusals said only that the spec format has no form for the cache. Now each
names the vLLM / SGLang releases kvgen targets that register the model's architecture (and
the file implementing it), and why kvgen does not size it yet, or that none of them serves
it. The claims come from ``kvgen._importhf._served.SERVED``, which must equal what
``bench/engines/served_architectures.py`` read from the engines' registries
(tests/fixtures/engines/served_architectures.json); the slow test reads them again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kvgen._importhf import import_config
from kvgen._util.codes import hf as codes

from tests.cli.hf_corpus import load_corpus

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "engines" / "served_architectures.json"
ENGINES = Path("/tmp/kvgen_engines")
# release label -> how a message names it (kvgen._importhf._served.ENGINE_RELEASES)
ENGINE_RELEASES = {
    "vllm-0.33.0": "vLLM 0.33.0",
    "vllm-0.34.0": "vLLM 0.34.0",
    "sglang-0.5.23": "SGLang 0.5.23",
}
NONE = "none of vLLM 0.33.0, vLLM 0.34.0 or SGLang 0.5.23 serves it"


def _recorded() -> dict:
    return json.loads(FIXTURE.read_text())


def _claims(rows: list[dict], release: str) -> set[tuple[str, str, str]]:
    return {
        (
            release,
            x["architecture"],
            f"the out-of-tree plugin {x['plugin']}" if "plugin" in x else x["source"],
        )
        for x in rows
    }


def test_the_table_is_what_the_engines_registries_hold():
    from kvgen._importhf import _served

    assert _served.ENGINE_RELEASES == ENGINE_RELEASES
    recorded = _recorded()
    assert recorded["provenance"]["versions"] == {
        "vllm-0.33.0": "0.33.0",
        "vllm-0.34.0": "0.34.0",
        "sglang-0.5.23": "0.5.23",
    }
    assert set(recorded["provenance"]["versions"]) == set(ENGINE_RELEASES)
    from_engines = {
        model_type: set().union(
            *(_claims(rows, release) for release, rows in entry["engines"].items())
        )
        for model_type, entry in recorded["served"].items()
    }
    assert {k: set(v) for k, v in _served.SERVED.items()} == from_engines
    for entry in recorded["served"].values():  # the class is the architecture's own name
        for rows in entry["engines"].values():
            assert all(x.get("class", x["architecture"]) == x["architecture"] for x in rows)


def _refusal(config: dict | str) -> str:
    text = config if isinstance(config, str) else json.dumps(config, indent=2)
    result = import_config("config.json", text, kv_cache_dtype="fp32")
    assert result.text is None
    first = result.diagnostics[0]
    assert first.code == codes.UNSUPPORTED_CONFIG_FEATURE.code
    return first.message


def test_every_corpus_refusal_of_a_cache_kind_names_who_serves_it():
    """Each KV305 refusal of the transformers corpus ends with the engines' fact, as recorded:
    every (release, architecture, file) the registries hold, or that none serves it."""
    served = _recorded()["served"]
    seen = 0
    for entry in load_corpus()["entries"]:
        if "config" not in entry:
            continue
        result = import_config("config.json", entry["config"], kv_cache_dtype="fp32")
        if result.text is not None or result.diagnostics[0].code != "KV305":
            continue
        seen += 1
        message = result.diagnostics[0].message
        model_type = entry["model_type"]
        assert model_type in served, message
        claims = set().union(
            *(_claims(rows, rel) for rel, rows in served[model_type]["engines"].items())
        )
        if not claims:
            assert message.endswith(NONE + " (their model registries list none of its "
                                    "architectures)"), message  # fmt: skip
            continue
        assert NONE not in message
        assert "kvgen does not size it yet: " in message
        for release, architecture, where in claims:
            assert ENGINE_RELEASES[release] in message and architecture in message, message
            assert where in message, message
        for label in ENGINE_RELEASES.values():  # no release claimed that is not
            if label not in {ENGINE_RELEASES[r] for r, _, _ in claims}:
                assert label not in message.split("; served by ")[1], message
    assert seen >= 25  # 31 model types recorded; the corpus refuses the encoder-decoders too


def test_lfm3_conv_layers_name_vllm_0_34_only():
    # vLLM 0.34.0 registers Lfm3ForCausalLM (vllm/model_executor/models/lfm3.py); 0.33.0 and
    # SGLang 0.5.23 do not. Its conv layers are ShortConv, a MambaBase state in vLLM.
    config = {
        "model_type": "lfm3",
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 128000,
        "layer_types": ["conv", "full_attention"],
    }
    message = _refusal(config)
    assert message.startswith("layer type 'conv' in 'layer_types': a short-convolution layer")
    assert (
        "; served by vLLM 0.34.0 (Lfm3ForCausalLM in vllm/model_executor/models/lfm3.py); "
        "kvgen does not size it yet: vLLM keeps each conv layer's state in its Mamba state pool"
    ) in message
    assert "0.33.0" not in message and "SGLang" not in message


def test_lfm2_short_convolutions_name_both_engines():
    config = {
        "model_type": "lfm2",
        "num_hidden_layers": 4,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 128000,
        "full_attn_idxs": [1, 3],
    }
    assert _refusal(config).endswith(
        "; served by vLLM 0.33.0 and vLLM 0.34.0 (Lfm2ForCausalLM in "
        "vllm/model_executor/models/lfm2.py) and by SGLang 0.5.23 (Lfm2ForCausalLM in "
        "sglang/srt/models/lfm2.py); kvgen does not size it yet: vLLM keeps each conv layer's "
        "state in its Mamba state pool (ShortConv, a MambaBase layer: conv_L_cache - 1 "
        "columns of hidden_size channels, vllm/model_executor/layers/mamba/short_conv.py), a "
        "conv-only state kvgen's spec format has no kind for"
    )


def test_gemma4_keys_as_values_name_the_engines_gemma4_code():
    # attention_k_eq_v is a KV305 field (UNSUPPORTED_FIELDS); vLLM's gemma4.py and SGLang's
    # gemma4_causal.py read it, so the refusal names both engines' Gemma 4 architectures.
    config = {
        "model_type": "gemma4_text",
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "max_position_embeddings": 4096,
        "attention_k_eq_v": True,
    }
    assert _refusal(config) == (
        "'attention_k_eq_v' = True: layers whose keys double as values; served by vLLM 0.33.0 "
        "and vLLM 0.34.0 (Gemma4ForCausalLM in vllm/model_executor/models/gemma4.py; "
        "Gemma4ForConditionalGeneration in vllm/model_executor/models/gemma4_mm.py) and by "
        "SGLang 0.5.23 (Gemma4ForCausalLM in sglang/srt/models/gemma4_causal.py; "
        "Gemma4ForConditionalGeneration in sglang/srt/models/gemma4_mm.py); kvgen does not "
        "size it yet: the spec format has no form for this cache"
    )


def test_deepseek_v4_names_vllms_compressed_cache():
    # vllm/models/deepseek_v4/attention.py: a compressed layer's MLAAttentionSpec has
    # tokens_per_state=compress_ratio; compressor.py: CompressorStateCache, fp32 sliding pages.
    message = _refusal({"model_type": "deepseek_v4", "num_hidden_layers": 2})
    assert message.startswith("model_type 'deepseek_v4': compressed attention layers")
    assert (
        "; served by vLLM 0.33.0 and vLLM 0.34.0 (DeepseekV4ForCausalLM in "
        "vllm/models/deepseek_v4/__init__.py) and by SGLang 0.5.23 (DeepseekV4ForCausalLM in "
        "sglang/srt/models/deepseek_v4.py); kvgen does not size it yet: vLLM caches a "
        "compressed layer's latent once per compress_ratio tokens"
    ) in message


def test_rwkv_is_served_by_none_of_the_releases():
    message = _refusal({"model_type": "rwkv", "num_hidden_layers": 2, "hidden_size": 64})
    assert message.startswith("model_type 'rwkv': RWKV time-mix recurrent state")
    assert message.endswith(f"; {NONE} (their model registries list none of its architectures)")


def test_an_encoder_decoder_model_type_not_recorded_says_so():
    message = _refusal({"model_type": "my_seq2seq", "is_encoder_decoder": True})
    assert message.endswith(
        "; kvgen has no record of which engine releases serve model_type 'my_seq2seq'"
    )


@pytest.mark.slow
@pytest.mark.skipif(
    not all((ENGINES / f"venv-{r}").is_dir() for r in ENGINE_RELEASES),
    reason="engine venvs not installed under /tmp/kvgen_engines",
)
def test_the_fixture_is_what_the_installed_engines_register():
    done = subprocess.run(
        [sys.executable, "bench/engines/served_architectures.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_composite_is_looked_up_by_its_own_model_type_after_its_text_models():
    # BLIP's text decoder is refused as model_type 'blip_text_model' (its text_config); the
    # engines' registries list the composite, 'blip': the note is the composite's.
    from kvgen._importhf._served import SERVED, engines_note

    assert "blip_text_model" not in SERVED and "blip" in SERVED
    assert engines_note("blip_text_model", "blip") == engines_note("blip")
    assert "serves it" in engines_note("blip")
    assert "has no record" in engines_note("blip_text_model")
    assert engines_note("glm5_next_text", "glm5_next").startswith("; served by vLLM 0.33.0")
