"""TensorRT-LLM 38198e34's ``engine_capacity`` from its split's budget-free part (issue 28).

Until this change every call for the default ``trtllm`` (revision 38198e34) that missed its
cache ran ``kvgen.sizing._trtllm_pools.trtllm_emit`` whole: each manager's storage, pool
groups, floors, pairing and per-request spends derived again, the pool ratio searched by
doubling and bisection, the engine's split replayed pool by pool (69-101 us a new question for
the three modelled ``bench/bench_engines.py --quick`` models at f0f85ad). Now
``_trtllm_pools.split_frame`` builds what does not depend on the budget or the batch once per
model, profile, max_seq_len and tp, and ``split_slots`` does the rest. ``trtllm_emit`` stays
the reference (it is what ``plan --emit trtllm`` writes): here every family's every model and
profile, over budgets, batch sizes, chunks, lengths and tp, gets the same answer (or the same
refusal) from ``engine_capacity`` as from the route through ``trtllm_emit`` the runtime took
before; and a new question no longer replays the split through ``split_quota`` (that test fails
at f0f85ad, where each one does).
"""

from __future__ import annotations

import importlib
import random
import zlib
from pathlib import Path

import pytest
from kvgen.sizing import _trtllm_pool_split as ps
from kvgen.sizing._trtllm_pools import trtllm_emit
from kvgen.sizing.facts import float32, float32s

GENERATED = Path(__file__).resolve().parents[2] / "generated"
FAMILIES = sorted(p.parent.name for p in GENERATED.glob("*/sizing.py"))
GIB = 1 << 30


def _sizing(family: str):
    return importlib.import_module(f"generated.{family}.sizing")


def _answer(call, *args, **kwargs):
    try:
        return call(*args, **kwargs)
    except ValueError as exc:
        return type(exc).__name__, str(exc)


