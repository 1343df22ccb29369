"""Every architecture of the transformers corpus that imports and matches, imported as a
float32 checkpoint ships it (``torch_dtype: float32``), caches fp32 as transformers does and is
planned by vLLM and SGLang in the 2-byte cache they serve it in, by TensorRT-LLM in fp32
(tests/cli/hf_corpus_float32.py says how; issue 32: OLMo-2-1124-13B, gemma-2-9b-it)."""

from __future__ import annotations

from tests.cli.hf_corpus_float32 import float32_verdicts


def test_every_matching_architecture_plans_as_the_engines_serve_a_float32_checkpoint():
    found = float32_verdicts()
    wrong = {name: why for name, (verdict, why) in found.items() if verdict != "match"}
    assert not wrong
    # 153 at transformers 5.24.0 (the replay's matches): a floor that grows with the corpus
    assert len(found) >= 153
    assert {"olmo2", "gemma2", "llama", "qwen3", "mistral"} <= set(found)
