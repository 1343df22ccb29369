"""Issue 29's hostile review, the input side: every finding on reading untrusted files is a test
here, with its adversarial input at the read bound.

- D3: import-hf's nesting scan is linear (a config of ``"`` + ``\\"`` x N at the 4 MiB bound).
- D4: generation is bounded from the spec before anything is rendered (lint refuses it too).
- D5 / W4 / R1 / issue 32: ``--weights`` bounds header bytes across shards, validates headers
  as safetensors does, stays inside the named folder, checks the checkpoint against the spec.
- C2 / C3: nesting depth is a positioned usage error in every TOML and JSON reader.
- C4: lint refuses the cross-attention byte shapes that generate cannot render.

Time limits are on CPU time measured in a child process (the machine is shared: wall time
says little), and the child is killed after a generous wall limit so that a quadratic reader
fails the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def cpu_seconds(setup: str, timed: str, *, wall_limit: float = 60) -> tuple[float, str]:
    """Run ``setup`` then ``timed`` in a fresh interpreter; the CPU seconds ``timed`` took and
    what it printed. Fails when the child outlives ``wall_limit``."""
    program = (
        "import time\n"
        + textwrap.dedent(setup)
        + "\n_started = time.process_time()\n"
        + textwrap.dedent(timed)
        + "\nprint('CPU', time.process_time() - _started)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", program],
            capture_output=True,
            text=True,
            timeout=wall_limit,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running after {wall_limit} s of wall time") from None
    assert done.returncode == 0, done.stderr[-2000:]
    *printed, last = done.stdout.splitlines()
    assert last.startswith("CPU ")
    return float(last.split()[1]), "\n".join(printed)


# ------------------------------------------------------------------ D3: import-hf nesting scan


def test_an_unterminated_string_of_escaped_quotes_at_the_4_mib_bound_is_refused_in_a_second():
    # `"` + `\"` x N: no closing quote. The old string pattern retried at each of the N quotes
    # and scanned to the end each time (N = 40,000 took 87.8 s); the bound admits N = 2 Mi.
    seconds, printed = cpu_seconds(
        """
        from kvgen._importhf import import_config
        from kvgen._importhf._import import MAX_CONFIG_BYTES
        text = '"' + '\\\\"' * ((MAX_CONFIG_BYTES - 1) // 2)
        assert len(text) == MAX_CONFIG_BYTES - 1, len(text)
        """,
        """
        result = import_config("config.json", text)
        print(result.diagnostics[0].code, result.diagnostics[0].message)
        """,
    )
    assert printed.startswith("KV301 invalid JSON: Unterminated string")
    assert seconds < 1.0


def test_the_nesting_scan_is_linear_on_every_string_shape_at_the_bound():
    # Quotes only (2 Mi empty strings), bracket pairs (4 Mi tokens at depth 1), a backslash
    # after each quote: the scan visits each character a bounded number of times.
    seconds, printed = cpu_seconds(
        """
        from kvgen._importhf._json import nesting_too_deep
        from kvgen._importhf._import import MAX_CONFIG_BYTES as B
        texts = ['"' * B, '[]' * (B // 2), '"\\\\' * (B // 2), '"' + 'a' * (B - 1)]
        """,
        """
        for text in texts:
            print(nesting_too_deep(text))
        """,
    )
    assert printed.split() == ["None"] * 4
    assert seconds < 4 * 1.0


def test_a_string_that_closes_still_hides_its_brackets_and_an_open_one_counts_nothing():
    from kvgen._importhf._json import nesting_too_deep

    assert nesting_too_deep('{"a": "' + "[" * 100 + '\\" {{{"}') is None
    # `{"a": "\\"` is 10 characters; the 32nd "[" after it opens depth 33
    assert nesting_too_deep('{"a": "\\\\"' + "[" * 40 + "]" * 40 + "}") == 10 + 31
    assert nesting_too_deep('{"a": "' + "[" * 100) is None  # json.loads refuses it


def test_the_import_hf_command_refuses_the_escaped_quotes_file_with_a_position(tmp_path):
    config = tmp_path / "config.json"
    config.write_text('"' + '\\"' * ((4 << 20) // 2 - 1), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "kvgen", "import-hf", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith(f"{config.as_posix()}:1:1: KV301 invalid JSON: Unterminated")
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    json.dumps(done.stdout)  # text, not bytes


# ------------------------------------------------------------------ C2: deployment TOML nesting


def _deployment(tmp_path: Path, value: str) -> Path:
    path = tmp_path / "node.toml"
    path.write_text(f'gpu = "H100-80GB"\nx = {value}\n', encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("value", "at"),
    [
        ("[" * 2000 + "]" * 2000, (2, 5 + 32)),  # the 33rd "[" (column 5 + 32) opens depth 33
        ("{a = " * 2000 + "1" + "}" * 2000, (2, 5 + 32 * 5)),  # each level is `{a = `
        # strings hide brackets; line 3 is `]]]""", ` (8 characters) and the deep array, one
        # level inside the outer one: its 32nd "[" (column 9 + 31) opens depth 33
        ('["[[[", """\n]]]""", ' + "[" * 2000 + "]" * 2000 + "]", (3, 9 + 31)),
    ],
    ids=["arrays", "inline-tables", "after-strings"],
)
def test_a_deeply_nested_deployment_file_is_a_positioned_usage_error(tmp_path, capsys, value, at):
    from kvgen._cli.main import main

    path = _deployment(tmp_path, value)
    code = main(["plan", "--deployment", str(path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "internal error" not in err and "RecursionError" not in err
    line, col = at
    assert f"node.toml:{line}:{col}: arrays and inline tables nest deeper than 32 levels" in err


def test_a_deployment_nested_to_the_bound_reaches_the_key_checks(tmp_path, capsys):
    from kvgen._cli.main import main

    path = _deployment(tmp_path, "[" * 32 + "]" * 32)
    assert main(["plan", "--deployment", str(path)]) == 2
    assert "unknown key 'x' in the top level" in capsys.readouterr().err


def _toml_string(rng) -> str:
    """A TOML string of any of the four kinds, holding brackets, quotes, `#` and escapes."""
    body = "".join(rng.choice(["[", "]", "{", "}", "#", "a", " ", "'", '"']) for _ in range(6))
    kind = rng.randrange(4)
    if kind == 0:
        return '"' + body.replace('"', '\\"') + '"'
    if kind == 1:
        return "'" + body.replace("'", "") + "'"
    if kind == 2:
        return '"""' + body.replace('"', '\\"') + '\n"""'
    return "'''" + body.replace("'", "") + "\n'''"


def _toml_array(rng, depth: int) -> str:
    if depth == 0:
        return _toml_string(rng)
    items = [_toml_array(rng, depth - 1)] + [_toml_string(rng) for _ in range(rng.randrange(2))]
    rng.shuffle(items)
    return "[" + ", ".join(items) + ("  # ]]] {{\n" if rng.random() < 0.3 else "") + "]"


def test_the_toml_scan_agrees_with_tomllib_on_strings_comments_and_depth():
    # Random documents of known depth whose strings and comments hold brackets: tomllib reads
    # each, and the scan finds exactly that depth (too deep at depth - 1, fine at depth).
    import random

    from kvgen._generate.config import tomllib
    from kvgen._util.nesting import toml_too_deep

    rng = random.Random(29)
    for _ in range(300):
        depth = rng.randrange(1, 8)
        text = f"x = {_toml_array(rng, depth)}\n"
        tomllib.loads(text)  # valid TOML
        assert toml_too_deep(text, depth) is None, text
        assert toml_too_deep(text, depth - 1) is not None, text


def test_the_toml_scan_is_linear_at_the_1_mib_bound():
    # The configuration and deployment bound: unterminated strings of every kind, runs of
    # quotes, brackets at depth 1. (In process: the scan is new, there is no old one to hang.)
    import time

    from kvgen._util.nesting import toml_too_deep

    size = 1 << 20
    texts = [
        'x = """' + '\\"' * (size // 2),
        'x = """' + '""a' * (size // 3),
        "x = '''" + "''a" * (size // 3),
        'x = "' + '\\"' * (size // 2),
        '"' * size,
        "'" * size,
        "[]" * (size // 2),
        'x = "a\n' * (size // 7),
    ]
    started = time.process_time()
    assert [toml_too_deep(text) for text in texts] == [None] * len(texts)
    assert time.process_time() - started < 1.0


# ------------------------------------------------------------------ --weights: safetensors input
# Shared below: a header written as given (a dict, or raw bytes) after its 8-byte length, and a
# sparse data section, so that header-only checkpoints of any size cost no disk.


def _safetensors(path: Path, header: dict | bytes, data: int = 0, length: int | None = None):
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    with path.open("wb") as handle:
        handle.write(struct.pack("<Q", len(raw) if length is None else length) + raw)
        handle.truncate(8 + (len(raw) if length is None else length) + data)
    return path


def _plan(capsys, weights: Path | str, model: str = "llama3_1_8b") -> tuple[int, str, str]:
    from kvgen._cli.main import main

    code = main(["-q", "plan", "llama3", model, "--gpu", "1GiB", "--weights", str(weights),
                 "--reserve", "0B", "--gpu-memory-utilization", "0.5", "--max-seq-len", "2048",
                 "--emit", "vllm", "--format", "json"])  # fmt: skip
    out = capsys.readouterr()
    return code, out.out, out.err


# ------------------------------------------------------------------ D5: header bytes bounded


def test_one_header_at_safetensors_bound_is_refused_before_it_is_read(tmp_path):
    # safetensors admits a 100 MB header (it took 38.5 s and 1.03 GB); kvgen reads 16 MiB of
    # one header at most and refuses a larger length field before reading the header.
    from kvgen._deploy import weights

    path = _safetensors(tmp_path / "model.safetensors", b"", length=100_000_000 - 8)
    with pytest.raises(weights.WeightsError) as refused:
        weights.read(path)
    assert str(refused.value).endswith(
        "not a safetensors file kvgen reads (its header length field is over 16777216 bytes)"
    )


def test_one_header_over_the_bound_costs_nothing_to_refuse(tmp_path):
    # A real 20 MiB header (155,000 tensors, valid JSON) is refused from its length field.
    path = tmp_path / "model.safetensors"
    seconds, printed = cpu_seconds(
        f"""
        import json, struct
        from pathlib import Path
        from kvgen._deploy import weights
        entry = {{"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}}
        raw = json.dumps({{f"t{{i:09d}}": entry for i in range(400_000)}}).encode()[: 20 << 20]
        path = Path({str(path)!r})
        path.write_bytes(struct.pack("<Q", len(raw)) + raw)
        """,
        """
        try:
            weights.read(path)
        except weights.WeightsError as exc:
            print(str(exc).split(": ", 1)[1])
        """,
    )
    assert printed.startswith("not a safetensors file kvgen reads (its header length field")
    assert seconds < 0.5


def test_shard_headers_are_bounded_together_before_any_is_read(tmp_path, capsys):
    # Five shards of 15 MiB headers each (each under the one-header bound): 78,643,200 bytes
    # together, over the 64 MiB (67,108,864) that kvgen reads across a checkpoint; refused
    # from the five length fields, before the first header is read.
    names = [f"model-{i:05d}-of-00005.safetensors" for i in range(1, 6)]
    for name in names:
        _safetensors(tmp_path / name, b"", length=15 << 20)
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {f"w{i}": name for i, name in enumerate(names)}})
    )
    code, _, err = _plan(capsys, tmp_path)
    assert code == 2
    assert (
        "model.safetensors.index.json: the headers of its 5 shards hold 78643200 bytes, over "
        "the 67108864 kvgen reads (give the bytes per rank instead, e.g. --weights 17GiB)"
    ) in err
    (tmp_path / "model.safetensors.index.json").unlink()  # the same without an index
    code, _, err = _plan(capsys, tmp_path)
    assert code == 2 and "the headers of its 5 shards hold 78643200 bytes" in err


def test_headers_up_to_the_total_bound_are_read(tmp_path):
    # Four shards of exactly 16 MiB of header each: 64 MiB, at the bound, so kvgen goes on to
    # read the first header (here spaces, which are not JSON).
    from kvgen._deploy import weights

    for i in range(1, 5):
        _safetensors(tmp_path / f"m-{i:05d}-of-00004.safetensors", b" " * (16 << 20))
    with pytest.raises(weights.WeightsError, match="the header is not JSON"):
        weights.read(tmp_path)


# ------------------------------------------------------------------ W4: headers as safetensors


OK_ENTRY = {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]}


@pytest.mark.parametrize(
    ("header", "data", "message"),
    [
        ({"a": {**OK_ENTRY, "dtype": "BF17"}}, 12, "tensor 'a' has dtype 'BF17', which safet"),
        # 2**124 elements of 2 bytes claimed in 2 bytes of data
        ({"a": {"dtype": "BF16", "shape": [2**62, 2**62], "data_offsets": [0, 2]}}, 2,
         "tensor 'a' of shape [4611686018427387904, 4611686018427387904] and dtype BF16 does "
         "not fill its data_offsets [0, 2] (2 bytes)"),
        # 1,000 tensors over the same 1 MiB (counted as 1,000 MiB before)
        ({f"t{i:03d}": {"dtype": "U8", "shape": [1 << 20], "data_offsets": [0, 1 << 20]}
          for i in range(1000)}, 1 << 20,
         "tensor 't001' overlaps the tensor before it (data_offsets [0, 1048576], the previous "
         "tensor ends at 1048576)"),
        ({"a": {"dtype": "U8", "shape": [4], "data_offsets": [4, 8]}}, 8,
         "tensor 'a' leaves a gap before it"),
        ({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}, 9,
         "file longer than its header says (5 bytes after the last tensor)"),
        ({"a": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, 2,
         "tensor 'a' of shape [3] and dtype F4 does not fill"),  # 12 bits: not whole bytes
        ({"a": {"dtype": "U8", "shape": [True], "data_offsets": [0, 1]}}, 1,
         "tensor 'a''s shape is not a list of sizes"),
        ({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1, 2]}}, 1,
         "tensor 'a''s data_offsets are not [begin, end]"),
        ({"__metadata__": {"format": 1}}, 0, "__metadata__ must map strings to strings"),
    ],
    ids=["dtype", "2**124-elements", "1000-overlapping", "gap", "longer", "f4-bits", "bool-dim",
         "three-offsets", "metadata"],
)  # fmt: skip
def test_headers_are_validated_as_safetensors_validates_them(tmp_path, header, data, message):
    # Each case is refused by safetensors 0.8.0 as well (safe_open; checked out of the repo).
    from kvgen._deploy import weights

    path = _safetensors(tmp_path / "model.safetensors", header, data)
    with pytest.raises(weights.WeightsError) as refused:
        weights.read(path)
    assert message in str(refused.value)


@pytest.mark.parametrize(
    ("header", "data", "nbytes"),
    [
        ({"a": {"dtype": "F4", "shape": [4], "data_offsets": [0, 2]}}, 2, [2]),
        ({"a": {"dtype": "F6_E2M3", "shape": [4], "data_offsets": [0, 3]}}, 3, [3]),  # 24 bits
        ({"a": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}}, 4, [4]),  # a scalar
        ({"a": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]},
          "b": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}}, 0, [0, 0]),
        ({"__metadata__": {"format": "pt"}, "a": {**OK_ENTRY, "extra": 1}}, 12, [12]),
    ],
    ids=["f4", "f6", "scalar", "two-empty", "metadata-and-extra-field"],
)  # fmt: skip
def test_what_safetensors_accepts_is_read(tmp_path, header, data, nbytes):
    from kvgen._deploy import weights

    path = _safetensors(tmp_path / "model.safetensors", header, data)
    assert [tensor.nbytes for tensor in weights.read(path)] == nbytes


