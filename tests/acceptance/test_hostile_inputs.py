"""Hostile inputs (issue 9, items 3-5): every reproducer of the hostile review is a test here.

Specs, configs and file names are untrusted. Whatever they hold, kvgen answers with a
positioned diagnostic (file:line:col, code, fix) and exit 1, or a usage error and exit 2:
never a traceback, an "internal error", a segfault, or a value silently changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kvgen._cli.main import main
from kvgen._importhf import import_config
from kvgen._spec.composer import MAX_DEPTH
from kvgen._spec.loader import load_bytes, load_path, parse_yaml

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "hf"

SPEC = """\
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


def spec_with(old: str, new: str) -> bytes:
    assert old in SPEC
    return SPEC.replace(old, new, 1).encode()


def found(raw: bytes) -> list[tuple[str, int, int]]:
    return [(d.code, d.line, d.col) for d in load_bytes("s.yaml", raw).diagnostics]


def test_the_baseline_is_valid():
    assert load_bytes("s.yaml", SPEC.encode()).family is not None


# --------------------------------------------------------------- YAML 1.2 core only


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (".nan", "KV012"),
        (".NaN", "KV012"),
        (".inf", "KV012"),
        ("-.inf", "KV012"),
        ("+.INF", "KV012"),
        ("1e400", "KV012"),  # a finite literal that overflows a float
        ("9" * 4301, "KV012"),  # past Python's int() digit limit
        ("9" * 21, "KV012"),
        ("0x" + "f" * 5000, "KV012"),
        ("!!int name", "KV013"),
        ("!!float abc", "KV013"),
        ("!!bool yes", "KV013"),  # YAML 1.1 would read False or True: refused, never guessed
        ("!!bool off", "KV013"),
        ("!!null x", "KV013"),
        ("!!binary aGVsbG8=", "KV006"),
        ("!!timestamp 2024-01-01", "KV006"),
    ],
)
def test_what_yaml_12_core_does_not_define_is_refused_at_the_value(value, code):
    assert found(spec_with("tokens_per_block: 64", f"tokens_per_block: {value}")) == [(code, 3, 19)]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("!!int 64", 64), ("!!float 64", 64), ("64.0", 64), ("!!str 64", None), ("0x40", 64)],
)
def test_matching_tags_and_integral_numbers_are_read_as_written(value, expected):
    loaded = load_bytes("s.yaml", spec_with("tokens_per_block: 64", f"tokens_per_block: {value}"))
    if expected is None:  # a string where an integer belongs: a schema error, in our words
        assert [(d.code, d.message) for d in loaded.diagnostics] == [
            ("KV103", "tokens_per_block: expected an integer, found the string '64'")
        ]
    else:
        assert loaded.family is not None and loaded.family.tokens_per_block == expected


def test_a_bool_tag_with_a_core_value_is_a_bool():
    raw = spec_with("family: tiny", "family: !!bool true")
    (diagnostic,) = load_bytes("s.yaml", raw).diagnostics
    assert (diagnostic.code, diagnostic.message) == (
        "KV103",
        "family: expected a string, found true",
    )


@pytest.mark.parametrize("value", [".nan", "!!int name", "!!float abc", "9" * 5000])
def test_cli_reports_the_reproducers_as_findings_not_internal_errors(value, tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_bytes(spec_with("tokens_per_block: 64", f"tokens_per_block: {value}"))
    assert main(["lint", str(spec)]) == 1
    out, err = capsys.readouterr()
    assert out.startswith(f"{spec.as_posix()}:3:19: KV01")
    assert "(fix: " in out
    assert "internal error" not in err and "Traceback" not in err


# --------------------------------------------------------------- nesting and size


def _nested(depth: int) -> bytes:
    return ("deep: " + "[" * depth + "]" * depth + "\n").encode()


def read(raw: bytes) -> list[tuple[str, int, int]]:
    """Reader diagnostics only (the documents below are not specs)."""
    return [(d.code, d.line, d.col) for d in parse_yaml("s.yaml", raw)[2]]


def test_nesting_up_to_the_bound_is_read():
    assert read(_nested(MAX_DEPTH - 1)) == []  # the top-level mapping is one level


def test_nesting_past_the_bound_is_kv005_at_the_bracket_that_crosses_it():
    # deep: is at depth 1, the n-th bracket opens depth n + 1: the 64th crosses the bound.
    assert read(_nested(MAX_DEPTH)) == [("KV005", 1, 6 + MAX_DEPTH)]


def test_block_style_nesting_is_bounded_too():
    raw = ("deep:\n" + "".join("  " * i + "-\n" for i in range(200))).encode()
    assert [code for code, _line, _col in read(raw)] == ["KV005"]


def test_25000_deep_nesting_is_a_diagnostic_not_a_segfault(tmp_path):
    # The reproducer: the C composer recursed once per level and crashed (exit 139).
    spec = tmp_path / "deep.yaml"
    spec.write_bytes(_nested(25_000))
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "kvgen", "lint", "--format", "json", str(spec)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    elapsed = time.perf_counter() - started
    assert proc.returncode == 1, proc.stderr
    (diagnostic,) = json.loads(proc.stdout)
    assert (diagnostic["code"], diagnostic["line"], diagnostic["col"]) == ("KV005", 1, 70)
    assert elapsed < 10  # refused at depth 64, not after reading 25,000 levels (was 2 s at 20k)


def test_an_alias_bomb_through_nested_anchors_stops_at_the_bound():
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]" for i in range(8)
    ]
    (code, line, _col), *_ = read("\n".join(lines).encode())
    assert (code, line) == ("KV005", 5)  # e expands to 111,111 values


