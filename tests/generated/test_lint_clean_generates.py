"""Issue 18 items 6 and 7: lint runs every check generate runs, so a lint-clean spec always
generates, and its generated sizing functions and shim import and answer.

The reproducers below passed lint on 54a882f and then broke generation (an internal KeyError
in the engine rows) or the generated allocator (a ValueError at import, while the sizing
module charged the reader 0 B/token); lint now refuses each with the code named. The property
test runs the same check over structural mutants of every seed spec
(``bench/fuzz_features.py``): lint clean => generate succeeds and everything generated answers.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kvgen._lint.linter import lint_loaded
from kvgen._spec.loader import load_bytes

ROOT = Path(__file__).resolve().parents[2]
FUZZ = ROOT / "bench" / "fuzz_features.py"


def _harness():
    module = sys.modules.get("kvgen_bench_fuzz_features")
    if module is None:
        spec = importlib.util.spec_from_file_location("kvgen_bench_fuzz_features", FUZZ)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return module


def _spec(kinds: str, pattern: str, dtype: str = "bf16", count: int = 4) -> str:
    return (
        "schema_version: 1\nfamily: tiny\ntokens_per_block: 64\n"
        f"kv_cache_dtype: {dtype}\nmodels:\n  - name: tiny\n    max_seq_len: 8192\n"
        f"    layer_kinds:\n{kinds}    layers: {{count: {count}, pattern: [{pattern}]}}\n"
    )


FULL = "      g: {attention: full, kv_heads: 8, head_dim: 128, dtype: bf16}\n"
MAMBA2 = (
    "      m: {attention: recurrent,"
    " mamba: {num_heads: 64, head_dim: 64, d_state: 128, n_groups: 8, d_conv: 4}}\n"
)
MAMBA1 = "      m: {attention: recurrent, mamba1: {d_inner: 8192, d_state: 16, d_conv: 4}}\n"
HEADS = "kv_heads: 2, head_dim: 256"
REPRODUCERS = {
    # item 6: a scaled cache dtype reaches a recurrent state given by its dimensions
    "nvfp4 on mamba": (_spec(FULL + MAMBA2, "m, g", "nvfp4"), "KV239"),
    "nvfp4 on mamba1": (_spec(FULL + MAMBA1, "m, g", "nvfp4"), "KV239"),
    "mxfp8 on mamba1": (_spec(FULL + MAMBA1, "m, g", "mxfp8"), "KV239"),
    "fp8_per_token_head on mamba1": (_spec(FULL + MAMBA1, "m, g", "fp8_per_token_head"), "KV239"),
    # item 7: the owner of a reads: is chunked or cross, or the reader is past count
    "reads a chunked layer": (
        _spec(
            f"      c: {{attention: chunked, chunk: 1024, {HEADS}}}\n"
            f"      r: {{attention: full, {HEADS}, reads: 0}}\n",
            "c, r",
        ),
        "KV235",
    ),
    "reads a cross layer": (
        _spec(
            f"      x: {{attention: cross, encoder_tokens: 1601, {HEADS}}}\n"
            f"      r: {{attention: full, {HEADS}, reads: 0}}\n",
            "x, r",
        ),
        "KV235",
    ),
    "a reader past count": (
        _spec(
            f"      s: {{attention: sliding, window: 512, {HEADS}}}\n"
            f"      r: {{attention: sliding, window: 1024, {HEADS}, reads: 0}}\n",
            "s, s, r",
            count=2,
        ),
        "KV236",
    ),
}


def _check(name: str, text: bytes) -> list[tuple[str, str]]:
    harness = _harness()
    stats = harness.Stats()
    harness.check_one(name, text, stats, random.Random(0))
    return [(f.kind, f.detail[-400:]) for f in stats.findings]


@pytest.mark.parametrize("case", sorted(REPRODUCERS))
def test_a_spec_that_generation_refuses_does_not_lint_clean(case):
    text, code = REPRODUCERS[case]
    loaded = load_bytes(f"{case}.yaml", text.encode())
    assert loaded.family is not None, loaded.diagnostics
    errors = [d.code for d in lint_loaded(loaded) if d.severity == "error"]
    assert code in errors


@pytest.mark.parametrize("case", sorted(REPRODUCERS))
def test_the_reproducers_hold_the_property(case):
    # Lint clean => generate succeeds and everything generated answers; here lint refuses.
    assert _check(f"{case}.yaml", REPRODUCERS[case][0].encode()) == []


@settings(max_examples=40)
@given(st.integers(min_value=0, max_value=2**32))
def test_lint_clean_mutants_generate_and_answer(seed):
    name, data = _harness().mutant(random.Random(seed))
    assert _check(name, data) == []


def test_a_chunked_mla_kind_generates_and_the_engines_decline_it():
    # Found by the feature fuzzer after chunked attention became an engine row: a chunked kind
    # given as an MLA latent (kv_lora_rank + qk_rope_head_dim, no heads) lints clean, and the
    # engine rows must decline it (NotModelled, "sliding_mla") rather than fail generation
    # looking for a head_dim.
    text = _spec(
        FULL
        + "      c: {attention: chunked, chunk: 1024, kv_lora_rank: 512, qk_rope_head_dim: 64}\n",
        "c, g",
    )
    loaded = load_bytes("chunked_mla.yaml", text.encode())
    assert loaded.family is not None, loaded.diagnostics
    assert not [d for d in lint_loaded(loaded) if d.severity == "error"]
    assert _check("chunked_mla.yaml", text.encode()) == []


@pytest.mark.parametrize(
    ("edit", "drop_heads"),
    [("extra_bytes_per_token: 64", False), ("bytes_per_token: 4096", True)],
    ids=["extra-bytes", "bytes-per-token"],
)
def test_a_vision_cross_layer_with_a_byte_shape_generates_and_the_engines_decline_it(
    edit, drop_heads
):
    # Issue 29 C4: the shipped llama3_2_vision spec with a byte shape on its cross layer lints
    # clean, and generate failed (internal error NotModelled: SGLang's encoder-decoder rows
    # met the synthetic shape). Generation now models it: SGLang's rows decline the model
    # with the synthetic-shape reason, as every engine does for a byte shape.
    shipped = (ROOT / "schema" / "families" / "llama3_2_vision.yaml").read_text(encoding="utf-8")
    anchor = "        encoder_tokens: 6404"
    assert shipped.count(anchor) == 1
    lines = shipped.replace(anchor, f"        {edit}\n{anchor}").splitlines(keepends=True)
    if drop_heads:  # bytes_per_token replaces the cross kind's heads
        start = lines.index("      cross_attn:\n")
        lines = lines[: start + 2] + [
            line for line in lines[start + 2 : start + 6] if "kv_heads" not in line
            and "head_dim" not in line
        ] + lines[start + 6 :]  # fmt: skip
    text = "".join(lines).encode()
    loaded = load_bytes("llama3_2_vision.yaml", text)
    assert loaded.family is not None, loaded.diagnostics
    assert not [d for d in lint_loaded(loaded) if d.severity == "error"]
    assert _check("llama3_2_vision.yaml", text) == []
    from kvgen._model.engine_rows import engine_model

    (model,) = [m for m in loaded.family.models if m.name == "llama3_2_11b_vision"]
    assert engine_model(loaded.family, model).sglang_unmodelled == "synthetic"
