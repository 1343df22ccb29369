"""The engine-release tooling of bench/engines/: the runners' stand-ins fail naming what a
release moved (standins.py), releases are values of the refresh (refresh_goldens.py), and the
0.33.0 -> 0.34.0 report read from the committed fixtures lists exactly what moved
(release_diff.py). No engine is needed: the report reads tests/fixtures/engines/."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINES = ROOT / "bench" / "engines"
FIXTURES = ROOT / "tests" / "fixtures" / "engines"


@pytest.fixture()
def bench(monkeypatch):
    """bench/engines/ importable as its scripts import each other (fresh modules each test)."""
    monkeypatch.syspath_prepend(str(ENGINES))
    for name in ("standins", "release_diff", "refresh_goldens"):
        sys.modules.pop(name, None)
    yield importlib
    for name in ("standins", "release_diff", "refresh_goldens"):
        sys.modules.pop(name, None)


@pytest.fixture()
def fake_engine(tmp_path, monkeypatch, bench):
    """An installed 'engine' 9.9.9 whose code reads a config field and borrows a property."""
    package = tmp_path / "site-packages" / "fakeengine"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('__version__ = "9.9.9"\n')
    (package / "reader.py").write_text(
        "def read(config):\n"
        "    return config.block_size + config.new_field\n"
        "class Config:\n"
        "    @property\n"
        "    def derived(self):\n"
        "        return self.other_field * 2\n"
    )
    monkeypatch.syspath_prepend(str(package.parent))
    for name in ("fakeengine", "fakeengine.reader"):
        sys.modules.pop(name, None)
    engine = importlib.import_module("fakeengine")
    standins = bench.import_module("standins")
    standins.bind(engine)
    return standins, importlib.import_module("fakeengine.reader")


def test_a_field_the_release_reads_that_the_stand_in_lacks_is_named_with_its_line(fake_engine):
    standins, reader = fake_engine
    config = standins.Fields("fakeengine.CacheConfig", block_size=16)
    with pytest.raises(standins.MovedAPI) as raised:
        reader.read(config)
    message = str(raised.value)
    # the field, the stand-in, the release and the engine's own line that read it (line 2)
    assert "'new_field'" in message
    assert "fakeengine.CacheConfig" in message
    assert "fakeengine 9.9.9" in message
    assert "fakeengine/reader.py:2" in message
    # an engine's getattr with a default is unaffected: the stand-in answers the default
    assert getattr(config, "optional_field", "default") == "default"


def test_a_borrowed_property_names_the_field_it_reads_not_itself(fake_engine):
    standins, reader = fake_engine
    borrowed = standins.engine_api(reader.Config, "derived", "a test stand-in")

    class Stub(standins.StandIn):
        stands_for = "fakeengine.Config"
        derived = borrowed

    with pytest.raises(standins.MovedAPI) as raised:
        _ = Stub().derived
    assert "'other_field'" in str(raised.value) and "reader.py:6" in str(raised.value)


def test_an_api_the_release_removed_is_named_with_the_stand_in_using_it(fake_engine):
    standins, reader = fake_engine
    with pytest.raises(standins.MovedAPI) as raised:
        standins.engine_api(reader.Config, "max_concurrent_batches", "StubVllmConfig")
    message = str(raised.value)
    assert "fakeengine 9.9.9 has no fakeengine.reader.Config.max_concurrent_batches" in message
    assert "StubVllmConfig" in message


def test_an_engine_is_a_name_and_a_release(bench):
    refresh = bench.import_module("refresh_goldens")
    newest = refresh.RELEASES["vllm"][-1]
    assert refresh.parse_engine("vllm") == ("vllm", newest)
    assert refresh.parse_engine("vllm==0.33.0") == ("vllm", "0.33.0")
    assert refresh.previous_release("vllm", "0.34.0") == "0.33.0"
    assert refresh.previous_release("vllm", "0.33.0") is None
    assert refresh.previous_release("vllm", "9.0.0") == newest  # the next one, not listed yet
    for bad in ("vlm==0.34.0", "vllm==latest", "vllm==0.34.0; rm -rf /"):
        with pytest.raises(SystemExit):
            refresh.parse_engine(bad)
    # the first release keeps the bare fixture names, a later one its own
    assert refresh.golden_path("vllm", "0.33.0").name == "vllm.json"
    assert refresh.golden_path("vllm", "0.34.0", "closed_loop").name == (
        "closed_loop_vllm-0.34.0.json"
    )


def test_a_new_release_gets_the_previous_requirements_with_the_pin_changed(
    bench, tmp_path, monkeypatch
):
    refresh = bench.import_module("refresh_goldens")
    monkeypatch.setattr(refresh, "HERE", tmp_path)
    monkeypatch.setattr(refresh, "ROOT", tmp_path)
    newest = refresh.RELEASES["vllm"][-1]
    (tmp_path / f"requirements-vllm-{newest}.txt").write_text(
        f"# vLLM {newest} and what it imports\nvllm=={newest}\ntransformers==5.24.0\n"
    )
    path = refresh.requirements_file("vllm", "9.0.0")
    assert (
        path.read_text() == "# vLLM 9.0.0 and what it imports\nvllm==9.0.0\ntransformers==5.24.0\n"
    )


def test_cases_are_compared_by_outcome_then_field(bench):
    diff = bench.import_module("release_diff")
    old = {
        "a": {"kv_tokens": 10, "num_blocks": 2},
        "b": {"kv_tokens": 10},
        "c": {"kv_tokens": 10},
        "d": {"refused": "old reason"},
    }
    new = {
        "a": {"kv_tokens": 12, "num_blocks": 2},
        "b": {"refused": "the release refuses it"},
        "c": {"kv_tokens": 10, "extra": False},
        "d": {"refused": "new reason"},
    }
    lines, moved = diff.compare_cases("t", old, new, frozenset({"extra"}))
    # a: a value moved; b: ran -> refused; d: refused for another reason; c: only a new field
    assert moved == 3
    assert lines[0] == "t: 4 cases in both, 3 moved (2 outcomes, 1 values)"
    assert "  field kv_tokens (moved): 1 cases (10 -> 12)" in lines
    assert "  field extra (new in the newer release): 1 cases (false)" in lines
    assert "  b: ran -> refused: the release refuses it" in lines
    assert not any(line.startswith("  c:") for line in lines)


def _golden(name):
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def test_the_033_to_034_report_lists_exactly_the_issues_changes(bench):
    diff = bench.import_module("release_diff")
    lines = diff.report("vllm", "0.33.0", "0.34.0", "0.33.0")
    facts = {line.split(":")[0].strip() for line in lines if line.startswith("  ")}
    unchanged = {line.split(":")[0].strip() for line in lines if ": unchanged" in line}
    at = lines.index(next(line for line in lines if line.startswith("goldens")))
    moved_facts = {f for f in facts if f in _golden("release_facts_vllm.json")["releases"]
                   ["0.34.0"]["facts"]} - unchanged  # fmt: skip
    # issue 30: the block size, the memory default under the extensible KV cache (and what
    # kv_cache_memory_bytes / num_gpu_blocks_override turn off), PARD and the heterogeneous
    # vocabulary refused; Mamba alignment and the MLA fallback move no shipped model
    assert moved_facts == {
        "default_block_size", "default_launch_block_size", "gpu_memory_utilization_default",
        "default_launch_gpu_memory_utilization", "default_launch_extensible_kv_cache",
        "kv_cache_memory_bytes_extensible_kv_cache", "num_gpu_blocks_override_extensible_kv_cache",
        "parallel_drafting", "use_heterogeneous_vocab", "mamba_state_alignment",
        "sliding_window_mla_fallback",
    }  # fmt: skip
    text = "\n".join(lines[:at])
    assert "default_block_size: value 16 -> 64" in text
    assert "gpu_memory_utilization_default: value 0.92 -> null" in text
    assert "default_launch_gpu_memory_utilization: value 0.92 -> 1.0" in text
    assert "parallel_drafting is only supported by the dflash and dspark methods" in text
    assert "use_heterogeneous_vocab: Unexpected keyword argument" in text
    assert text.count("moves no shipped model") == 2

    # goldens: the moved cases are exactly the PARD and heterogeneous-vocabulary cases, each
    # now refused; no number moved in any other case
    old, new = _golden("vllm.json")["cases"], _golden("vllm-0.34.0.json")["cases"]
    expected = sum(
        c["inputs"]["speculative"].startswith("pard")
        or bool(c["inputs"].get("heterogeneous_vocab"))
        for c in old
    )
    golden_line = lines[at]
    assert golden_line == (
        "goldens (vllm.json -> vllm-0.34.0.json): 782 cases in both, "
        f"{expected} moved ({expected} outcomes, 0 values)"
    )
    assert all("refused" in c["engine_output"] for c in new
               if c["inputs"]["speculative"].startswith("pard")
               or c["inputs"].get("heterogeneous_vocab"))  # fmt: skip

    # closed loop: 3 of 235 refused by 0.34.0 (PARD on llama3, the two heterogeneous-vocabulary
    # launches), the other 232 the same; kvgen emitted the same settings for both
    loop = next(line for line in lines if line.startswith("closed loop (closed_loop_vllm.json"))
    assert loop.endswith("235 cases in both, 3 moved (3 outcomes, 0 values)")
    refused = sorted(line.split(":")[0].strip() for line in lines if ": ran -> refused" in line
                     and "/p16/" in line)  # fmt: skip
    assert refused == [
        "gemma3/gemma3_27b/p16/s8192/tp1/draft_1b/heterogeneous_vocab",
        "llama3/llama3_1_8b/p16/s8192/tp1/pard4",
        "qwen2_5/qwen2_5_7b/p16/s8192/tp1/draft_0_5b/heterogeneous_vocab",
    ]
    # kvgen models 0.34.0 (issue 30): it refuses the same 3 plans itself, in the release's
    # words (their fields are the fallback emission the engine was given); every other
    # setting kvgen emitted is the same for both releases (its refusals compared with the
    # release they name left out)
    assert (
        "closed loop, the settings kvgen emitted: 235 cases in both, 3 moved (0 outcomes, 3 values)"
        in lines
    )
    emitted = lines[
        lines.index(next(x for x in lines if x.startswith("closed loop, the settings"))) :
    ]
    moved = sorted(x.split(":")[0].strip() for x in emitted if "kvgen_exit 0 -> 2" in x)
    assert moved == refused
