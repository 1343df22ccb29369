"""Build the import-hf corpus from Hugging Face transformers itself (the oracle side).

For every causal-LM model type transformers knows (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES), build
the config class's default config, shrink it (few layers, a small vocabulary and MLP, the
attention and state shapes kept as the class sets them; a composite model's text and vision
configs alike; a Bamba or Granite-4 default without any attention layer, which their models
cannot run, given one at layer 1), run the tiny model on CPU with
``use_cache=True`` on a few tokens and measure the cache it allocates per layer: the K and V
elements per token of each attention layer (an MLA layer's latent and RoPE key), a sparse
indexer's key elements per token, and the bytes of each recurrent state. The saved
config (what ``save_pretrained`` writes) and the measurement go to
``tests/fixtures/hf/corpus/transformers-<version>.json``; ``tests/cli/test_import_hf_corpus.py``
replays kvgen's side of it without transformers installed.

Run with a Python that has transformers and torch (never kvgen's own venv: neither is a
dependency of kvgen), e.g. ``/work/engine_venvs/venv-vllm/bin/python bench/hf_corpus.py``.
``--only gpt2,falcon`` limits the run to some model types; ``--redo TYPES`` runs some again
into the ``.partial.jsonl`` of an earlier run; ``--attribute-maps FILE`` writes the config
classes' attribute maps (tests/cli/test_import_hf_reviewed.py reads them).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

TOKENS = 6  # tokens run through each tiny model
SECONDS = 120  # per model type: a default config too large for a CPU run is an oracle error
MEMORY = 16 << 30  # address space per model type (torch reserves much more than it uses)
MAX_LAYERS = 12  # a shrunk model keeps the shortest prefix of its layers that has every type
_LAYER_COUNTS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "decoder_layers")


_SUB_CONFIGS = ("text_config", "vision_config", "audio_config", "speech_config")


def _shrink(cls, config):  # -> a config of the same class
    data = _shrink_dict(config.to_dict())
    for key in _SUB_CONFIGS:  # a composite model: its language and vision towers too
        if isinstance(data.get(key), dict):
            data[key] = _shrink_dict(data[key])
            data[key].pop("transformers_version", None)
    return cls.from_dict(data)


def _shrink_dict(data: dict) -> dict:
    layers_key = next((k for k in _LAYER_COUNTS if isinstance(data.get(k), int)), None)
    layers = data.get(layers_key) if layers_key else None
    keep = min(layers or 2, 4)
    per_layer = [k for k, v in data.items() if isinstance(v, list) and layers and len(v) == layers]
    for key in per_layer:  # the shortest prefix holding every layer type the model has
        value = [str(v) for v in data[key]]
        keep = max(keep, next(i for i in range(1, layers + 1) if set(value[:i]) == set(value)))
    indices = [
        k
        for k, v in data.items()
        if (k.endswith("_indices") or k == "cross_attention_layers") and isinstance(v, list) and v
    ]
    for key in indices:  # e.g. Bamba attn_layer_indices: keep the first such layer
        keep = max(keep, min(data[key]) + 1)
    pattern = data.get("hybrid_override_pattern")
    if isinstance(pattern, str) and layers and len(pattern) == layers:
        keep = max(keep, next(i for i in range(1, layers + 1) if set(pattern[:i]) == set(pattern)))
    for key in ("attn_layer_period", "full_attention_interval", "sliding_window_pattern"):
        if isinstance(data.get(key), int):
            keep = max(keep, data[key] + (data.get("attn_layer_offset") or 0))
    keep = min(keep, MAX_LAYERS, layers or keep)
    if layers_key:
        data[layers_key] = keep
    if isinstance(data.get("num_layers_per_stack"), int):  # HRM: one layer per looped stack
        data["num_layers_per_stack"] = 1
        data[layers_key] = data.get("H_cycles", 2) * (data.get("L_cycles", 3) + 1)
    for key in per_layer:
        data[key] = data[key][:keep]
    for key in indices:
        data[key] = [i for i in data[key] if isinstance(i, int) and i < keep]
    if isinstance(pattern, str) and layers and len(pattern) == layers:
        data["hybrid_override_pattern"] = pattern[:keep]
    overrides = data.get("per_layer_config")
    if isinstance(overrides, dict):  # Gemma 4: per-layer overrides keyed by layer index
        data["per_layer_config"] = {
            k: v for k, v in overrides.items() if not str(k).isdigit() or int(k) < keep
        }
    for key in ("num_kv_shared_layers",):
        if isinstance(data.get(key), int) and data[key]:
            data[key] = min(data[key], keep // 2)
    for key, value in list(data.items()):
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        if key.endswith(("intermediate_size", "ffn_hidden_size")) or key == "n_inner":
            data[key] = 64
        elif key in ("num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts"):
            data[key] = min(value, 4)
        elif key in ("num_experts_per_tok", "moe_topk", "top_k", "moe_k", "num_experts_per_token"):
            data[key] = min(value, 2)
        elif key in ("n_group", "topk_group", "num_expert_group"):  # 4 experts: one group
            data[key] = 1
    # MoE defaults left unset (DeepSeek-V2, dots1), which their routers cannot run: a few
    # experts, two per token
    if "n_routed_experts" in data and data.get("n_routed_experts") is None:
        data["n_routed_experts"] = 4
    if "n_shared_experts" in data and data.get("n_shared_experts") is None:
        data["n_shared_experts"] = 1
    if "num_experts_per_tok" in data and data.get("num_experts_per_tok") is None:
        data["num_experts_per_tok"] = 2
    for key in ("n_group", "topk_group"):
        if key in data and data[key] is None:
            data[key] = 1
    if isinstance(data.get("vocab_size"), int):
        data["vocab_size"] = 512
        for key in ("pad_token_id", "bos_token_id", "eos_token_id"):
            if isinstance(data.get(key), int) and data[key] >= 512:
                data[key] = 1
    # Hybrids whose class default has no attention layer at all, which their model cannot
    # run (get_seq_length needs one): layer 1 made attention, as published checkpoints have
    if data.get("model_type") == "bamba" and not data.get("attn_layer_indices"):
        data["attn_layer_indices"] = [1]
    types = data.get("layer_types")
    if (
        data.get("model_type") == "granitemoehybrid"
        and types
        and set(types) == {"linear_attention"}
    ):
        data["layer_types"] = [t if i != 1 else "attention" for i, t in enumerate(types)]
    if data.get("is_decoder") is False:  # BERT-style LM heads cache only as decoders
        data["is_decoder"] = True
    data.pop("transformers_version", None)
    return data


def _dtype(config):
    import torch

    name = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    if isinstance(name, torch.dtype):
        return name
    return {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(str(name), torch.float32)


def _measure(cache) -> list[dict]:
    """Per cache layer: K/V elements per token (attention) or state bytes (recurrent)."""
    import torch

    layers = getattr(cache, "layers", None)
    if layers is None and isinstance(cache, (tuple, list)):
        layers = cache
    if layers is None and hasattr(cache, "self_attention_cache"):
        # BERT-style decoders return an EncoderDecoderCache whose cross half stays empty
        cross = getattr(cache.cross_attention_cache, "layers", None) or ()
        if any(getattr(layer, "keys", None) is not None and layer.keys.numel() for layer in cross):
            return [{"encoder_decoder": True}]
        layers = getattr(cache.self_attention_cache, "layers", None)
    out = []
    for layer in layers or ():
        row: dict = {"class": type(layer).__name__}
        if isinstance(layer, (tuple, list)) and len(layer) >= 2:
            keys, values = layer[0], layer[1]
        else:
            keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
        if isinstance(keys, torch.Tensor) and keys.numel() and keys.dim() >= 3:
            seq = keys.shape[-2]
            row["k_per_token"] = keys[0].numel() // seq
            row["v_per_token"] = values[0].numel() // values.shape[-2]
            row["dtype"] = str(keys.dtype).removeprefix("torch.")
            row["cached_tokens"] = seq
            window = getattr(layer, "sliding_window", None)
            if window:
                row["window"] = int(window)
        # a sparse-attention indexer's key cache: [batch, seq, dim] (DynamicIndexedLayer),
        # [batch, 1, seq, dim] (MiniMax-M3's idx_keys)
        for name, seq_dim in (("indexer_keys", 1), ("idx_keys", -2)):
            index = getattr(layer, name, None)
            if isinstance(index, torch.Tensor) and index.numel():
                row["index_per_token"] = index[0].numel() // index.shape[seq_dim]
        states = 0
        for name in ("conv_states", "recurrent_states", "ssm_states"):
            found = getattr(layer, name, None)
            tensors = found.values() if isinstance(found, dict) else [found]
            for tensor in tensors:
                if isinstance(tensor, torch.Tensor) and tensor.numel():
                    states += tensor[0].numel() * tensor.element_size()
                    row.setdefault("state_dtypes", []).append(
                        str(tensor.dtype).removeprefix("torch.")
                    )
        if states:
            row["state_bytes"] = states
        out.append(row)
    # MiniMaxCache: a lightning-attention layer's state (batch, heads, head_dim, head_dim)
    # sits in linear_cache at its layer index, beside the attention layers' DynamicLayers.
    for index, state in enumerate(getattr(cache, "linear_cache", None) or ()):
        if isinstance(state, torch.Tensor) and state.numel():
            while len(out) <= index:
                out.append({"class": "linear_cache"})
            out[index] = {
                "class": "linear_cache",
                "state_bytes": state[0].numel() * state.element_size(),
                "state_dtypes": [str(state.dtype).removeprefix("torch.")],
            }
    return out


# Composite (image- or audio-text-to-text) model types whose text model import-hf reads from
# the full config.json (issue 32): run as AutoModelForImageTextToText on text tokens alone,
# the cache measured being the text model's. Their model types are not causal-LM types, so
# they join the corpus by name.
COMPOSITE_TYPES = (
    "blip",
    "glm5_next",
    "granite4_vision",
    "kosmos-2",
    "kosmos-2.5",
    "pi0",
    "qwen2_5_omni",
    "qwen2_5_omni_thinker",
    "qwen3_omni_moe",
    "qwen3_omni_moe_thinker",
)


def run_one(model_type: str, cls) -> dict:
    import torch
    import transformers

    composite = model_type in COMPOSITE_TYPES
    auto = "AutoModelForImageTextToText" if composite else "AutoModelForCausalLM"
    AutoModelForCausalLM = getattr(transformers, auto)

    entry: dict = {"model_type": model_type, "config_class": cls.__name__}
    try:
        config = _shrink(cls, cls())
    except Exception as exc:  # a config class that cannot be built by default
        entry["oracle_error"] = f"config: {type(exc).__name__}: {str(exc)[:200]}"
        return entry
    entry["config"] = config.to_json_string(use_diff=True)
    entry["is_encoder_decoder"] = bool(getattr(config, "is_encoder_decoder", False))
    try:
        torch.manual_seed(0)
        # Built on the meta device and given uninitialised CPU memory: the cache's shapes
        # and dtypes do not depend on the weights' values, and random init is most of a
        # tiny model's build time.
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config, dtype=_dtype(config))
        model = model.to_empty(device="cpu").eval()
        if hasattr(model, "set_default_language"):  # X-MOD: one adapter per language
            model.set_default_language(getattr(config, "default_language", None) or "en_XX")
        for name, buffer in model.named_buffers():
            if buffer.is_floating_point():
                buffer.fill_(1.0)
            elif name.endswith("position_ids"):  # an arange the meta build did not keep
                buffer.copy_(torch.arange(buffer.shape[-1]).expand_as(buffer))
            else:  # token_type_ids and the like: uninitialised memory indexes out of range
                buffer.zero_()
        ids = torch.randint(3, 500, (1, TOKENS))
        with torch.no_grad():
            try:
                result = model(input_ids=ids, use_cache=True)
            except (TypeError, ValueError):
                # a composite that wants pixels even for text (Kosmos-2): its text model alone
                text = getattr(model, "text_model", None)
                if model_type not in COMPOSITE_TYPES or text is None:
                    raise
                entry["ran"] = f"{type(text).__name__} (the composite's text_model)"
                result = text(input_ids=ids, use_cache=True)
        cache = getattr(result, "past_key_values", None)
        if cache is None:
            cache = getattr(result, "cache_params", None)
        if cache is None:
            entry["oracle_error"] = "the model returned no cache"
            return entry
        entry["cache_class"] = type(cache).__name__
        entry["layers"] = _measure(cache)
    except Exception as exc:
        entry["oracle_error"] = f"run: {type(exc).__name__}: {str(exc)[:200]}"
        entry["trace"] = traceback.format_exc(limit=2)[-400:]
    return entry


def _child(model_type: str, cls, pipe) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    try:
        entry = run_one(model_type, cls)
    except BaseException as exc:  # MemoryError and the like: still a verdict
        entry = {"model_type": model_type, "oracle_error": f"run: {type(exc).__name__}"}
    pipe.send(entry)
    pipe.close()


def run_isolated(model_type: str, cls) -> dict:
    """One model type in a forked child, so a default config too large for this machine
    is an oracle error rather than the end of the run."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(model_type, cls, send))
    child.start()
    send.close()
    entry = None
    if receive.poll(SECONDS):
        try:
            entry = receive.recv()
        except EOFError:
            entry = None
    child.join(5)
    if child.is_alive():
        child.kill()
        child.join()
    if entry is None:
        why = "timed out" if child.exitcode in (None, -9) else f"exit {child.exitcode}"
        entry = {"model_type": model_type, "oracle_error": f"run: {why} (CPU/memory limit)"}
    return entry