# ------------------------------------------------------------------ C3: nesting in JSON inputs


def test_a_deeply_nested_header_is_a_positioned_refusal_not_a_recursion_error(tmp_path, capsys):
    # `{"a": ` is 6 characters; the 32nd "[" after it (column 7 + 31) opens depth 33
    header = b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    _safetensors(tmp_path / "model.safetensors", header)
    code, _, err = _plan(capsys, tmp_path)
    assert code == 2, err
    assert "internal error" not in err and "RecursionError" not in err
    assert (
        "model.safetensors: the header nests deeper than 32 levels (header line 1, column 38)"
        in err
    )


def test_a_deeply_nested_index_is_a_positioned_refusal(tmp_path, capsys):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text('{"weight_map":\n ' + "{" * 5000 + "}" * 5000 + "}")
    code, _, err = _plan(capsys, tmp_path)
    assert code == 2, err
    assert "internal error" not in err
    # line 2 is ` {{{...`: the object at column 2 is depth 2, so its 32nd brace (column 33)
    assert "model.safetensors.index.json: line 2, column 33: nests deeper than 32 levels" in err


def test_a_deeply_nested_config_beside_the_weights_is_only_not_named(tmp_path, capsys):
    # config.json only names the architecture in a refusal: a hostile one is skipped, unread.
    from tests.deploy.test_emit import llama_8b_shaped

    llama_8b_shaped(tmp_path)
    (tmp_path / "config.json").write_text("[" * 100_000)
    code, out, err = _plan(capsys, tmp_path)
    assert code == 0, err
    assert json.loads(out)["fields"]["kv_cache_memory_bytes"] == 526_351_232  # as test_emit


