"""What ``kvgen import-hf`` reads and writes: issue 18 #9 and #15 (devices, FIFOs, ``--out``
a folder or a device) and issue 23 (no silent overwrite, ``--into``, a family name that is
taken). Each test failed on 54a882f."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from kvgen._lint.linter import lint_paths
from kvgen._spec.loader import load_path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "hf"
LLAMA = FIXTURES / "llama-3.1-8b.json"

# microsoft/phi-4 config.json, cut to the fields the importer reads: model_type "phi3" (its
# architecture is Phi3ForCausalLM), 40 layers, 10 KV heads of 5120 / 40 = 128.
PHI_4 = {
    "architectures": ["Phi3ForCausalLM"],
    "hidden_size": 5120,
    "intermediate_size": 17920,
    "max_position_embeddings": 16384,
    "model_type": "phi3",
    "num_attention_heads": 40,
    "num_hidden_layers": 40,
    "num_key_value_heads": 10,
    "rope_theta": 250000,
    "sliding_window": None,
    "torch_dtype": "bfloat16",
    "vocab_size": 100352,
}


def run(*args: str, cwd: Path = ROOT) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "kvgen", *args], capture_output=True, text=True, timeout=60, cwd=cwd
    )
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def phi_4(tmp_path) -> Path:
    path = tmp_path / "phi-4" / "config.json"  # the model name comes from the folder: phi_4
    path.parent.mkdir()
    path.write_text(json.dumps(PHI_4, indent=2))
    return path


# --- issue 18 #9: inputs that are not regular files -------------------------------------------


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_refused_not_read(device):
    code, out, _ = run("import-hf", device)
    assert code == 1 and f"{device}:1:1: KV021 is a character device" in out


def test_a_fifo_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    code, out, _ = run("import-hf", str(fifo))  # 54a882f blocked here until the timeout
    assert code == 1 and "KV021 is a FIFO" in out


def test_an_oversized_config_is_kv308_without_reading_it_whole(tmp_path):
    big = tmp_path / "config.json"
    with big.open("wb") as handle:
        handle.truncate(2 << 30)  # 2 GiB, sparse: 54a882f read it whole first
    code, out, _ = run("import-hf", str(big))
    assert code == 1 and "KV308" in out


# --- issue 18 #15: --out a folder, a device, a missing folder ---------------------------------


def test_out_a_directory_is_refused(tmp_path):
    code, out, _ = run("import-hf", str(LLAMA), "--out", str(tmp_path), "--force")
    assert code == 1 and "KV021 is a directory" in out
    assert list(tmp_path.iterdir()) == []


def test_out_never_replaces_a_special_file(tmp_path):
    fifo = tmp_path / "spec.yaml"  # stands for /dev/full, which 54a882f replaced as root
    os.mkfifo(fifo)
    code, out, _ = run("import-hf", str(LLAMA), "--out", str(fifo), "--force")
    assert code == 1 and "KV021 is a FIFO" in out
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_compare_plot_into_a_missing_folder_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    plot = tmp_path / "missing" / "x.png"
    code, _, _ = run(
        "compare", "llama3", "llama3_1_8b", "--gpu-memory", "40GiB", "--plot", str(plot)
    )
    assert code == 0 and plot.read_bytes().startswith(b"\x89PNG")


# --- issue 23: no silent overwrite ----------------------------------------------------------


def test_out_refuses_an_existing_file_unless_force(tmp_path):
    spec = tmp_path / "llama.yaml"
    spec.write_text("# hand-edited\n")
    code, _, err = run("import-hf", str(LLAMA), "--family", "llama", "--out", str(spec))
    assert code == 2 and "exists; --force replaces it" in err
    assert spec.read_text() == "# hand-edited\n"
    code, _, _ = run("import-hf", str(LLAMA), "--family", "llama", "--out", str(spec), "--force")
    assert code == 0 and load_path(spec).family is not None


# --- issue 23: --into adds a model to an existing family file ---------------------------------


def test_into_adds_the_model_and_keeps_every_line_of_the_family_file(tmp_path, phi_4):
    family = tmp_path / "phi3.yaml"
    original = (ROOT / "schema/families/phi3.yaml").read_text()
    family.write_text(original)
    code, _, err = run("import-hf", str(phi_4), "--into", str(family))
    assert code == 0, err
    merged = family.read_text()
    start = merged.index("  # phi_4: imported by kvgen import-hf from ")
    end = merged.index("      pattern: [full]\n", start) + len("      pattern: [full]\n")
    assert merged[:start] + merged[end:] == original  # one block added, every byte kept
    assert merged[:start].endswith("      pattern: [full]\n")  # after the last model entry
    assert lint_paths([family]) == []
    loaded = load_path(family)
    phi = loaded.family.model("phi_4")
    # 40 layers x 2 (K and V) x 10 KV heads x 128 x 2 B (bf16) = 204,800 B per token
    kind = phi.layer_kinds["full"]
    assert (phi.layers.count, kind.kv_heads, kind.head_dim) == (40, 10, 128)
    assert 40 * 2 * 10 * 128 * 2 == 204_800
    assert loaded.family.tokens_per_block == 64  # the family's, not the importer's 32


def test_into_refuses_a_model_name_that_exists(tmp_path, phi_4):
    family = tmp_path / "phi3.yaml"
    family.write_text((ROOT / "schema/families/phi3.yaml").read_text())
    before = family.read_text()
    code, _, err = run("import-hf", str(phi_4), "--into", str(family), "--model", "phi3_mini_4k")
    assert code == 2 and "model 'phi3_mini_4k' is already in" in err
    assert family.read_text() == before


def test_into_a_file_with_keys_after_models_and_unindented_items(tmp_path, phi_4):
    family = tmp_path / "toy.yaml"
    family.write_text(
        "schema_version: 1\n"
        "family: toy  # a comment that stays\n"
        "tokens_per_block: 32\n"
        "kv_cache_dtype: bf16\n"
        "models:\n"
        "- name: small\n"
        "  max_seq_len: 4096\n"
        "  layer_kinds:\n"
        "    full: {attention: full, kv_heads: 8, head_dim: 128}\n"
        "  layers: {count: 4, pattern: [full]}\n"
        "\n"
        "# what follows is not a model\n"
        "speculative: []\n"
    )
    code, _, err = run("import-hf", str(phi_4), "--into", str(family))
    assert code == 0, err
    text = family.read_text()
    assert text.endswith("\n# what follows is not a model\nspeculative: []\n")
    assert "\n- name: phi_4\n  max_seq_len: 16384" in text
    assert lint_paths([family]) == []
    assert [m.name for m in load_path(family).family.models] == ["small", "phi_4"]


# --- issue 23: a family name that is taken is said --------------------------------------------


def test_a_taken_family_name_is_said_on_stdout_and_refused_for_out(tmp_path, phi_4):
    code, out, err = run("import-hf", str(phi_4))  # in kvgen's repository: phi3 is shipped
    assert code == 0 and "family: phi3\n" in out
    assert "family 'phi3' is already defined by schema/families/phi3.yaml" in err
    assert "--into schema/families/phi3.yaml" in err
    new = tmp_path / "phi4.yaml"
    code, _, err = run("import-hf", str(phi_4), "--out", str(new))
    assert code == 2 and "give --family NAME" in err and not new.exists()
    code, _, _ = run("import-hf", str(phi_4), "--out", str(new), "--family", "phi4")
    assert code == 0 and load_path(new).family.family == "phi4"
