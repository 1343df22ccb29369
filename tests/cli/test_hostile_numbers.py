"""Issue 18 item 11, through the commands: numbers no device has are usage errors (exit 2,
the flag named), and a model whose layers hold no cache gets an answer, never an internal
error (a divide by zero in the SGLang policy)."""

from __future__ import annotations

import pytest
from kvgen._cli.main import main

NO_CACHE = """\
schema_version: 1
family: nocache
tokens_per_block: 64
kv_cache_dtype: bf16
models:
  - name: mlp_only
    max_seq_len: 8192
    layer_kinds:
      mlp: {attention: none}
    layers: {count: 4, pattern: [mlp]}
"""


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["plan", "llama3", "llama3_1_8b", "--gpu-memory", "9" * 400], "--gpu-memory"),
        (["plan", "llama3", "llama3_1_8b", "--gpu-memory", "8000000PiB"], "--gpu-memory"),
        (
            ["plan", "llama3", "llama3_1_8b", "--gpu-memory", "80GiB", "--requests", "9" * 101],
            "--requests",
        ),
        (["compare", "llama3", "llama3_1_8b", "--gpu-memory", "9" * 5000], "--gpu-memory"),
        (
            ["compare", "llama3", "llama3_1_8b", "--gpu-memory", "1GiB", "--max-seq-len", "9" * 30],
            "--max-seq-len",
        ),
    ],
)
def test_sizes_and_counts_past_64_bits_are_usage_errors(args, flag, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    err = capsys.readouterr().err
    assert info.value.code == 2
    # argparse names a flag with its aliases (--max-seq-len/--max-model-len/...: the engines'
    # own spellings), so the flag is matched up to the first separator
    assert (f"argument {flag}:" in err or f"argument {flag}/" in err) and "2**63 - 1" in err
    assert "internal error" not in err and len(err) < 2000  # the number is not echoed whole


def test_compare_of_a_model_without_any_cache(tmp_path, capsys):
    spec = tmp_path / "nocache.yaml"
    spec.write_text(NO_CACHE)
    code = main(["compare", str(spec), "mlp_only", "--gpu-memory", "1GiB", "--max-seq-len", "4096"])
    out, err = capsys.readouterr()
    assert "internal error" not in err
    # vLLM and SGLang refuse a model with no KV cache ("no cached layers"): exit 1, each
    # engine's reason printed; TensorRT-LLM V2 holds B = 8 requests of 4096 tokens at 0 B.
    assert code == 1
    assert out.count("the model has no cached layers") == 2
    trtllm = next(line for line in out.splitlines() if line.lstrip().startswith("trtllm-v2"))
    assert "32,768" in trtllm  # kv tokens: 8 x 4096