def _through_emit(sizing, model: str, budget: int, **kw):
    """The answer as the runtime computed it at f0f85ad: the early-2026 answer (its checks
    and refusals), then ``trtllm_emit``'s target tokens where the release's split is
    modelled."""
    early = sizing.engine_capacity(model, budget, engine="trtllm==early-2026", **kw)
    try:
        emit = trtllm_emit(sizing, model, budget, revision="38198e34", **kw)
    except ValueError:
        return early
    seq, batch = kw["max_seq_len"], kw["max_batch_size"]
    tokens = batch * seq if emit.tokens is None else emit.tokens
    tpb = sizing.TOKENS_PER_BLOCK
    return type(early)(tokens, min(tokens / seq, float(batch)), early.request_bytes, tokens // tpb)


def _cases(sizing, model: str, profile: str, seed: int) -> list[tuple[int, dict]]:
    """Budgets and serving settings for one model and profile: a few lengths (its whole
    context among them), each asked at several batch sizes (a frame reused across them)."""
    pick = random.Random(seed)
    native = sizing.MAX_SEQ_LEN[model]
    cases = []
    for seq in sorted({native, min(native, 8192), min(native, 1500), pick.randint(1, native)}):
        tp = pick.choice([1, 1, 2, 4, 8])
        chunk = pick.choice([16, 512, 8192, pick.randint(1, 20000)])
        for batch in (1, 8, pick.randint(2, 300), pick.randint(300, 5000)):
            budget = pick.choice([3 << 20, GIB + 12345, 12 * GIB, 40 * GIB, 300 * GIB,
                                  pick.randint(1 << 20, 1 << 38)])  # fmt: skip
            kw = {"max_seq_len": seq, "max_num_tokens": chunk, "speculative": profile,
                  "tp_size": tp, "max_batch_size": batch}  # fmt: skip
            cases.append((budget, kw))
    return cases


@pytest.mark.parametrize("family", FAMILIES)
def test_engine_capacity_equals_the_route_through_trtllm_emit(family):
    sizing = _sizing(family)
    for model in sizing.MODELS:
        for profile in sizing.PROFILES[model]:
            seed = zlib.crc32(f"{family}/{model}/{profile}".encode())
            for budget, kw in _cases(sizing, model, profile, seed):
                ours = _answer(sizing.engine_capacity, model, budget, engine="trtllm", **kw)
                then = _answer(_through_emit, sizing, model, budget, **kw)
                assert ours == then, (model, budget, kw)


def test_the_sweep_reaches_both_split_shapes():
    # A target alone (its pool_ratio) and a target beside a draft (the per-request budget
    # split): gemma3_27b and its draft_1b, llama3_1_8b and pard4, all modelled at 40 GiB.
    for family, model, profile in (("gemma3", "gemma3_27b", "none"),
                                   ("gemma3", "gemma3_27b", "draft_1b"),
                                   ("llama3", "llama3_1_8b", "pard4")):  # fmt: skip
        sizing = _sizing(family)
        kw = {"max_seq_len": 8192, "max_num_tokens": 8192, "speculative": profile,
              "max_batch_size": 8, "tp_size": 1}  # fmt: skip
        trtllm_emit(sizing, model, 200 * GIB, revision="38198e34", **kw)  # modelled: no raise
        ours = sizing.engine_capacity(model, 200 * GIB, engine="trtllm", **kw)
        assert ours == _through_emit(sizing, model, 200 * GIB, **kw)


def test_llama3_1_8b_at_40_gib_by_hand():
    # Full attention only: slope 32 layers x 8 KV heads x 128 dims x 2 (K, V) x 2 B = 131,072
    # B a token, one slot of tpb = 32 tokens 4 MiB. 40 GiB: the grain is 32 MiB (2 MiB doubled
    # once per power of two of whole GiB, at most four times), 1,280 grains; kvgen's pools
    # fit k = 1,280 x 32 MiB / 4 MiB = 10,240 pages, pool_ratio [1.0], and the engine builds
    # 10,240 slots: 327,680 tokens, 40 requests of 8,192 (at most the batch size).
    sizing = _sizing("llama3")
    assert sizing.cache_costs("llama3_1_8b", max_batch_size=8, max_num_tokens=8192,
                              max_seq_len=8192)["target"].slope == 131072  # fmt: skip
    for batch, concurrency in ((8, 8.0), (1000, 40.0)):
        got = sizing.engine_capacity("llama3_1_8b", 40 * GIB, engine="trtllm", max_seq_len=8192,
                                     max_num_tokens=8192, max_batch_size=batch)  # fmt: skip
        assert (got.kv_tokens, got.max_concurrency, got.num_blocks) == (327680, concurrency, 10240)


def test_a_new_question_does_not_replay_the_split(monkeypatch):
    # What a new batch size costs: the frame is built by the first call; later ones never
    # run trtllm_emit's split_quota or storage again (at f0f85ad each call ran both).
    sizing = _sizing("gemma3")
    runtime = importlib.import_module("generated._kvgen_runtime._trtllm_pools")
    calls = []

    def counted(name: str):
        real = getattr(runtime, name)

        def call(*args, **kwargs):
            calls.append(name)
            return real(*args, **kwargs)

        return call

    for name in ("split_quota", "engine_storage"):
        monkeypatch.setattr(runtime, name, counted(name))
    kw = {"max_seq_len": 6144, "max_num_tokens": 3000}
    first = sizing.engine_capacity("gemma3_12b", 33 * GIB, engine="trtllm", max_batch_size=3, **kw)
    built = len(calls)
    for batch in range(4, 40):
        sizing.engine_capacity("gemma3_12b", 33 * GIB, engine="trtllm", max_batch_size=batch, **kw)
    assert built <= 1 and "split_quota" not in calls
    assert first.kv_tokens > 0


def test_one_pool_slot_counts_equals_ratio_to_slot_count_list():
    pick = random.Random(28)
    for _ in range(3000):
        count = pick.randint(1, 4)
        grain = 2 << pick.randint(20, 24)
        sizes = [pick.choice([pick.randint(1, 1 << 26), 1 << pick.randint(12, 28)])
                 for _ in range(count)]  # fmt: skip
        least = [pick.choice([0, 1, pick.randint(1, 500)]) for _ in range(count)]
        ratio = float32s([pick.random() + 1e-3 for _ in range(count)])
        quota = grain * pick.randint(1, 4000)
        pools = [(s,) for s in sizes]
        want = _answer(ps.ratio_to_slot_count_list, quota, pools, ratio, grain, least)
        assert _answer(ps.one_pool_slot_counts, quota, sizes, ratio, grain, least) == want


def test_one_pool_grains_to_slots_is_the_most_slots_that_fit():
    # One pool: the most n with ceil(n * s / grain) <= grains (the search's answer), and the
    # grains they use; none below one grain a slot's worth.
    pick = random.Random(9)
    for _ in range(3000):
        grain, size = 2 << pick.randint(20, 24), pick.randint(1, 1 << 27)
        grains = pick.randint(0, 5000)
        got = ps.grains_to_slots(grains, (size,), grain)
        if grains < -(-size // grain):
            assert got == (0, 0)
            continue
        n = got[0]
        assert -(-n * size // grain) <= grains < -(-(n + 1) * size // grain)
        assert got[1] == -(-n * size // grain)


def test_float32s_rounds_each_value_as_float32_does():
    values = [0.1, 1 / 3, 0.95, 1e-30, 123456.789, 0.0, 2.0**-149, 1e300]
    assert float32s(values) == [float32(v) for v in values]
    assert float32s(values)[:2] == [0.10000000149011612, 0.3333333432674408]


def test_the_releases_keep_their_own_answers_for_one_call():
    # Both releases read one plans entry of the same arguments; each keeps its own answer in
    # it (a share for early-2026, the whole budget for 38198e34), asked in either order.
    sizing = _sizing("gemma3")
    kw = {"max_seq_len": 8192, "max_num_tokens": 8192, "max_batch_size": 11,
          "speculative": "none", "tp_size": 1}  # fmt: skip
    for first, second in (("trtllm==early-2026", "trtllm"), ("trtllm", "trtllm==early-2026")):
        budget = 40 * GIB + (first == "trtllm")  # a budget not asked before
        one = sizing.engine_capacity("gemma3_27b", budget, engine=first, **kw)
        two = sizing.engine_capacity("gemma3_27b", budget, engine=second, **kw)
        early, split = (one, two) if first != "trtllm" else (two, one)
        assert split == _through_emit(sizing, "gemma3_27b", budget, **kw)
        assert early.kv_tokens < split.kv_tokens  # early-2026 overfeeds the window pool
        again = sizing.engine_capacity("gemma3_27b", budget, engine=first, **kw)
        assert again == one
