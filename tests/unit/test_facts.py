"""Each layout fact is defined once, in ``kvgen.sizing.facts``: a grep over the package source and
the templates for the literal tables finds them there and nowhere else (they were copied six
times: shapes, quant, sizing_kinds, engines_core, engines/_layers, importhf/_layers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kvgen._model import quant
from kvgen._spec import models as spec
from kvgen.sizing import facts, sizing_kinds

REPO = Path(__file__).resolve().parents[2]
FACTS = REPO / "generator" / "sizing" / "facts.py"
LITERALS = {
    "dtype widths": r'"fp32":\s*4\b|"bf16":\s*2\b',
    "scaled layouts": r'"(?:nvfp4|mxfp8|mxfp4|fp8_per_token_head|int8_per_token_head)":\s*[-(\d]',
    "float32 rounding": r'(?:pack|Struct)\(\s*"f"',
    "scale blocks": r"^\s*(?:NVFP4|MX|FP32_SCALE|DS_MLA_SCALE|INDEX_SCALE)_BLOCK\s*=",
    "two-model modes": r'"eagle3_two_model",\s*"mtp_eagle_two_model"',
    "DCP allow-list": r'"full",\s*"recurrent",\s*"none"',
    # kvgen's float dtype -> the model dtype's name (torch_dtype, --dtype), either way round
    "model dtype names": r'"(?:fp32|bf16|fp16)":\s*"(?:float32|bfloat16|float16)"'
    r'|"(?:float32|bfloat16|float16)":\s*\(?\s*"(?:fp32|bf16|fp16)"',
}
_FLOAT = r'"(?:fp32|bf16|fp16)"'
# Tables that were written inline where they were used and are now rows of a fact.
GONE = {
    "backoff by mode": r'\{"eagle3": 1',
    "dtype set": r'\{\s*"nvfp4",\s*"fp8_per_token_head"',
    # the float dtypes alone, in any order (engines_rows.SSM_DTYPES was one): tuple(MODEL_DTYPES)
    "float dtypes": rf"[(\[{{]\s*{_FLOAT},\s*{_FLOAT},\s*{_FLOAT},?\s*[)\]}}]",
}


def sources() -> list[Path]:
    files = sorted((REPO / "generator").rglob("*.py")) + sorted((REPO / "templates").glob("*"))
    return [path for path in files if "__pycache__" not in path.parts]


@pytest.mark.parametrize("fact", LITERALS)
def test_the_literal_table_is_written_only_in_kvgen_facts(fact):
    pattern = re.compile(LITERALS[fact], re.M)
    found = {
        path.relative_to(REPO).as_posix()
        for path in sources()
        if pattern.search(path.read_text(encoding="utf-8"))
    }
    assert found == {"generator/sizing/facts.py"}


def test_the_scaled_dtypes_are_the_layouts_and_the_mla_one():
    # Built from the layouts table (spec and import-hf read it there), never listed again.
    assert spec.SCALED_DTYPES is facts.SCALED_DTYPES
    assert {*facts.SCALED_LAYOUTS, "fp8_ds_mla"} == facts.SCALED_DTYPES


@pytest.mark.parametrize("table", GONE)
def test_the_inline_tables_are_gone(table):
    pattern = re.compile(GONE[table], re.M)
    assert [p.name for p in sources() if pattern.search(p.read_text(encoding="utf-8"))] == []


def test_every_side_reads_the_same_table():
    from kvgen._engines import _layers

    assert _layers.DTYPE_BYTES is facts.DTYPE_BYTES
    assert {name: tuple(layout) for name, layout in quant.LAYOUTS.items()} == facts.SCALED_LAYOUTS
    # The interpreter's element codes: the plain widths, and one scaled code per layout.
    codes = sizing_kinds._ELEMENT_CODES
    assert {d: codes[d] for d in facts.DTYPE_BYTES} == facts.DTYPE_BYTES
    for dtype, layout in facts.SCALED_LAYOUTS.items():
        assert codes[dtype] <= 0 and sizing_kinds._SCALED[codes[dtype]] == layout
    assert codes["nvfp4"] == 0  # a row without a dtype reads as NVFP4 (code 0)


def test_the_float_dtypes_are_named_once_and_read_by_every_side():
    # Written twice in the sizing runtime at 4e5873c (engines_rows.SSM_DTYPES, the keys of
    # engines_registry.MODEL_DTYPES) and again by import-hf (its torch_dtype table): now one
    # table of kvgen.sizing.facts, in the order messages list them.
    from kvgen._importhf._dtype import DTYPES
    from kvgen.sizing import engines_registry, engines_rows

    assert engines_registry.MODEL_DTYPES is facts.MODEL_DTYPES
    assert engines_rows.SSM_DTYPES == tuple(facts.MODEL_DTYPES) == ("fp32", "bf16", "fp16")
    assert set(facts.MODEL_DTYPES) < set(facts.DTYPE_BYTES)  # each float has its width
    assert DTYPES == {"float32": ("fp32", 4), "bfloat16": ("bf16", 2), "float16": ("fp16", 2)}
    # The patterns see the old spellings (not vacuous).
    assert re.search(GONE["float dtypes"], 'SSM_DTYPES = ("fp32", "bf16", "fp16")')
    assert re.search(GONE["float dtypes"], 'Literal["bf16", "fp16", "fp32"]')
    assert not re.search(GONE["float dtypes"], 'DTYPES = ("fp32", "bf16", "fp16", "fp8")')
    names = LITERALS["model dtype names"]
    assert re.search(names, 'DTYPES = {"bfloat16": ("bf16", 2), "float16": ("fp16", 2)}')


def test_scaled_bytes_by_hand():
    # NVFP4, 2 heads x 16 elements = 32: 32 * 4 bits = 16 B + ceil(32/16) = 2 FP8 scales = 18;
    # fp8_per_token_head: 32 B + 2 heads x 4 B fp32 = 40; mxfp4: 16 B + ceil(32/32) = 17.
    assert quant.layout_bytes("nvfp4", 2, 16) == 18
    assert quant.layout_bytes("fp8_per_token_head", 2, 16) == 40
    assert quant.layout_bytes("mxfp4", 2, 16) == 17
    assert sizing_kinds._scaled_bytes(2, 32, sizing_kinds._ELEMENT_CODES["mxfp4"]) == 17


@pytest.mark.parametrize(
    ("mode", "k", "tree", "want"),
    [
        ("none", 0, None, (0, 0, 0)),
        ("eagle3", 3, None, (2, 3, 1)),  # E = K - 1, K slots, D = 1
        ("eagle3", 3, 10, (2, 10, 1)),  # a draft tree of 10 tokens: 10 slots
        ("mtp", 3, None, (2, 3, 3)),  # MTP backs off K
        ("pard", 4, None, (3, 7, 0)),  # K drafts padded to 2K - 1 slots
        ("ngram", 4, None, (0, 4, 0)),  # two-model: the target verifies K a step, no E
        ("draft_target", 2, None, (1, 2, 0)),
    ],
)
def test_mode_headroom_by_hand(mode, k, tree, want):
    assert facts.mode_headroom(mode, k, tree) == want


def test_every_speculative_mode_of_the_schema_has_a_headroom_row():
    assert set(facts.HEADROOM) == {"none", *spec.SpeculativeMode.__args__}


def test_each_refusal_is_worded_once_and_read_by_both_sides():
    # The DCP, uneven-state and encoder-token refusals were written out three times each
    # (interpreter, shim runtime, cost model); now each is one function of kvgen.sizing.facts.
    phrases = [
        "shards the KV cache over the TP ranks",
        "must be divisible by dcp_size",
        "shards full-attention caches only",
        "TP ranks holding copies of each KV head",
        "of the recurrent kind; ",
        "encoder_tokens is only for models with cross-attention layers",
    ]
    for phrase in phrases:
        found = [p.name for p in sources() if phrase in p.read_text(encoding="utf-8")]
        assert found == ["facts.py"], (phrase, found)
    assert facts.dcp_outside_tp(6, 4) == (
        "tp_size 6 must be divisible by dcp_size 4: the DCP group is carved from the TP group"
    )


def test_float32_is_the_engine_s_rounding_of_the_watermark():
    # 0.95 has no exact binary form: its float32 is 0.949999988079071 (to 15 digits).
    assert round(facts.float32(0.95), 15) == 0.949999988079071
    assert facts.float32(0.5) == 0.5
