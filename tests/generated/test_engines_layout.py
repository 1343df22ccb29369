"""The engine plans built from a per-(model, profile) layout (``vllm_layout``,
``sglang_layout``): what a model and profile alone decide is read once, and a plan for a new
block size, tp or mode does only its own arithmetic. These tests hold the shortcuts to the
general rule: a hybrid whose rows each make their own groups (``VllmLayout.grouping``) plans
exactly as the general grouping does, a row split in two plans as one, and the layouts a
generated module keeps are only those of a model and profile it has checked.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from types import ModuleType

import pytest
from kvgen.sizing import engines_vllm
from kvgen.sizing.engines_rows import EngineLayer, EngineModel
from kvgen.sizing.engines_vllm import VllmGroups

from tests.sizing_support import import_generated

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p.parent.name for p in (ROOT / "generated").glob("*/sizing.py"))
GIB40 = 40 << 30


@cache
def generated(name: str) -> ModuleType:
    return import_generated(ROOT / "generated" / name / "sizing.py", f"_kvgen_layout_{name}")


def _general(layout: engines_vllm.VllmLayout) -> engines_vllm.VllmLayout:
    """The same layout with its grouping left to each plan (the general bucket rule)."""
    values = dict(zip(layout._fields, layout._values(), strict=True))
    values["grouping"] = None
    return engines_vllm.VllmLayout(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", SHIPPED)
def test_precomputed_grouping_plans_as_the_general_grouping(name: str) -> None:
    module = generated(name)
    static = 0
    for entry in module.ENGINE_MODELS.values():
        for profile in ("none", *entry.drafts):
            try:
                layout = engines_vllm.vllm_layout(entry, profile)
            except ValueError:  # NotModelled, or no cached layers: no plan to compare
                continue
            if layout.grouping is None:
                continue
            static += 1
            general = _general(layout)
            for block_size in (16, 32, 64, 128):
                for tp_size in (1, 2, 4, 8):
                    for mode in ("align", "none"):
                        args = (block_size, tp_size, mode, "flashinfer", None)
                        try:
                            want = engines_vllm.vllm_plan_at(general, *args)
                        except ValueError as exc:  # vLLM refuses this tp: both say why
                            with pytest.raises(ValueError) as got:
                                engines_vllm.vllm_plan_at(layout, *args)
                            assert str(got.value) == str(exc)
                            continue
                        assert engines_vllm.vllm_plan_at(layout, *args) == want
    hybrids = {"cohere2", "gemma2", "gemma3", "gemma3n", "gpt_oss", "granite4", "jamba"}
    hybrids |= {"llama4_maverick", "llama4_scout", "nemotron_h", "qwen3_next", "falcon_h1"}
    hybrids |= {"kimi_linear"}  # KDA (Mamba-form state) and MLA layers
    hybrids |= {"ling_linear"}
    assert (static > 0) == (name in hybrids)


def _sliding_model(rows: tuple[EngineLayer, ...]) -> EngineModel:
    return EngineModel(max_seq_len=131072, layers=rows, drafts={})


def test_a_row_split_in_two_plans_as_one_row() -> None:
    # 40 sliding layers (window 1024) and 4 full, 8 KV heads x (128 + 128) x 2 B = 4,096 B a
    # token each: pages of 16 x 4,096 = 65,536 B, all equal. Kinds of 40 and 4 layers
    # (40 >= 1.5 x 4): groups of 4, 10 sliding groups and 1 full, no padding; a block holds
    # the widest group's 4 pages = 262,144 B. Split into 20 + 20 sliding rows around the full
    # one, the rows share kind and shape: the general grouping adds them up again.
    def sliding(layers: int) -> EngineLayer:
        return EngineLayer("sliding", layers, 8, 128, 128, window=1024, dtype="bf16")

    full = EngineLayer("full", 4, 8, 128, 128, dtype="bf16")
    split = _sliding_model((sliding(20), full, sliding(20)))
    whole = _sliding_model((sliding(40), full))
    assert engines_vllm.vllm_layout(split).grouping is None
    plan = engines_vllm.vllm_plan(split, block_size=16)
    assert plan == engines_vllm.vllm_plan(whole, block_size=16)
    assert plan.groups == (
        VllmGroups("sliding", 1024, 16, 10, 4),
        VllmGroups("full", None, 16, 1, 4),
    )
    assert (plan.bytes_per_block, plan.group_size, plan.padding_layers) == (262144, 4, 0)
    # 40 GiB // 262,144 = 163,840 blocks. A request at 8,192 (N 8,192, async: 16,384 in
    # flight): full 8,192 / 16 = 512 blocks; each sliding group min(1,023 + 16,384, 8,192) / 16
    # + 1 = 513, x 10 = 5,130; 5,642 blocks = 1,479,016,448 B. 163,840 / 5,642 = 29.0394
    # requests, x 8,192 = 237,890 tokens.
    got = engines_vllm.vllm_capacity(plan, GIB40, 8192, 8192)
    assert (got.kv_tokens, got.request_bytes, got.num_blocks) == (237890, 1479016448, 163840)
    assert round(got.max_concurrency, 3) == 29.039


def test_a_draft_layer_like_the_targets_joins_its_row() -> None:
    # qwen3_next's MTP drafter is one full-attention layer with the target's heads: one spec
    # for vLLM, so the layout keeps one row of 13 full layers and its grouping precomputed.
    entry = generated("qwen3_next").ENGINE_MODELS["qwen3_next_80b_a3b"]
    layout = engines_vllm.vllm_layout(entry, "mtp2")
    full = [row for row in layout.rows if row[0] == "full"]
    assert [row[3] for row in full] == [13]
    assert layout.grouping is not None


def test_a_module_keeps_layouts_only_of_models_and_profiles_it_checked() -> None:
    kwargs = {"max_seq_len": 8192, "max_num_tokens": 8192}
    vision = generated("llama3_2_vision")
    vision._VLLM_LAYOUTS.clear()
    for _ in range(2):  # a model vLLM cannot run: the same refusal each time, nothing kept
        with pytest.raises(vision.NotModelled, match="cannot run Mllama"):
            vision.engine_capacity("llama3_2_11b_vision", GIB40, engine="vllm", **kwargs)
    assert vision._VLLM_LAYOUTS == {}
    module = generated("llama3")
    module._VLLM_LAYOUTS.clear()
    module._SGLANG_LAYOUTS.clear()
    for engine in ("vllm", "sglang"):  # unhashable, unknown: named, nothing kept
        with pytest.raises(ValueError, match="model must be one of"):
            module.engine_capacity(["llama3_1_8b"], GIB40, engine=engine, **kwargs)
        with pytest.raises(ValueError, match="speculative must be one of"):
            module.engine_capacity("llama3_1_8b", GIB40, engine=engine, speculative="x", **kwargs)
    assert module._VLLM_LAYOUTS == module._SGLANG_LAYOUTS == {}
    first = module.engine_capacity("llama3_1_8b", GIB40, engine="vllm", block_size=16, **kwargs)
    layout = module._VLLM_LAYOUTS[("llama3_1_8b", "none")]
    module._VLLM_PLANS.clear()
    # A plan the module has not seen (another block size, tp) reads the kept layout.
    module.engine_capacity("llama3_1_8b", GIB40, engine="vllm", block_size=32, tp_size=2, **kwargs)
    assert module._VLLM_LAYOUTS[("llama3_1_8b", "none")] is layout
    assert list(module._VLLM_LAYOUTS) == [("llama3_1_8b", "none")]
    again = module.engine_capacity("llama3_1_8b", GIB40, engine="vllm", block_size=16, **kwargs)
    assert again == first
    module.engine_capacity("llama3_1_8b", GIB40, engine="sglang", **kwargs)
    assert list(module._SGLANG_LAYOUTS) == [("llama3_1_8b", "none")]


def test_binding_builds_the_layout_of_every_pair_an_engine_answers_and_no_other() -> None:
    # A fresh module: bind built, before any call, one layout per (model, profile) each engine
    # answers, so a first plan is only its arithmetic; a pair an engine refuses has none and
    # its call raises the engine's refusal (vLLM 0.33.0 cannot run Mllama; SGLang answers no
    # draft-model profile of llama3 but EAGLE3's).
    vision = import_generated(
        ROOT / "generated" / "llama3_2_vision" / "sizing.py", "_kvgen_layout_fresh_vision"
    )
    assert not [key for key in vision._VLLM_LAYOUTS if key[0] == "llama3_2_11b_vision"]
    module = import_generated(ROOT / "generated" / "llama3" / "sizing.py", "_kvgen_layout_fresh")
    assert ("llama3_1_8b", "none") in module._VLLM_LAYOUTS
    assert ("llama3_1_8b", "none") in module._SGLANG_LAYOUTS
    kwargs = {"max_seq_len": 4096, "max_num_tokens": 8192}
    # vLLM's layouts are its releases' shared math; 0.33.0 answers every pair that has one
    # (0.34.0 refuses PARD's, as tests/unit/test_vllm_releases.py checks)
    engines = (("vllm==0.33.0", module._VLLM_LAYOUTS), ("sglang", module._SGLANG_LAYOUTS))
    for engine, layouts in engines:
        for model in module.MODELS:
            for profile in module.PROFILES[model]:
                call = {"engine": engine, "speculative": profile, **kwargs}
                if (model, profile) in layouts:
                    assert module.engine_capacity(model, GIB40, **call).kv_tokens > 0
                else:
                    with pytest.raises(module.NotModelled):
                        module.engine_capacity(model, GIB40, **call)
