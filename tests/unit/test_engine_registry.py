"""The engine registry (issue 28, "engines as values"): one value per engine and release, read
as ``NAME[==VERSION]``, and every per-engine part found through the value's hooks."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from kvgen._engines.capacity import engine_capacity
from kvgen._generate.sizing_context import bound_module
from kvgen._spec.loader import load_family
from kvgen.sizing import engines_registry as registry
from kvgen.sizing.engines_registry import (
    ASKED,
    ENGINES,
    RELEASES,
    SGLANG,
    SGLANG_0_5_23,
    TRTLLM,
    TRTLLM_38198E34,
    TRTLLM_EARLY_2026,
    VLLM,
    VLLM_0_33_0,
    VLLM_0_34_0,
    default_release,
    newest,
    release,
    releases_of,
)

ROOT = Path(__file__).resolve().parents[2]
GIB = 1 << 30
KW = {"max_seq_len": 8192, "max_num_tokens": 8192}


def test_a_name_alone_is_the_default_release_and_a_version_selects_one():
    # vLLM: the newest release modelled (issue 30); an older one by its version
    assert release("vllm") is VLLM_0_34_0 is release("vllm==0.34.0") is newest(VLLM)
    assert release("vllm==0.33.0") is VLLM_0_33_0 is releases_of(VLLM)[0]
    assert release("sglang") is SGLANG_0_5_23 is release("sglang==0.5.23") is newest(SGLANG)
    # TensorRT-LLM's default is its newest release modelled, 38198e34 (issue 31); the
    # early-2026 revision is selected by name.
    assert release("trtllm") is TRTLLM_38198E34 is release("trtllm==38198e34") is newest(TRTLLM)
    assert release("trtllm==early-2026") is TRTLLM_EARLY_2026
    assert TRTLLM_38198E34 is not TRTLLM_EARLY_2026
    for engine in ENGINES:
        assert release(engine.name) is default_release(engine)


def test_no_release_of_trtllm_is_told_apart_by_its_name():
    # What differs between the revisions is a field of the release, read by the planners.
    assert (TRTLLM_EARLY_2026.per_request_split, TRTLLM_38198E34.per_request_split) == (
        False,
        True,
    )
    # every answer names its revision (issue 31): the words output prints differ
    assert "early-2026" in TRTLLM_EARLY_2026.shown and "early-2026" in TRTLLM_EARLY_2026.named
    assert "38198e34" in TRTLLM_38198E34.shown and "38198e34" in TRTLLM_38198E34.named


def test_38198e34_is_answered_alike_in_both_layers():
    # Issue 31: on 5af0688 both layers raised NotModelled naming --emit. Now each answers the
    # tokens of the pools 38198e34 builds with the pool_ratio --emit writes: gemma3_27b at
    # 40 GiB, S 131072: 6,816 full pages of 64 tokens = 436,224 tokens (docs/deploy.md), 3.328
    # requests of 131,072 tokens, 6,816 blocks; the same through trtllm (its default).
    from generated.gemma3 import sizing

    family = load_family(ROOT / "schema" / "families" / "gemma3.yaml")
    kw = {"max_seq_len": 131072, "max_num_tokens": 8192}
    for engine in ("trtllm==38198e34", "trtllm", "trtllm-v2"):
        ours = sizing.engine_capacity("gemma3_27b", 40 * GIB, engine=engine, **kw)
        assert ours == engine_capacity(family, "gemma3_27b", 40 * GIB, engine=engine, **kw)
        assert (ours.kv_tokens, ours.num_blocks, ours.max_concurrency) == (
            436_224, 6_816, 436_224 / 131_072,
        )  # fmt: skip


def test_trtllm_v2_is_an_alias_of_trtllm_and_output_keeps_its_label():
    assert release("trtllm-v2") is release("trtllm") is release("trtllm-v2==38198e34")
    assert TRTLLM.label == "trtllm-v2"  # c2a37ec's printed name, kept byte-identical


def test_an_unknown_release_is_refused_naming_the_releases_modelled():
    with pytest.raises(ValueError) as err:
        release("vllm==0.35.0")
    assert str(err.value) == (
        "engine vllm release '0.35.0' is not modelled; releases modelled: 0.33.0, 0.34.0 "
        "(default: 0.34.0)"
    )
    with pytest.raises(ValueError, match="engine trtllm release 'v3' is not modelled"):
        release("trtllm-v2==v3")


@pytest.mark.parametrize("text", ["tgi", "vllm ", "sglang ==0.5.23", "", None, 3, ["vllm"]])
def test_an_unknown_name_is_a_value_error_listing_the_engines(text: object):
    with pytest.raises(ValueError) as err:
        release(text)
    assert str(err.value).startswith(
        "engine must be one of trtllm, vllm, sglang (or trtllm-v2, an alias), as NAME or "
        f"NAME==VERSION; got {text!r}"
    )


def test_a_near_miss_gets_a_suggestion():
    with pytest.raises(ValueError, match=r"got 'vlm' \(did you mean 'vllm'\?\)"):
        release("vlm")


def test_every_release_is_of_a_registered_engine_and_every_engine_has_one():
    assert {r.engine for r in RELEASES} == set(ENGINES)
    assert len({r.spelling for r in RELEASES}) == len(RELEASES)
    names = [n for e in ENGINES for n in (e.name, *e.aliases)]
    assert len(names) == len(set(names))


@pytest.mark.parametrize(
    ("module", "role"),
    [
        ("kvgen.sizing.engines_core", "capacity"),
        ("kvgen._engines.capacity", "capacity"),
        ("kvgen._engines._terms", "terms"),
        ("kvgen._deploy.emit", "launch"),
    ],
)
def test_every_hook_names_a_function_of_its_layer(module: str, role: str):
    namespace = vars(importlib.import_module(module))
    for engine in ENGINES:
        assert callable(namespace[getattr(engine.hooks, role)]), (engine, role)


def test_every_name_of_a_release_answers_alike_in_a_generated_module():
    from generated.gemma3 import sizing

    for engine in ENGINES:
        version = default_release(engine).version
        names = [n for e in (engine.name, *engine.aliases) for n in (e, f"{e}=={version}")]
        answers = {sizing.engine_capacity("gemma3_27b", 40 * GIB, engine=n, **KW) for n in names}
        assert len(answers) == 1, (engine, answers)


def test_a_generated_module_refuses_an_unknown_release_as_the_registry_does():
    from generated.gemma3 import sizing

    with pytest.raises(ValueError, match=r"engine vllm release '0\.35\.0' is not modelled"):
        sizing.engine_capacity("gemma3_27b", 40 * GIB, engine="vllm==0.35.0", **KW)


def test_the_default_page_is_the_releases_own(monkeypatch: pytest.MonkeyPatch):
    # A release is a value: one whose default block is 64 (what vLLM 0.34.0 changes, issue 30)
    # answers a default-block question as its predecessor answers block_size=64, in the
    # generated runtime and from the spec alike. Gemma 3 27B, vLLM: 62 layers in 7 groups of
    # 10 (52 sliding, 10 full, 8 padding), 16 KV heads x 128 x 2 (K, V) x 2 B = 8,192 B per
    # token and layer: a 64-token block is 10 x 64 x 8,192 = 5,242,880 B; 40 GiB holds 8,192
    # of them, one the null block.
    later = VLLM_0_33_0._replace(version="9.9", shown="9.9", named="vLLM 9.9", block_size=64)
    monkeypatch.setitem(registry.SPELLINGS, "vllm==9.9", later)
    module = bound_module(load_family(ROOT / "schema" / "families" / "gemma3.yaml"))
    module._derive_engines()  # its hooks by name, as at bind
    by_release = module.engine_capacity("gemma3_27b", 40 * GIB, engine="vllm==9.9", **KW)
    by_block = module.engine_capacity(
        "gemma3_27b", 40 * GIB, engine="vllm==0.33.0", block_size=64, **KW
    )
    assert by_release == by_block
    assert by_release.num_blocks == 40 * GIB // 5_242_880 == 8_192
    default = module.engine_capacity("gemma3_27b", 40 * GIB, engine="vllm==0.33.0", **KW)
    assert default.num_blocks == 40 * GIB // (10 * 16 * 8_192) == 32_768
    family = load_family(ROOT / "schema" / "families" / "gemma3.yaml")
    spec_side = engine_capacity(family, "gemma3_27b", 40 * GIB, engine="vllm==9.9", **KW)
    assert spec_side == by_release


def test_engines_without_pipeline_parallelism_say_so_whatever_the_name_given():
    from generated.llama3 import sizing

    for engine in (VLLM, SGLANG):
        for name in (engine.name, default_release(engine).spelling):
            with pytest.raises(ValueError, match="pipeline parallelism is not modelled for engine"):
                sizing.engine_capacity("llama3_1_8b", 40 * GIB, engine=name, pp_size=2, **KW)
    assert TRTLLM.pipeline_parallel
    assert sizing.engine_capacity("llama3_1_8b", 40 * GIB, engine="trtllm", pp_size=2, **KW)


def test_a_release_refuses_a_setting_in_its_own_words(monkeypatch: pytest.MonkeyPatch):
    # What issue 30's vLLM 0.34.0 does with use_heterogeneous_vocab, as a value: the release
    # names the keyword it refuses and its message; both engine_capacity answer with it, and
    # the release before it still takes the setting (Qwen2.5-7B drafted by 0.5B, whose vocab
    # sizes differ: 151,936 and 152,064).
    words = "Unexpected keyword argument 'use_heterogeneous_vocab'"
    later = VLLM_0_33_0._replace(
        version="9.9", named="vLLM 9.9", refuses=(("heterogeneous_vocab", words),)
    )
    monkeypatch.setitem(registry.SPELLINGS, "vllm==9.9", later)
    spec = load_family(ROOT / "schema" / "families" / "qwen2_5.yaml")
    module = bound_module(spec)
    module._derive_engines()
    kw = {**KW, "speculative": "draft_0_5b", "heterogeneous_vocab": True}
    message = f"vLLM 9.9 refuses heterogeneous_vocab: {words}"
    with pytest.raises(ValueError) as generated:
        module.engine_capacity("qwen2_5_7b", 40 * GIB, engine="vllm==9.9", **kw)
    with pytest.raises(ValueError) as from_spec:
        engine_capacity(spec, "qwen2_5_7b", 40 * GIB, engine="vllm==9.9", **kw)
    assert str(generated.value) == str(from_spec.value) == message
    old = module.engine_capacity("qwen2_5_7b", 40 * GIB, engine="vllm==0.33.0", **kw)
    assert old.num_blocks > 0
    vocab = tuple(name == "heterogeneous_vocab" for name in ASKED)  # only it set
    assert VLLM_0_33_0.refusal(vocab) is None


def test_asked_is_the_order_every_hook_and_engine_capacity_take_a_call_in() -> None:
    # Release.refusal reads a call's values by their position in ASKED: the runtime's
    # engine_capacity builds that tuple and hands it to its hook after the release; from the
    # spec, kvgen.engine_capacity forwards to that same function, whose hooks are the spec's
    # with the family bound first. ASKED, both signatures and every hook's must agree.
    import inspect

    from kvgen._engines import capacity
    from kvgen.sizing import engines_core

    for function in (engines_core.engine_capacity, capacity.engine_capacity):
        names = tuple(inspect.signature(function).parameters)
        assert tuple(n for n in names if n not in ("engine", "family")) == ASKED
    for engine in ENGINES:
        for module, before in ((engines_core, ("found",)), (capacity, ("family", "found"))):
            names = tuple(inspect.signature(getattr(module, engine.hooks.capacity)).parameters)
            assert names == (*before, *ASKED), (engine.name, module.__name__)
