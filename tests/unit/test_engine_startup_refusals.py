"""Start-up refusals of the engines that move a plan, each quoting the engine's own words with
the file they are in (issue 32)."""

from __future__ import annotations

import pytest
from kvgen.sizing._trtllm_budget import ManagerCost, draft_budget_shares

ENGINE_WORDS = (
    "TensorRT-LLM 38198e34 refuses to start: 'KV cache GPU budget (...) is insufficient after "
    "the combined fixed cost (..., e.g. SWA or mamba state) for target+draft. Increase "
    "free_gpu_memory_fraction or max_gpu_total_bytes, or reduce max_batch_size (the fixed cost "
    "scales with batch size).' (tensorrt_llm/_torch/pyexecutor/_util.py)"
)


@pytest.mark.parametrize(
    ("budget", "target", "draft"),
    [
        # intercepts 100 + 50 = 150 B over a 120 B budget: slope_budget -30 < 0
        (120, ManagerCost(2, 100), ManagerCost(1, 50)),
        # exactly the intercepts with a per-token cost left to fund: slope_budget 0, slopes 3
        (150, ManagerCost(2, 100), ManagerCost(1, 50)),
        # 50 B left after the intercepts, one draft mirror's allocator quota 64 B > 50 B
        (200, ManagerCost(2, 100, 10, None), ManagerCost(1, 50, 10, 64)),
    ],
)
def test_trtllm_38198e34_refuses_a_target_draft_split_it_cannot_fund(
    budget: int, target: ManagerCost, draft: ManagerCost
) -> None:
    """KvCacheCreator._compute_draft_budget_shares returns None for these (a negative slope
    budget, none left for a per-token cost, a mirror's quota above what is left); its caller
    raises for a GPU budget (max_gpu_total_bytes) with the words quoted."""
    with pytest.raises(ValueError) as raised:
        draft_budget_shares(budget, target, draft, max_batch_size=8)
    assert str(raised.value).endswith(ENGINE_WORDS)


def test_trtllm_38198e34_funds_a_split_with_room_past_the_intercepts() -> None:
    # 300 B: 150 B of intercepts, 150 B by slope 2 : 1 -> draft 50 + 150 * 1 // 3 = 100 B
    assert draft_budget_shares(300, ManagerCost(2, 100), ManagerCost(1, 50), 8) == {
        "target": 200,
        "draft": 100,
    }


@pytest.mark.parametrize("ratio", [0.0, 1.5, -1])
def test_sglang_refuses_a_sliding_pool_share_outside_0_1(ratio: float) -> None:
    """SGLang 0.5.23 checks --swa-full-tokens-ratio before it sizes any pool
    (arg_groups/kv_cache_hook.py: 'if not (0 < ratio <= 1.0): raise ValueError'); kvgen
    refuses the same values with its words, and takes 1.0."""
    from kvgen._engines.capacity import engine_capacity

    from tests.unit.test_engines import GIB40, family

    def ask(value: float) -> object:
        return engine_capacity(
            family("gpt_oss"), "gpt_oss_20b", GIB40, engine="sglang", max_seq_len=4096,
            max_num_tokens=8192, swa_full_tokens_ratio=value,
        )  # fmt: skip

    with pytest.raises(ValueError) as raised:
        ask(ratio)
    assert str(raised.value).endswith(
        "SGLang 0.5.23 refuses to start, '--swa-full-tokens-ratio should be in range (0, 1.0].' "
        "(sglang/srt/arg_groups/kv_cache_hook.py)"
    )
    assert ask(1.0).kv_tokens > 0  # type: ignore[attr-defined]
