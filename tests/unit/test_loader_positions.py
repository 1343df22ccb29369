"""The YAML loader: safe, position-keeping, and never raising on bad input."""

from __future__ import annotations

import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st
from kvgen._spec.loader import load_bytes, parse_yaml

VALID = textwrap.dedent(
    """\
    schema_version: 1
    family: tiny
    tokens_per_block: 64
    kv_cache_dtype: bf16
    models:
      - name: tiny
        max_seq_len: 4096
        layer_kinds:
          g: {attention: full, kv_heads: 8, head_dim: 128}
        layers: {count: 2, pattern: [g]}
    """
)


def codes(raw: bytes) -> list[tuple[str, int, int]]:
    return [(d.code, d.line, d.col) for d in load_bytes("s.yaml", raw).diagnostics]


def test_valid_spec_loads_with_positions_of_keys_and_values():
    loaded = load_bytes("s.yaml", VALID.encode())
    assert loaded.family is not None and loaded.diagnostics == []
    assert loaded.source.value(("models", 0, "layers", "pattern", 0)) == (10, 34)
    assert loaded.source.key(("models", 0, "layer_kinds", "g")) == (9, 7)
    assert loaded.source.value(("models", 0, "nope", 3)) == (6, 5)  # nearest ancestor


def test_byte_order_mark_is_accepted():
    assert load_bytes("s.yaml", b"\xef\xbb\xbf" + VALID.encode()).family is not None


def test_yaml_11_booleans_and_dates_stay_strings():
    data, _, diagnostics = parse_yaml("s.yaml", b"a: yes\nb: on\nc: 2024-01-01\nd: true\n")
    assert diagnostics == []
    assert data == {"a": "yes", "b": "on", "c": "2024-01-01", "d": True}


def test_empty_file_is_kv003():
    assert codes(b"") == [("KV003", 1, 1)]


def test_scalar_document_is_kv003():
    assert codes(b"just a string\n") == [("KV003", 1, 1)]


def test_duplicate_top_level_key_is_kv004_at_the_second_key():
    assert codes(VALID.encode() + b"family: other\n") == [("KV004", 11, 1)]


def test_quoted_merge_key_is_an_ordinary_unknown_key():
    raw = VALID.encode() + b'"<<": 1\n'
    assert codes(raw) == [("KV101", 11, 1)]


def test_plain_merge_key_is_kv006():
    assert codes(b"a: &a {x: 1}\nb: {<<: *a}\n") == [("KV006", 2, 5)]


def test_custom_tag_is_kv006():
    assert codes(b"family: !custom tiny\n") == [("KV006", 1, 9)]


def test_alias_bomb_stops_at_the_bound():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 7):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    (code,) = codes("\n".join(lines).encode())
    assert code[0] == "KV005"


def test_deep_nesting_is_kv005_not_a_crash():
    assert codes(b"[" * 5000 + b"]" * 5000)[0][0] in {"KV001", "KV005"}


def test_syntax_error_message_says_where_and_what():
    (diagnostic,) = load_bytes("s.yaml", b"a: [1, 2\nb: 3\n").diagnostics
    assert diagnostic.code == "KV001"
    assert "while parsing" in diagnostic.message


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_raise(raw):
    for diagnostic in load_bytes("s.yaml", raw).diagnostics:
        assert diagnostic.line >= 1 and diagnostic.col >= 1


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="{}[]:,-&*!|>'\"#\n abc01", max_size=120))
def test_yaml_like_text_never_raises(text):
    for diagnostic in load_bytes("s.yaml", text.encode()).diagnostics:
        assert diagnostic.line >= 1 and diagnostic.col >= 1
