"""Print the table of shipped families (markdown) of docs/families.md, computed from the specs.

    python bench/families_table.py           # print the table
    python bench/families_table.py --write   # replace the families region of docs/families.md
    python bench/families_table.py --check   # exit 1 when that region is stale

Per model: KV bytes per token at bf16 (tp=1, every layer, full and sliding alike), and the
fixed cost per request at tokens_per_block 64 with no speculation (H=1): the sum over
window-bounded sliding layers of b_l * 64 * pages(w_l, 1), plus recurrent state
(docs/cost-model.md §1, §3). The numbers come straight from the spec data, not from the cost model.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvgen._model.recurrent import recurrent_state  # noqa: E402
from kvgen._spec.loader import load_family  # noqa: E402
from kvgen._spec.models import Family, LayerKind, Model  # noqa: E402

FAMILIES_DIR = ROOT / "schema" / "families"
DOCUMENT = ROOT / "docs" / "families.md"
BEGIN, END = "<!-- families:begin -->", "<!-- families:end -->"
TABLE_TPB = 64
BF16_BYTES = 2


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def layer_kinds(model: Model) -> list[LayerKind]:
    pattern = model.layers.pattern
    return [model.layer_kinds[pattern[i % len(pattern)]] for i in range(model.layers.count)]


def bytes_per_token(kind: LayerKind) -> int:
    """b_l at bf16 and tp=1 (docs/cost-model.md §1); recurrent and cache-less (``attention: none``)
    layers, cross-attention layers (the encoder's K/V, fixed per request) and KV-sharing
    readers (``reads:``) have no per-token cost."""
    if kind.attention in ("none", "recurrent", "cross") or kind.reads is not None:
        return 0  # no cache of its own, a fixed state, or the encoder's K/V
    if kind.bytes_per_token is not None:
        return kind.bytes_per_token + kind.extra_bytes_per_token
    if kind.kv_lora_rank is not None:
        rank = kind.kv_lora_rank + (kind.qk_rope_head_dim or 0)
        # A sparse-attention index-K cache is fp8 + an fp32 scale per 128 whatever the dtype.
        index = kind.index_head_dim or 0
        index += 4 * ceil_div(index, 128)
        return rank * BF16_BYTES + index + kind.extra_bytes_per_token
    head_dim = kind.head_dim
    assert kind.kv_heads is not None and head_dim is not None
    value_dim = kind.v_head_dim or head_dim  # V's own head size where the spec gives one
    return kind.kv_heads * (head_dim + value_dim) * BF16_BYTES + kind.extra_bytes_per_token


def recurrent_bytes(kind: LayerKind) -> int:
    """One request's recurrent state at bf16 and tp=1 (docs/cost-model.md §8): the raw
    ``state_bytes``, or the conv and SSM buffers of a ``mamba:`` / ``mamba1:`` kind."""
    dims = kind.recurrent_dims
    if dims is None:
        return kind.state_bytes or 0
    state = recurrent_state(dims, kind.dtype or "bf16", 1)
    return state.conv + state.ssm


def swa_pages(window: int, headroom: int, tpb: int) -> int:
    """ceil((w + H - 2) / tpb) + 1: the peak live pages of one SWA layer (docs/cost-model.md §3)."""
    return ceil_div(window + headroom - 2, tpb) + 1


def fixed_per_request(model: Model, tpb: int = TABLE_TPB, headroom: int = 1) -> int:
    total = 0
    for kind in layer_kinds(model):
        if kind.reads is not None:
            continue  # reads another layer's pages (KV sharing): none of its own
        if kind.attention == "cross":
            # The encoder's K/V in whole pages (docs/cost-model.md §4).
            b = 2 * (kind.kv_heads or 0) * (kind.head_dim or 0) * BF16_BYTES
            total += b * tpb * ceil_div(kind.encoder_tokens or 0, tpb)
        elif kind.attention == "recurrent" or kind.parallel_state:
            total += recurrent_bytes(kind)  # a parallel hybrid layer: its state (Falcon-H1)
        elif kind.attention == "sliding" and kind.window and kind.window < model.max_seq_len:
            page_count = swa_pages(kind.window, headroom, tpb) + ceil_div(kind.sink_tokens, tpb)
            total += bytes_per_token(kind) * tpb * page_count
        elif kind.attention == "chunked" and kind.chunk and kind.chunk < model.max_seq_len:
            # pages(C, H) = ceil((C + H - 1 + tpb - gcd(C, tpb)) / tpb) (docs/cost-model.md §3)
            page_count = ceil_div(kind.chunk + headroom - 1 + tpb - math.gcd(kind.chunk, tpb), tpb)
            total += bytes_per_token(kind) * tpb * page_count
    return total


def _mib(value: int) -> str:
    return f"{value / (1 << 20):,.2f}"


def families() -> list[Family]:
    return [load_family(path) for path in sorted(FAMILIES_DIR.glob("*.yaml"))]


def table() -> str:
    lines = [
        f"KV bytes per token at bf16 (tp=1, all layers) and the fixed cost per request at "
        f"tokens_per_block {TABLE_TPB} (sliding-window and chunked-attention pages at H=1, "
        "recurrent state, cross-attention encoder pages).",
        'Profiles on a family\'s first row apply to every model; "this model only" marks a '
        "per-model profile (`models:`).",
        "Regenerate with `python bench/families_table.py --write`.",
        "",
        "| family | model | max_seq_len | KV B/token | fixed B/request | fixed MiB | profiles |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for family in families():
        for i, model in enumerate(family.models):
            # Family-wide profiles on the family's first row, per-model ones on their model's.
            profiles = ", ".join(
                f"`{p.name}` ({p.mode}{'' if p.models is None else '; this model only'})"
                for p in family.speculative
                if (p.models is None and i == 0)
                or (p.models is not None and p.applies_to(model.name))
            )
            per_token = sum(bytes_per_token(kind) for kind in layer_kinds(model))
            fixed = fixed_per_request(model)
            lines.append(
                f"| {family.family if i == 0 else ''} | `{model.name}` | {model.max_seq_len:,} "
                f"| {per_token:,} | {fixed:,} | {_mib(fixed)} | {profiles} |"
            )
    return "\n".join(lines) + "\n"


def replace_region(document: str, body: str) -> str:
    start, end = document.index(BEGIN) + len(BEGIN), document.index(END)
    return document[:start] + "\n" + body + document[end:]


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="replace the docs/families.md region")
    group.add_argument("--check", action="store_true", help="exit 1 if docs/families.md is stale")
    args = parser.parse_args(argv)
    body = table()
    if not (args.write or args.check):
        sys.stdout.write(body)
        return 0
    document = DOCUMENT.read_text(encoding="utf-8")
    if BEGIN not in document or END not in document:
        print(f"docs/families.md has no {BEGIN} ... {END} region", file=sys.stderr)
        return 2
    updated = replace_region(document, body)
    if args.check:
        if updated != document:
            print("docs/families.md is stale: run python bench/families_table.py --write")
            return 1
        return 0
    if updated != document:
        _write_atomic(DOCUMENT, updated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
