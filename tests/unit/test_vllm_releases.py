"""vLLM's releases as values (issue 30): what each release modelled differs in is its own data,
checked against what that release's code gave (tests/fixtures/engines/release_facts_vllm.json,
written by ``bench/engines/refresh_goldens.py --engine vllm==RELEASE`` from the release's own
classes, each fact with the source line that decides it).

Each test is parametrised by the releases the facts file records, not by the registry's: a
release recorded but missing from ``kvgen.sizing.engines_registry`` (or modelled with other data)
fails.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest
from kvgen._cli.main import main
from kvgen._deploy.remote_code import vllm_hf_overrides
from kvgen._engines import _vllm
from kvgen._engines.capacity import engine_capacity
from kvgen._model.engine_rows import engine_tables
from kvgen.sizing.engines_core import NotModelled
from kvgen.sizing.engines_registry import VLLM, default_release, release, releases_of

from tests.unit.test_engines import GIB40, family

ROOT = Path(__file__).resolve().parents[2]
FACTS = json.loads(
    (ROOT / "tests/fixtures/engines/release_facts_vllm.json").read_text(encoding="utf-8")
)["releases"]
RELEASES = sorted(FACTS, key=lambda v: tuple(map(int, v.split("."))))
SHIPPED = sorted(p.stem for p in (ROOT / "schema" / "families").glob("*.yaml"))
KW = {"max_seq_len": 8192, "max_num_tokens": 8192}


def fact(version: str, name: str) -> dict:
    found: dict = FACTS[version]["facts"][name]
    return found


def engine_words(message: str) -> str:
    """The engine's own words of a recorded refusal, pydantic's prefix left out."""
    return message.removeprefix("ValidationError: ").removeprefix("Value error, ")


@cache
def family_of(model: str) -> str:
    for name in SHIPPED:
        if any(m.name == model for m in family(name).models):
            return name
    raise AssertionError(f"no shipped family has {model}")


def test_every_release_recorded_is_modelled_and_plain_vllm_is_the_newest() -> None:
    assert [r.version for r in releases_of(VLLM)] == RELEASES
    assert default_release(VLLM) is release("vllm") is release(f"vllm=={RELEASES[-1]}")


@pytest.mark.parametrize("version", RELEASES)
def test_the_release_default_block_is_its_own(version: str) -> None:
    # vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE: 0.33.0 16, 0.34.0 64.
    assert release(f"vllm=={version}").block_size == fact(version, "default_block_size")["value"]


@pytest.mark.parametrize("version", RELEASES)
def test_each_release_default_block_answer_equals_its_default_launch(version: str) -> None:
    # What a launch without --block-size resolves per model (EngineArgs -> VllmConfig and the
    # platform's block-size update, run by the release on the H100 stand-in): the release's
    # default block, grown on a Mamba hybrid until an attention page holds a state (0.34.0:
    # nemotron_h_8b 1,088 = 17 x 64, as 1,040 = 65 x 16 on 0.33.0). kvgen's plan at no block
    # size has that block, and its answer is the answer at the release's default block.
    found = release(f"vllm=={version}")
    launched = fact(version, "default_launch_block_size")["value"]
    answered = 0
    for model, block in sorted(launched.items()):
        name = family_of(model)
        fam = family(name)
        if isinstance(block, str):  # the release refuses the model; so does kvgen
            assert block.startswith("refused: ")
            with pytest.raises(ValueError, match=re.escape(found.named) + " cannot run"):
                engine_capacity(fam, model, GIB40, engine=found.spelling, **KW)
            continue
        if vllm_hf_overrides(engine_tables(fam)[model].layers) is not None:
            # A bare launch reads config.json through transformers' class, which rewrites a
            # field of this model (Ling 2.5 linear's head_dim: another state, block 256); kvgen's
            # launch settings carry hf_overrides (kvgen._deploy.remote_code), whose launch the
            # closed loop checks.
            continue
        plan = _vllm.vllm_plan(fam, fam.model(model), block_size=found.block_size)
        assert plan.block_size == block, model
        kw = {**KW, "max_seq_len": min(4096, plan.native_max_seq_len)}
        default = engine_capacity(fam, model, GIB40, engine=found.spelling, **kw)
        given = engine_capacity(
            fam, model, GIB40, engine=found.spelling, block_size=found.block_size, **kw
        )
        assert default == given, model
        answered += 1
    # 25 models launched: Mllama and OpenELM refused by both releases, Ling 2.5 with overrides
    assert (len(launched), answered) == (25, 22)


def test_the_default_block_moves_the_answer_as_the_release_does() -> None:
    # nemotron_h_8b (the largest move, 4.4%): its attention block is 1,040 tokens at
    # 0.33.0's default (16 grown to hold a Mamba state) and 1,088 at 0.34.0's (64 grown). kvgen
    # answers each release at its own: the two answers differ, and each equals the answer at
    # the block the release launches with.
    fam = family("nemotron_h")
    old, new = (engine_capacity(fam, "nemotron_h_8b", GIB40, engine=e, **KW)
                for e in ("vllm==0.33.0", "vllm==0.34.0"))  # fmt: skip
    assert old != new
    assert old == engine_capacity(
        fam, "nemotron_h_8b", GIB40, engine="vllm==0.34.0", block_size=16, **KW
    )


PARD = [("llama3", "llama3_1_8b", "pard4"), ("qwen2_5", "qwen2_5_7b", "pard4"),
        ("qwen3", "qwen3_8b", "pard4")]  # fmt: skip


@pytest.mark.parametrize(("name", "model", "profile"), PARD)
def test_pard_is_refused_by_0_34_0_in_its_own_words(name: str, model: str, profile: str) -> None:
    said = fact("0.34.0", "parallel_drafting")
    assert said["value"] == "refused" and fact("0.33.0", "parallel_drafting")["value"] == "accepted"
    fam = family(name)
    if not any(p.name == profile and p.applies_to(model) for p in fam.speculative):
        pytest.skip(f"{profile} does not apply to {model}")
    with pytest.raises(ValueError) as err:
        engine_capacity(fam, model, GIB40, engine="vllm==0.34.0", speculative=profile, **KW)
    text = str(err.value)
    assert text.startswith(f"vLLM 0.34.0 refuses speculative '{profile}' (pard): ")
    assert engine_words(said["message"]) in text
    # 0.33.0 runs it (its goldens size it; Qwen2.5's PARD draft has another vocabulary, which
    # 0.33.0 refuses for that), and plain vllm is 0.34.0
    try:
        engine_capacity(fam, model, GIB40, engine="vllm==0.33.0", speculative=profile, **KW)
    except NotModelled as exc:
        assert (name, exc.reason) == ("qwen2_5", "vllm_draft_vocab")
    with pytest.raises(ValueError, match=r"vLLM 0\.34\.0 refuses speculative"):
        engine_capacity(fam, model, GIB40, engine="vllm", speculative=profile, **KW)


def test_heterogeneous_vocab_is_refused_by_0_34_0_in_its_own_words() -> None:
    said = fact("0.34.0", "use_heterogeneous_vocab")
    assert said["value"] == "refused"
    fam = family("qwen2_5")
    kw = {**KW, "speculative": "draft_0_5b", "heterogeneous_vocab": True}
    with pytest.raises(ValueError) as err:
        engine_capacity(fam, "qwen2_5_7b", GIB40, engine="vllm==0.34.0", **kw)
    assert str(err.value).startswith("vLLM 0.34.0 refuses heterogeneous_vocab: ")
    assert engine_words(said["message"]) in str(err.value)
    engine_capacity(fam, "qwen2_5_7b", GIB40, engine="vllm==0.33.0", **kw)


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["-q", "plan", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_plan_emit_refuses_pard_and_heterogeneous_vocab_on_0_34_0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["--gpu-memory", "40GiB", "--max-seq-len", "8192"]
    code, out, err = _plan(capsys, "llama3", "llama3_1_8b", *base, "--speculative", "pard4",
                           "--emit", "vllm==0.34.0")  # fmt: skip
    assert code == 2 and not out
    assert engine_words(fact("0.34.0", "parallel_drafting")["message"]) in err
    code, out, _ = _plan(capsys, "llama3", "llama3_1_8b", *base, "--speculative", "pard4",
                         "--emit", "vllm==0.33.0", "--format", "json")  # fmt: skip
    assert code == 0 and json.loads(out)["fields"]["speculative_config"]["parallel_drafting"]
    code, out, err = _plan(capsys, "qwen2_5", "qwen2_5_7b", *base, "--speculative",
                           "draft_0_5b", "--heterogeneous-vocab", "--emit", "vllm")  # fmt: skip
    assert code == 2 and not out
    assert engine_words(fact("0.34.0", "use_heterogeneous_vocab")["message"]) in err


def test_emitted_block_is_the_release_default_and_lands_on_the_default_answer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Without --block-size each release's launch settings pass its own default block, and the
    # blocks they fix are the default answer's: llama3_1_8b, 40 GiB, a token 32 layers x 2 x
    # 8 heads x 128 x 2 B = 131,072 B: 0.33.0 blocks of 16 = 2 MiB, 20,480 of them; 0.34.0
    # blocks of 64 = 8 MiB, 5,120.
    fam = family("llama3")
    for engine, block, blocks in (("vllm==0.33.0", 16, 20_480), ("vllm==0.34.0", 64, 5_120),
                                  ("vllm", 64, 5_120)):  # fmt: skip
        argv = ["--gpu-memory", "40GiB", "--max-seq-len", "8192", "--emit", engine]
        code, out, _ = _plan(capsys, "llama3", "llama3_1_8b", *argv, "--format", "json")
        assert code == 0
        printed = json.loads(out)
        assert printed["fields"]["block_size"] == block
        assert printed["fields"]["num_gpu_blocks_override"] == blocks
        assert printed["version"] == release(engine).shown
        answer = engine_capacity(fam, "llama3_1_8b", GIB40, engine=engine, **KW)
        assert answer.num_blocks == blocks


def test_a_hardware_plan_uses_the_release_memory_default_and_says_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # H100-80GB: 85,520,809,984 B (81,559 MiB). 0.34.0: gpu_memory_utilization None resolves to
    # 1.0 under the extensible KV cache (its default on CUDA): ceil(85,520,809,984 x 1.0) -
    # 16 GiB weights - 4 GiB reserve = 64,045,973,504 B. 0.33.0: ceil(x 0.92) =
    # 78,679,145,186 - 21,474,836,480 = 57,204,308,706 B; 0.34.0 plans 6.37 GiB more.
    assert fact("0.34.0", "default_launch_gpu_memory_utilization")["value"] == 1.0
    assert fact("0.34.0", "default_launch_extensible_kv_cache")["value"] is True
    assert fact("0.33.0", "default_launch_gpu_memory_utilization")["value"] == 0.92
    base = ["--gpu", "H100-80GB", "--weights", "16GiB", "--max-seq-len", "8192"]
    budgets = {}
    for engine in ("vllm==0.33.0", "vllm==0.34.0"):
        code, out, _ = _plan(capsys, "llama3", "llama3_1_8b", *base, "--emit", engine,
                             "--format", "json")  # fmt: skip
        assert code == 0
        printed = json.loads(out)
        budgets[engine] = printed["fields"]["kv_cache_memory_bytes"]
        notes = " ".join(printed["notes"])
        assert ("extensible KV cache" in notes) == (engine == "vllm==0.34.0")
    assert budgets == {"vllm==0.33.0": 57_204_308_706, "vllm==0.34.0": 64_045_973_504}
    code, out, _ = _plan(capsys, "llama3", "llama3_1_8b", *base, "--emit", "vllm")
    assert code == 0
    assert "gpu_memory_utilization 1.0 (engine default" in out
    assert "extensible KV cache" in out
    # what kv_cache_memory_bytes and num_gpu_blocks_override turn off, as 0.34.0 says it
    for setting in ("kv_cache_memory_bytes", "num_gpu_blocks_override"):
        recorded = fact("0.34.0", f"{setting}_extensible_kv_cache")
        assert recorded["value"] is False
    assert "kv_cache_memory_bytes and num_gpu_blocks_override turn off" in out