# ------------------------------------------------------------------ R1: reads stay where named


def test_a_link_in_the_weights_folder_is_never_followed_and_no_byte_is_echoed(tmp_path, capsys):
    # The review's reproducer: model.safetensors -> /proc/self/environ answered "header of
    # 7074940937528756307 bytes" (`SHELL=/b`). Now the link is refused unread.
    secret = tmp_path / "secret"
    secret.write_bytes(b"SHELL=/bin/bash\nTOKEN=abc\n")
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "model.safetensors").symlink_to(secret)
    code, _, err = _plan(capsys, folder)
    assert code == 2
    assert "model.safetensors: is a symbolic link; kvgen follows links only from a Hugging " in err
    assert str(int.from_bytes(b"SHELL=/b", "little")) not in err


def test_a_file_that_is_not_safetensors_never_has_its_bytes_echoed(tmp_path, capsys):
    secret = tmp_path / "model.safetensors"
    secret.write_bytes(b"SHELL=/bin/bash\nTOKEN=abc\n")
    code, _, err = _plan(capsys, secret)
    assert code == 2
    assert "its header length field is over 16777216 bytes" in err
    assert str(int.from_bytes(b"SHELL=/b", "little")) not in err and "SHELL" not in err
    code, _, err = _plan(capsys, "/proc/self/environ")  # named directly: refused by its name
    assert code == 2
    assert "/proc/self/environ: not a .safetensors file or an index (.json)" in err