def attribute_maps() -> dict[str, dict[str, str]]:
    """Per causal-LM model type: its config class's ``attribute_map`` (alias -> the field it
    sets), sub-configs' as ``sub_config.alias``; the spellings import-hf must read alike."""
    from transformers import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    out: dict[str, dict[str, str]] = {}
    for model_type in sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES):
        if model_type not in CONFIG_MAPPING:
            continue
        cls = CONFIG_MAPPING[model_type]
        found = dict(getattr(cls, "attribute_map", None) or {})
        for key, sub in (getattr(cls, "sub_configs", None) or {}).items():
            for alias, target in (getattr(sub, "attribute_map", None) or {}).items():
                found[f"{key}.{alias}"] = target
        if found:
            out[model_type] = dict(sorted(found.items()))
    return out


def main() -> int:
    import torch
    import transformers
    from transformers import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="comma-separated model types")
    parser.add_argument("--out", default=None)
    parser.add_argument("--middle", action="store_true", help="start half way down the list")
    parser.add_argument("--redo", help="comma-separated model types to run again")
    parser.add_argument("--reverse", action="store_true", help="work from the end of the list")
    parser.add_argument(
        "--attribute-maps", metavar="FILE", help="write the config classes' attribute maps"
    )
    args = parser.parse_args()
    if args.attribute_maps:
        provenance = {"transformers": transformers.__version__, "built_by": "bench/hf_corpus.py"}
        maps = {"provenance": provenance, "attribute_maps": attribute_maps()}
        Path(args.attribute_maps).write_text(json.dumps(maps, indent=1) + "\n")
        return 0
    torch.set_num_threads(1)
    types = sorted({*MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, *COMPOSITE_TYPES})
    every = list(types)
    if args.only:
        types = [t for t in types if t in args.only.split(",")]
    partial = Path(args.out or "hf_corpus.json").with_suffix(".partial.jsonl")
    done = {}
    if args.redo and partial.exists():  # run these model types again
        kept = [
            line
            for line in partial.read_text().splitlines()
            if json.loads(line)["model_type"] not in args.redo.split(",")
        ]
        partial.write_text("".join(f"{line}\n" for line in kept))
    if args.redo:
        types = [t for t in types if t in args.redo.split(",")]
    if partial.exists():  # resume an interrupted run
        for line in partial.read_text().splitlines():
            entry = json.loads(line)
            done[entry["model_type"]] = entry
    order = list(reversed(types)) if args.reverse else list(types)
    if args.middle:  # a third run sharing the work starts half way
        order = order[len(order) // 2 :] + order[: len(order) // 2]
    for model_type in order:
        start = time.monotonic()
        if partial.exists():  # a second run (--reverse) may share the work
            for line in partial.read_text().splitlines():
                entry = json.loads(line)
                done[entry["model_type"]] = entry
        if model_type in done:
            continue
        if model_type not in CONFIG_MAPPING:
            entry = {"model_type": model_type, "oracle_error": "no config class"}
        else:
            entry = run_isolated(model_type, CONFIG_MAPPING[model_type])
        with partial.open("a") as out:
            out.write(json.dumps(entry) + "\n")
        verdict = entry.get("oracle_error") or f"{len(entry.get('layers', []))} cache layers"
        print(f"{model_type}: {verdict} ({time.monotonic() - start:.1f}s)", file=sys.stderr)
    for line in partial.read_text().splitlines() if partial.exists() else ():
        entry = json.loads(line)
        done[entry["model_type"]] = entry
    wanted = every if not args.only else types
    entries = [done[t] for t in wanted if t in done]
    if len(entries) < len(wanted):
        print(f"{len(wanted) - len(entries)} model types left for the other run", file=sys.stderr)
        return 0
    out = Path(args.out or f"tests/fixtures/hf/corpus/transformers-{transformers.__version__}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    provenance = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "built_by": "bench/hf_corpus.py",
        "tokens": TOKENS,
    }
    out.write_text(json.dumps({"provenance": provenance, "entries": entries}, indent=1) + "\n")
    print(f"wrote {out}: {len(entries)} model types", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