# --------------------------------------------------------------- did you mean


def test_a_misspelt_required_key_is_one_error_at_the_key_with_the_suggestion():
    (diagnostic,) = load_bytes(
        "s.yaml", spec_with("tokens_per_block", "tokens_per_blok")
    ).diagnostics
    assert (diagnostic.code, diagnostic.line, diagnostic.col) == ("KV101", 3, 1)
    assert "did you mean 'tokens_per_block'?" in diagnostic.message
    assert diagnostic.fix == "rename it to 'tokens_per_block'"


def test_a_misspelt_optional_key_is_suggested_from_the_schema():
    raw = spec_with("kv_heads: 8, head_dim", "kv_heads: 8, hed_dim")
    (diagnostic,) = load_bytes("s.yaml", raw).diagnostics
    assert diagnostic.code == "KV101"
    assert diagnostic.message.endswith("(did you mean 'head_dim'?)")


def test_an_unrelated_unknown_key_gets_no_suggestion():
    (diagnostic,) = load_bytes("s.yaml", SPEC.encode() + b"zebra: 1\n").diagnostics
    assert diagnostic.message == "unknown key 'zebra' at zebra"


# --------------------------------------------------------------- paths


@pytest.mark.parametrize("char", ["\n", "\r", "\x1b", "\x00"[:0] + "\x7f", "\u2028"])
def test_control_characters_in_a_file_name_are_kv011_and_shown_escaped(char, tmp_path, capsys):
    spec = tmp_path / f"x{char}import os.yaml"
    spec.write_bytes(SPEC.encode())
    loaded = load_path(spec)
    (diagnostic,) = loaded.diagnostics
    assert (diagnostic.code, diagnostic.line, diagnostic.col) == ("KV011", 1, 1)
    assert loaded.family is None
    assert char not in diagnostic.path and "\\" in diagnostic.path
    assert main(["lint", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "KV011" in out  # one finding, one line


def test_lint_of_a_missing_path_is_a_usage_error(tmp_path, capsys):
    assert main(["lint", str(tmp_path / "missing.yaml")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("kvgen: error: no such file or directory: ")


def test_generate_of_a_missing_path_is_the_same_usage_error(tmp_path, capsys):
    assert main(["generate", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "g")]) == 2
    out, err = capsys.readouterr()
    assert "KV009" not in out
    assert "kvgen: error: no such file or directory: " in err
    assert not (tmp_path / "g").exists()


def test_generate_in_an_empty_repository_never_reports_the_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["generate"]) == 2  # schema/families does not exist: usage, not KV009
    out, err = capsys.readouterr()
    assert "schema/families:1:1" not in out + err
    assert "no spec directory schema/families (run `kvgen init`" in err


def test_a_directory_without_specs_lints_clean_with_a_warning(tmp_path, capsys):
    assert main(["lint", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "no spec files" in err


# --------------------------------------------------------------- import-hf


def _llama() -> dict:
    return json.loads((FIXTURES / "llama-3.1-8b.json").read_text(encoding="utf-8"))


def _import(config: dict | str) -> list[tuple[str, int, int, str]]:
    text = config if isinstance(config, str) else json.dumps(config, indent=2)
    result = import_config("config.json", text)
    assert result.text is None
    return [(d.code, d.line, d.col, d.message) for d in result.diagnostics]


def _line_of(text: str, key: str) -> tuple[int, int]:
    for number, line in enumerate(text.splitlines(), 1):
        if f'"{key}"' in line:
            return number, line.index(f'"{key}"') + 1
    raise AssertionError(key)


@pytest.mark.parametrize(
    "written",  # JSON text of num_hidden_layers
    [
        "100000000",
        "1e9",
        "1" + "0" * 30,
        "1e30",
        "4097",
        "0",
        "-1",
        "9" * 5000,
        "NaN",
        '"32"',
        "true",
    ],
    ids=["1e8", "1e9", "int-1e30", "1e30", "4097", "0", "-1", "5000-digits", "NaN", "str", "bool"],
)
def test_layer_counts_are_bounded_before_anything_is_built(written):
    config = _llama()
    config["num_hidden_layers"] = "PLACEHOLDER"
    text = json.dumps(config, indent=2).replace('"PLACEHOLDER"', written)
    started = time.perf_counter()
    ((code, line, col, message),) = _import(text)
    assert time.perf_counter() - started < 2
    assert (code, (line, col)) == ("KV307", _line_of(text, "num_hidden_layers"))
    assert message.startswith("'num_hidden_layers' must be an integer in [1, 4096], found ")


@pytest.mark.parametrize(
    ("field", "value", "bound"),
    [
        ("max_position_embeddings", 1 << 27, 1 << 26),
        ("num_key_value_heads", 5000, 4096),
        ("head_dim", 1 << 17, 65536),
        ("sliding_window", 1 << 25, 1 << 24),
        ("hidden_size", 1 << 21, 1 << 20),
    ],
)
def test_sizes_use_the_spec_bounds_and_point_at_the_config_key(field, value, bound):
    config = _llama()
    config[field] = value
    if field == "sliding_window":
        config["max_position_embeddings"] = 1 << 26
    text = json.dumps(config, indent=2)
    ((code, line, col, message),) = _import(text)
    assert (code, (line, col)) == ("KV307", _line_of(text, field))
    assert f"in [1, {bound}]" in message


def test_json_nested_2000_deep_is_kv308_not_a_recursion_error():
    text = '{"num_hidden_layers": 2, "rope_scaling": ' + "[" * 2000 + "]" * 2000 + "}"
    ((code, line, col, message),) = _import(text)
    assert (code, line, col) == ("KV308", 1, 42 + 31)  # the 32nd "[" opens depth 33
    assert message == "config nests deeper than 32 levels"


def test_brackets_inside_strings_do_not_count_as_nesting():
    config = _llama()
    config["architectures"] = ["[" * 5000 + '\\"{' * 100]
    result = import_config("config.json", json.dumps(config))
    assert result.diagnostics == [] and result.text is not None


def test_a_recurrent_state_past_the_spec_bound_is_refused_at_the_config():
    config = json.loads((FIXTURES / "nemotron-h-8b.json").read_text(encoding="utf-8"))
    config["mamba_num_heads"] = 1 << 20
    config["mamba_head_dim"] = 1 << 20
    text = json.dumps(config, indent=2)
    ((code, line, col, message),) = _import(text)
    assert (code, (line, col)) == ("KV307", _line_of(text, "mamba_num_heads"))
    assert "over the spec's maximum" in message


def test_import_hf_cli_never_names_the_output_file_in_a_diagnostic(tmp_path, capsys):
    config = _llama()
    config["num_hidden_layers"] = 100_000_000
    source = tmp_path / "config.json"
    source.write_text(json.dumps(config, indent=2))
    out_file = tmp_path / "spec.yaml"
    assert main(["import-hf", str(source), "--out", str(out_file)]) == 1
    out, err = capsys.readouterr()
    assert out.startswith(f"{source.as_posix()}:")
    assert str(out_file) not in out and "internal error" not in err
    assert not out_file.exists()


def test_anchors_on_scalars_and_keys_resolve_like_any_yaml_reader():
    data, source, diagnostics = parse_yaml("s.yaml", b"a: &x 5\nb: *x\n&k c: [1, &y 2]\nd: *y\n")
    assert diagnostics == []
    assert data == {"a": 5, "b": 5, "c": [1, 2], "d": 2}
    assert source.value(("b",)) == (2, 4) and source.value(("c", 1)) == (3, 11)


def test_an_undefined_alias_is_a_syntax_error_with_its_position():
    assert read(b"a: 1\nb: *nowhere\n") == [("KV001", 2, 4)]
