"""The transformers corpus (issue 22): every causal-LM model type of transformers, its default
config shrunk and run on CPU, the cache it allocated measured (bench/hf_corpus.py, recorded
with its provenance in tests/fixtures/hf/corpus/). kvgen's side is replayed here without
transformers: none imports wrong, no refusal is a missing field at 1:1, and
docs/import-hf-coverage.md is the table this replay writes."""

from __future__ import annotations

import importlib.util

import pytest

from tests.cli import hf_corpus


@pytest.fixture(scope="module")
def found() -> list[hf_corpus.Verdict]:
    return hf_corpus.verdicts()


def test_the_corpus_has_its_provenance():
    provenance = hf_corpus.load_corpus()["provenance"]
    assert provenance["transformers"].startswith("5.")
    assert provenance["built_by"] == "bench/hf_corpus.py"
    assert len(hf_corpus.load_corpus()["entries"]) >= 190


def test_none_imports_wrong(found):
    assert [v for v in found if v.verdict == "wrong"] == []


def test_a_refusal_names_a_feature_not_a_missing_field_at_1_1(found):
    at_start = [v for v in found if v.verdict == "refused" and " at 1:1: " in v.detail]
    assert at_start == []


def test_no_refusal_is_an_unknown_field(found):
    # KV302 refuses a field that could move a cache: every one the corpus met is now read,
    # reviewed (docs/import-hf-coverage.md says why) or gives way to the feature it announces
    unknown = [v for v in found if v.verdict == "refused" and v.detail.startswith("KV302 ")]
    assert unknown == []


def test_no_config_of_the_corpus_is_refused_for_a_missing_field_or_an_unknown_one():
    # also those transformers cannot run by default (oracle-error): kvgen's refusal of each
    # names a feature at its field, after --max-seq-len where the config has no context
    from kvgen._importhf import import_config

    said = {}
    for entry in hf_corpus.load_corpus()["entries"]:
        if "config" not in entry:
            continue
        name, text = entry["model_type"], entry["config"]
        result = import_config("config.json", text, kv_cache_dtype="fp32")
        if result.text is None and "--max-seq-len" in (result.diagnostics[0].fix or ""):
            result = import_config(
                "config.json", text, kv_cache_dtype="fp32", max_seq_len=hf_corpus.CONTEXT
            )
        for diagnostic in result.diagnostics[:1]:
            if (diagnostic.line, diagnostic.col) == (1, 1) or diagnostic.code == "KV302":
                said[name] = diagnostic.render()
    assert said == {}


def test_mla_latents_are_compared_not_skipped(found):
    # transformers 5 caches an MLA layer's latent and RoPE key (DeepSeek-V3: 512 + 64 per
    # token), which is what kvgen charges: those are matches now, not "no-oracle"
    by_type = {v.model_type: v for v in found}
    for name in ("deepseek_v3", "deepseek_v32", "glm_moe_dsa", "hy_v4", "minicpm3"):
        assert by_type[name].verdict == "match", by_type[name]


def test_popular_families_match_as_is(found):
    by_type = {v.model_type: v for v in found}
    for name in (
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen3",
        "qwen3_moe",
        "gemma2",
        "gemma3_text",
        "phi3",
        "olmo2",
        "granite",
        "starcoder2",
        "gpt2",
        "falcon",
        "jamba",
        "qwen3_next",
        "jetmoe",
        "gpt_bigcode",
        "codegen",
        "bloom",
        "gpt_neo",
        "cohere2_moe",
        "glm4_moe",
        "deepseek_v3",
        "olmo_hybrid",
        "llama4_text",
        "gemma3n_text",
        "bamba",
        "granitemoehybrid",
        "llama4",
        "gemma4",
        "qwen3_5",
        "deepseek_v2",
        "longcat_flash",
    ):
        if name in by_type:
            assert by_type[name].verdict == "match", by_type[name]


def test_the_coverage_doc_is_the_replay():
    assert hf_corpus.COVERAGE_DOC.read_text() == hf_corpus.render_table(), (
        "docs/import-hf-coverage.md is stale: run `python -m tests.cli.hf_corpus`"
    )


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None, reason="the live corpus needs transformers"
)
def test_live_corpus_agrees_with_the_recording():  # pragma: no cover - needs transformers
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(hf_corpus.ROOT, "bench")))
    import hf_corpus as bench  # bench/hf_corpus.py
    from transformers import CONFIG_MAPPING

    recorded = {e["model_type"]: e for e in hf_corpus.load_corpus()["entries"]}
    for name in ("llama", "gpt2", "falcon"):
        live = bench.run_one(name, CONFIG_MAPPING[name])
        assert live.get("layers") == recorded[name].get("layers")
        assert hf_corpus.verdict(live).verdict == hf_corpus.verdict(recorded[name]).verdict
