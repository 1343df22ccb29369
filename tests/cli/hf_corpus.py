"""kvgen's side of the transformers corpus (``bench/hf_corpus.py`` built the other side).

Every entry of ``tests/fixtures/hf/corpus/transformers-*.json`` holds a config.json that
transformers' own config class wrote (shrunk to a few layers) and the cache its tiny model
allocated on CPU: per layer the K and V elements per token, or the recurrent state's bytes.
``verdict`` imports the config with kvgen and compares, layer by layer:

- ``match``: every cached layer holds the bytes per token (and state bytes) transformers
  allocated, in the same order;
- ``wrong``: kvgen imported it but some layer differs (must never happen);
- ``no-oracle``: kvgen imported a cache the replay does not compare (cross-attention layers,
  whose cache holds encoder tokens rather than per-token K/V);
- ``refused``: kvgen refused it, with the diagnostic's code and message;
- ``oracle-error``: the oracle could not measure the default config: transformers' own error
  building or running it, a run over the oracle's CPU memory or time limit, or a model that
  returns no cache as ``past_key_values`` / ``cache_params`` (RWKV's ``state``, XLNet's
  ``mems``, GPT-1's none).

``python -m tests.cli.hf_corpus`` rewrites docs/import-hf-coverage.md from the fixture.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvgen._spec.models import LayerKind

ROOT = Path(__file__).resolve().parents[2]
CORPUS_DIR = ROOT / "tests" / "fixtures" / "hf" / "corpus"
COVERAGE_DOC = ROOT / "docs" / "import-hf-coverage.md"
_ELEMENT = {"float32": 4, "bfloat16": 2, "float16": 2}
CONTEXT = 4096  # --max-seq-len for a model whose config has no context length
_SHORT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


@dataclass(frozen=True)
class Verdict:
    model_type: str
    verdict: str  # match | wrong | no-oracle | refused | oracle-error
    detail: str = ""


def corpus_file() -> Path:
    return sorted(CORPUS_DIR.glob("transformers-*.json"))[-1]


def load_corpus(path: Path | None = None) -> dict:
    return json.loads((path or corpus_file()).read_text())


Row = tuple[str, int]


def _oracle_rows(entry: dict) -> list[Row]:
    """Per cached layer: ('kv', K+V bytes per token; an MLA layer's latent and RoPE key, which
    transformers 5 caches as its keys and values), ('index', a sparse-attention indexer's key
    elements per token) and/or ('state', bytes)."""
    rows: list[Row] = []
    for layer in entry["layers"]:
        if "k_per_token" in layer:
            element = _ELEMENT[layer["dtype"]]
            rows.append(("kv", (layer["k_per_token"] + layer["v_per_token"]) * element))
        if "index_per_token" in layer:
            rows.append(("index", layer["index_per_token"]))
        if "state_bytes" in layer:
            rows.append(("state", layer["state_bytes"]))
    return rows


def _oracle_windows(entry: dict, context: int) -> list[int | None]:
    """Per attention layer: the window (or chunk) transformers' cache evicts at; None where
    it keeps every token, or its window reaches the whole context (full attention, §1)."""
    windows = [layer.get("window") for layer in entry["layers"] if "k_per_token" in layer]
    return [w if w is not None and w < context else None for w in windows]


def _kvgen_windows(spec_text: str) -> list[int | None]:
    from kvgen._spec.loader import load_bytes

    model = load_bytes("<corpus>", spec_text.encode()).family.models[0]  # type: ignore[union-attr]
    pattern = model.layers.pattern
    out: list[int | None] = []
    for index in range(model.layers.count):
        kind = model.layer_kinds[pattern[index % len(pattern)]]
        if kind.attention in ("full", "sliding", "chunked") and kind.reads is None:
            out.append({"sliding": kind.window, "chunked": kind.chunk}.get(kind.attention))
    return out


def _context(spec_text: str) -> int:
    from kvgen._spec.loader import load_bytes

    return load_bytes("<corpus>", spec_text.encode()).family.models[0].max_seq_len  # type: ignore[union-attr]


def _kvgen_rows(spec_text: str) -> list[Row] | None:
    """The same rows from an imported spec; None when a layer has no transformers form."""
    from kvgen._model.quant import element_bytes
    from kvgen._spec.loader import load_bytes

    family = load_bytes("<corpus>", spec_text.encode()).family
    assert family is not None
    model = family.models[0]
    rows: list[tuple[str, int]] = []
    pattern = model.layers.pattern
    for index in range(model.layers.count):
        kind = model.layer_kinds[pattern[index % len(pattern)]]
        dtype = kind.dtype or model.kv_cache_dtype or family.kv_cache_dtype
        if kind.attention == "none" or kind.reads is not None:
            continue
        if kind.attention == "cross":
            return None
        if kind.kv_lora_rank is not None:  # the latent and the shared RoPE key, one copy
            rope = kind.qk_rope_head_dim or 0
            rows.append(("kv", element_bytes(dtype, kind.kv_lora_rank + rope)))
            if kind.index_head_dim is not None:
                # elements only: kvgen's indexer cache is the engines' fp8 with scales,
                # transformers' the model dtype
                rows.append(("index", kind.index_head_dim))
            continue
        if kind.attention == "recurrent":
            if kind.state_bytes is not None:
                rows.append(("state", kind.state_bytes))
                continue
            rows.append(("state", _transformers_state(kind, dtype)))
            continue
        value_dim = kind.v_head_dim or kind.head_dim  # V's own head size (MiMo-V2: 128 vs 192)
        rows.append(
            (
                "kv",
                element_bytes(dtype, kind.kv_heads * kind.head_dim)
                + element_bytes(dtype, kind.kv_heads * value_dim),
            )
        )
        if kind.parallel_state:  # Falcon-H1: the layer's Mamba-2 state beside its K/V
            rows.append(("state", _transformers_state(kind, dtype)))
    return rows


def _transformers_state(kind: LayerKind, dtype: str) -> int:
    """A recurrent state's bytes in transformers' layout: the whole kernel window (d_conv
    columns) where vLLM and SGLang keep d_conv - 1, and the SSM state."""
    from kvgen._model.recurrent import recurrent_state

    state = kind.recurrent_dims
    assert state is not None
    buffers = recurrent_state(state, dtype, 1)
    if state.d_conv == 1:  # linear attention (MiniMaxCache.linear_cache): the matrices alone
        return buffers.ssm
    return buffers.conv // (state.d_conv - 1) * state.d_conv + buffers.ssm


def verdict(entry: dict) -> Verdict:
    from kvgen._importhf import import_config

    name = entry["model_type"]
    if "oracle_error" in entry:
        why = entry["oracle_error"].split("\n")[0][:100]
        if "config" in entry:
            ours = import_config(f"{name}/config.json", entry["config"], kv_cache_dtype="fp32")
            said = ours.diagnostics[0] if ours.diagnostics else None
            refused = f"refused {said.code}: {said.message}" if said else ""
            why += "; kvgen: " + (refused or "imports (not compared)")
        return Verdict(name, "oracle-error", why)
    config = json.loads(entry["config"])
    dtype = None
    if not (config.get("torch_dtype") or config.get("dtype")):
        measured = [x.get("dtype") for x in entry["layers"] if x.get("dtype")]
        dtype = _SHORT.get(measured[0] if measured else "float32", "fp32")
    flags = [f"--kv-cache-dtype {dtype}"] if dtype else []
    result = import_config(f"{name}/config.json", entry["config"], kv_cache_dtype=dtype)
    if result.text is None and "--max-seq-len" in (result.diagnostics[0].fix or ""):
        # what the diagnostic tells a user to do for a model without a context length
        flags.append(f"--max-seq-len {CONTEXT}")
        result = import_config(
            f"{name}/config.json", entry["config"], kv_cache_dtype=dtype, max_seq_len=CONTEXT
        )
    if result.text is None:
        first = result.diagnostics[0]
        where = f"{first.line}:{first.col}"
        return Verdict(name, "refused", f"{first.code} at {where}: {first.message}")
    ours = _kvgen_rows(result.text)
    if ours is None:
        return Verdict(name, "no-oracle", "cross-attention over encoder tokens: not compared")
    theirs = _oracle_rows(entry)
    context = _context(result.text)
    windows = _window_mismatch(_oracle_windows(entry, context), _kvgen_windows(result.text))
    if ours == theirs and windows is not None:
        wrong = windows[0]
        return Verdict(name, "wrong", f"attention layer {wrong[0]}: window {wrong[1]}")
    if ours == theirs:
        notes = getattr(result, "notes", [])  # (aa9b447 had no notes: same replay there)
        noted = f"{len(notes)} fields noted" if notes else ""
        kept = _kept_whole(_oracle_windows(entry, context), _kvgen_windows(result.text))
        words = [f"{len(entry['layers'])} cached layers", *flags, noted, kept]
        return Verdict(name, "match", " ".join(w for w in words if w))
    first = next(
        (i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
        min(len(ours), len(theirs)),
    )
    return Verdict(
        name,
        "wrong",
        f"cached layer {first}: kvgen {ours[first : first + 1]} vs transformers "
        f"{theirs[first : first + 1]} ({len(ours)} vs {len(theirs)} rows)",
    )


def _window_mismatch(
    theirs: list[int | None], ours: list[int | None]
) -> list[tuple[int, str]] | None:
    """Attention layers where transformers evicts at a window kvgen does not have (one-sided:
    a layer kvgen slides that transformers keeps whole is ``_kept_whole``)."""
    wrong = [
        (i, f"transformers {t} vs kvgen {o}")
        for i, (t, o) in enumerate(zip(theirs, ours, strict=False))
        if t is not None and t != o
    ]
    return wrong or None


def _kept_whole(theirs: list[int | None], ours: list[int | None]) -> str:
    """GPT-Neo's local layers: a window in the model's attention that transformers' cache
    does not evict at (it keeps every token, masking the old ones)."""
    kept = sum(1 for t, o in zip(theirs, ours, strict=False) if t is None and o is not None)
    return f"({kept} sliding layers transformers caches whole)" if kept else ""


def verdicts(corpus: dict | None = None) -> list[Verdict]:
    corpus = corpus or load_corpus()
    return [verdict(entry) for entry in corpus["entries"]]


def counts(found: list[Verdict]) -> dict[str, int]:
    out = {name: 0 for name in ("match", "no-oracle", "wrong", "refused", "oracle-error")}
    for item in found:
        out[item.verdict] += 1
    return out


def render_table(corpus: dict | None = None) -> str:
    corpus = corpus or load_corpus()
    found = verdicts(corpus)
    tally = counts(found)
    provenance = corpus["provenance"]
    lines = [
        "# import-hf coverage: every causal-LM architecture of transformers",
        "",
        "<!-- generated by `python -m tests.cli.hf_corpus`; checked by "
        "tests/cli/test_import_hf_corpus.py: do not edit by hand -->",
        "",
        f"Built by `bench/hf_corpus.py` from transformers {provenance['transformers']} (torch "
        f"{provenance['torch']}): each model type's default config from its config class, shrunk "
        "to a few layers, run on CPU with `use_cache=True`, the cache it allocates measured per "
        "layer, then the same config.json fed to `kvgen import-hf`.",
        "",
        f"Counts: {len(found)} model types; {tally['match']} import and match transformers' "
        f"cache, {tally['no-oracle']} import a cross-attention cache the replay does not "
        f"compare, {tally['wrong']} import wrong, {tally['refused']} refused, "
        f"{tally['oracle-error']} the oracle could not measure (each row says why: "
        "transformers' own error on the default config, a run over the oracle's CPU limits, "
        "or no cache object returned where the oracle reads one).",
        "",
        "A match compares, layer by layer, the bytes per token (an MLA layer's latent and RoPE "
        "key, as transformers 5 caches them), a sparse indexer's key elements, a recurrent "
        "state's bytes, and every window transformers' cache evicts at.",
        "",
        "| model_type | kvgen | detail |",
        "|---|---|---|",
    ]
    for item in found:
        lines.append(f"| {item.model_type} | {item.verdict} | {_cell(item.detail)} |")
    return "\n".join([*lines, "", *reviewed_table()]) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def reviewed_table() -> list[str]:
    """The fields KV302 would block by name, reviewed as not moving a cache (with why)."""
    from kvgen._importhf._fields import REVIEWED_FIELDS

    lines = [
        "## Fields reviewed as not moving a cache",
        "",
        "Their names hold a word KV302 blocks on (`kvgen explain KV302`); each was read in the "
        "modelling code of the model types named, and imports without `--ignore-field`.",
        "",
        "| field | model types | why it cannot change a cache's shape, count, window, dtype "
        "or state |",
        "|---|---|---|",
    ]
    for name, (models, why) in sorted(REVIEWED_FIELDS.items()):
        where = ", ".join(sorted(models)) if models is not None else "any"
        lines.append(f"| `{name}` | {where} | {_cell(why)} |")
    return lines


if __name__ == "__main__":
    COVERAGE_DOC.write_text(render_table())
    print(f"wrote {COVERAGE_DOC}", file=sys.stderr)