@pytest.mark.parametrize(
    "shard",
    ["/etc/passwd", "../x.safetensors", "sub/x.safetensors", "x.bin", "..", ""],
)
def test_an_index_names_only_safetensors_files_beside_it(tmp_path, capsys, shard):
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": shard}}))
    code, _, err = _plan(capsys, tmp_path)
    assert code == 2
    assert f"shard {shard!r} is not a .safetensors file name beside the index" in err


def test_an_index_shard_that_is_a_link_is_refused(tmp_path, capsys):
    from tests.unit.test_weights import tiny_llama, write_safetensors

    outside = tmp_path / "elsewhere.safetensors"
    write_safetensors(outside, tiny_llama(32, kv_rows=1024))
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "model-00001-of-00001.safetensors").symlink_to(outside)
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"w": "model-00001-of-00001.safetensors"}})
    )
    code, _, err = _plan(capsys, folder)
    assert code == 2 and "is a symbolic link" in err


def _hf_snapshot(cache: Path, target: Path | None = None) -> Path:
    """A Hugging Face cache snapshot whose model.safetensors links to its blob (or ``target``)."""
    from tests.unit.test_weights import tiny_llama, write_safetensors

    repository = cache / "models--meta-llama--Llama-3.1-8B"
    snapshot = repository / "snapshots" / "0123456789abcdef"
    snapshot.mkdir(parents=True)
    (repository / "blobs").mkdir()
    blob = repository / "blobs" / "5f1e0c3a"
    write_safetensors(blob, tiny_llama(32, kv_rows=1024))
    link = Path("..", "..", "blobs", blob.name) if target is None else target
    (snapshot / "model.safetensors").symlink_to(link)
    return snapshot


