"""The transformers corpus as checkpoints ship it: ``torch_dtype: float32`` (issue 32).

transformers' default configs (``tests/fixtures/hf/corpus``) carry no dtype, and the replay of
``tests.cli.hf_corpus`` imports them with ``--kv-cache-dtype fp32`` (the dtype transformers ran
them in). Many published checkpoints instead say ``torch_dtype: float32`` (OLMo-2-1124-13B,
gemma-2-9b-it). For every architecture the replay matches, ``float32_verdict`` imports the
same config with that field and no flag, and checks:

- the spec caches fp32, layer by layer the bytes transformers allocated (as the replay);
- vLLM and SGLang plan it as they serve it, in a 2-byte cache (vLLM: bf16, "Downcast for
  float32 models", vllm/config/model.py ``_resolve_auto_dtype``; SGLang: fp16,
  sglang/srt/configs/model_config.py ``_get_and_verify_dtype``): ``engine_capacity`` of the
  plan (kvgen._engines.dtype ``serve``) equals that of the same config imported in bf16;
- TensorRT-LLM plans the fp32 it serves it in (its KV cache manager takes the checkpoint's
  dtype): ``serve`` leaves the module as it is.
"""

from __future__ import annotations

import json

from tests.cli.hf_corpus import CONTEXT, _kvgen_rows, _oracle_rows, load_corpus, verdict

BUDGET = 40 << 30  # bytes per rank: any budget that holds a request of the context planned


def _imported(name: str, config: dict, dtype: str | None):
    from kvgen._importhf import import_config
    from kvgen._spec.loader import load_bytes

    text = json.dumps(config)
    result = import_config(f"{name}/config.json", text, kv_cache_dtype=dtype)
    if result.text is None and "--max-seq-len" in (result.diagnostics[0].fix or ""):
        result = import_config(
            f"{name}/config.json", text, kv_cache_dtype=dtype, max_seq_len=CONTEXT
        )
    if result.text is None:
        return None, None
    return result.text, load_bytes("<corpus>", result.text.encode()).family


def _capacity(module, model: str, engine) -> object:
    """engine_capacity at the model's context (capped), or the refusal's words."""
    context = min(int(module.MAX_SEQ_LEN[model]), 32768)
    try:
        return module.engine_capacity(
            model, BUDGET, engine=engine.engine.label, max_seq_len=context, max_num_tokens=8192
        )._asdict()
    except ValueError as exc:
        return f"refused: {exc}"


def float32_verdict(entry: dict) -> tuple[str, str]:
    """("match", detail) or ("wrong", why) for an entry the replay matches, imported as a
    float32 checkpoint."""
    from kvgen._engines.dtype import model_dtype, serve
    from kvgen._generate.sizing_context import bound_module
    from kvgen.sizing.engines_registry import release

    name = entry["model_type"]
    config = {**json.loads(entry["config"]), "torch_dtype": "float32"}
    text, family = _imported(name, config, None)
    if text is None or family is None:
        return "wrong", "refused as a float32 checkpoint"
    if family.kv_cache_dtype != "fp32":
        return "wrong", f"imported as {family.kv_cache_dtype}"
    if _kvgen_rows(text) != _oracle_rows(entry):
        return "wrong", "rows differ from transformers' fp32 cache"
    _, bf16 = _imported(name, {**config, "torch_dtype": "bfloat16"}, None)
    model = family.models[0].name
    served32, served16 = bound_module(family), bound_module(bf16)
    for engine in ("vllm", "sglang"):
        rel = release(engine)
        module, served = serve(served32, model, rel)
        if model_dtype(module, model) != rel.float32_served_as:
            return "wrong", f"{engine} plans {model_dtype(module, model)}"
        if _capacity(module, model, rel) != _capacity(served16, model, rel):
            return "wrong", f"{engine}: the float32 import plans unlike the bfloat16 one"
    module, served = serve(served32, model, release("trtllm"))
    if module is not served32 or served is not None:
        return "wrong", "trtllm: the fp32 plan changed"
    return "match", ""


def float32_verdicts(corpus: dict | None = None) -> dict[str, tuple[str, str]]:
    """Per model type the replay matches (with --kv-cache-dtype fp32), its float32 verdict."""
    corpus = corpus or load_corpus()
    return {
        entry["model_type"]: float32_verdict(entry)
        for entry in corpus["entries"]
        if "oracle_error" not in entry and verdict(entry).verdict == "match"
    }