def test_a_cache_snapshot_links_into_its_own_blobs_only(tmp_path, capsys):
    snapshot = _hf_snapshot(tmp_path / "hub")
    code, out, err = _plan(capsys, snapshot)
    assert code == 0, err
    assert json.loads(out)["fields"]["kv_cache_memory_bytes"] == 526_351_232  # as test_emit
    outside = tmp_path / "outside.safetensors"
    outside.write_bytes((snapshot / "model.safetensors").read_bytes())
    hostile = _hf_snapshot(tmp_path / "hub2", outside)
    code, _, err = _plan(capsys, hostile)
    assert code == 2 and "is a symbolic link" in err


def test_a_deployment_weights_path_obeys_the_same_rules(tmp_path, capsys):
    from kvgen._cli.main import main

    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "model.safetensors").symlink_to("/proc/self/environ")
    node = tmp_path / "node.toml"
    node.write_text(
        'gpu = "H100-80GB"\n\n[models.a]\nfamily = "llama3"\nmodel = "llama3_1_8b"\n'
        'engine = "vllm"\nweights = "w"\n'
    )
    assert main(["plan", "--deployment", str(node)]) == 2
    err = capsys.readouterr().err
    assert "node.toml:3:1: [models.a]: " in err and "is a symbolic link" in err


def test_import_hf_does_not_follow_a_cache_link_out_of_the_cache(tmp_path):
    pytest.importorskip("huggingface_hub")
    secret = tmp_path / "secret.json"
    secret.write_text('{"token": "abc"}')
    cache = tmp_path / "hub"
    repository = cache / "models--org--name"
    revision = "0123456789abcdef0123456789abcdef01234567"
    (repository / "refs").mkdir(parents=True)
    (repository / "refs" / "main").write_text(revision)
    (repository / "snapshots" / revision).mkdir(parents=True)
    (repository / "snapshots" / revision / "config.json").symlink_to(secret)
    done = subprocess.run(
        [sys.executable, "-m", "kvgen", "import-hf", "org/name"],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"},
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout
    assert "links outside its repository" in done.stderr
    assert "token" not in done.stdout + done.stderr


# ------------------------------------------------------------------ issue 32: whose weights


def test_a_checkpoint_of_another_model_is_refused_naming_both(tmp_path, capsys):
    # The review's case: an 8B checkpoint (32 layers) given for llama3_1_70b (80 layers).
    from tests.deploy.test_emit import llama_8b_shaped

    folder = llama_8b_shaped(tmp_path)
    (folder / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    code, _, err = _plan(capsys, folder, "llama3_1_70b")
    assert code == 2
    assert (
        "the LlamaForCausalLM checkpoint has 32 decoder layers (model.layers.0-31); the spec's "
        "model 'llama3_1_70b' has 80: these are not its weights"
    ) in err


def test_k_and_v_rows_are_checked_per_layer(tmp_path, capsys):
    # 32 layers (the 8B's count) but k_proj/v_proj of 512 rows: 4 KV heads x 128, where the
    # spec's llama3_1_8b has 8 x 128 = 1,024.
    from tests.unit.test_weights import tiny_llama, write_safetensors

    write_safetensors(tmp_path / "model.safetensors", tiny_llama(32, kv_rows=512))
    code, _, err = _plan(capsys, tmp_path)
    assert code == 2
    assert (
        "the checkpoint's layer 0 k_proj has 512 rows ('model.layers.0.self_attn.k_proj.weight'); "
        "the spec's model 'llama3_1_8b' gives that layer 1024 (KV heads x head dim)"
    ) in err


def test_consolidated_and_shards_without_an_index_are_counted_once(tmp_path):
    # Mistral's layout: consolidated.safetensors beside transformers' shards holds the same
    # weights. Counted once: the shards (10,519,680 B, test_emit's llama_8b_shaped), with the
    # rule said; the review counted both (29.92 GiB for an 8B).
    from kvgen._deploy import weights

    from tests.unit.test_weights import tiny_llama, write_safetensors

    shapes = tiny_llama(32, kv_rows=1024)
    first = {k: v for k, v in shapes.items() if ".layers.1" not in k}
    write_safetensors(tmp_path / "model-00001-of-00002.safetensors", first)
    write_safetensors(tmp_path / "model-00002-of-00002.safetensors",
                      {k: v for k, v in shapes.items() if k not in first})  # fmt: skip
    write_safetensors(tmp_path / "consolidated.safetensors", shapes)
    checkpoint = weights.load(tmp_path)
    assert sum(t.nbytes for t in checkpoint.tensors) == 10_519_680
    assert checkpoint.shards == (
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    )
    assert "consolidated.safetensors not counted (Mistral's copy of the same weights)" in (
        checkpoint.rule
    )
    (tmp_path / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(weights.WeightsError, match=r"shard model-00002-of-00002\.safetensors is"):
        weights.load(tmp_path)


def test_a_truncated_shard_says_so(tmp_path, capsys):
    from tests.deploy.test_emit import llama_8b_shaped

    folder = llama_8b_shaped(tmp_path)
    path = folder / "model.safetensors"
    os.truncate(path, path.stat().st_size - 1)
    code, _, err = _plan(capsys, folder)
    assert code == 2
    assert "model.safetensors: file shorter than its header says (its tensors end at byte" in err


def test_an_mtp_layer_and_a_vision_tower_are_not_decoder_layers():
    # DeepSeek-V3 stores its MTP module as layer L (eh_proj, enorm, ...); a vision tower has
    # layers of its own under another prefix. Neither is counted against the spec's layers.
    from kvgen._deploy import weights

    def tensor(name, rows=1024):
        return weights.Tensor(name, (rows, 64), rows * 128, "BF16")

    decoder = [tensor(f"model.layers.{i}.self_attn.k_proj.weight") for i in range(2)]
    mtp = [
        tensor("model.layers.2.eh_proj.weight"),
        tensor("model.layers.2.self_attn.k_proj.weight"),
    ]
    vision = [tensor(f"vision_tower.layers.{i}.self_attn.k_proj.weight", 32) for i in range(5)]
    checkpoint = weights.Checkpoint(decoder + mtp + vision, ("m.safetensors",), "one file")
    shapes = [weights.LayerShape(1024, 1024)] * 2
    weights.check_model(checkpoint, "m", shapes)  # fine: two decoder layers of 1,024 rows
    with pytest.raises(weights.WeightsError, match=r"has 2 decoder layers \(model\.layers\.0-1\)"):
        weights.check_model(checkpoint, "m", shapes * 2)
