"""The "largest max_seq_len for B requests" line at TensorRT-LLM 38198e34, where the fit is not
monotone in max_seq_len S.

At that revision a window of at least S is full attention and the budget is split between the
target and a separate draft by what one max-length request spends (the draft's spend grows with
S, capped at B mirrors), so the set of S at which B requests fit need not be an interval. A
bisection over S (``kvgen._engines.plans.largest``) printed 512 for gemma3_27b + draft_1b at
80 GiB and 64 requests (f0f85ad); the lengths 1,025 to 4,467 fit there too.

References here are brute force over S (``_Sizing.fits``, the planner's predicate, at every S
of a range) or hand-built predicates, never ``fit_ranges`` compared with itself.
"""

from __future__ import annotations

import json
import random

import pytest
from kvgen._cli.main import main
from kvgen._engines.planner import _Sizing, load_sizing, native_max_seq_len
from kvgen._engines.plans import largest

GiB = 1 << 30


def _plan(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["-q", "plan", *args]) == 0
    return capsys.readouterr().out


def _bound(model: str, profile: str) -> _Sizing:
    return _Sizing(load_sizing("gemma3", quiet=True), model, profile, 8192, 1, "trtllm-v2")


def _brute(bound: _Sizing, budget: int, batch: int, first: int, last: int) -> list[tuple[int, int]]:
    """The S in [first, last] at which ``bound.fits`` holds, as ranges: every S evaluated."""
    ranges: list[tuple[int, int]] = []
    for s in range(first, last + 1):
        if bound.fits(budget, batch, s, s):
            if ranges and ranges[-1][1] == s - 1:
                ranges[-1] = (ranges[-1][0], s)
            else:
                ranges.append((s, s))
    return ranges


# gemma3_27b + draft_1b at 80 GiB, 64 requests. The target's windows are 1,024 tokens, the
# draft's 512, tokens_per_block 64, headroom 8. Brute force over every S up to 4,608:
#   S <= 512: no window below S in either manager: both full attention, the slope split;
#   513..1024: the draft's window 512 < S, the target's not: the draft's share after its
#     64 requests' window pages builds pools of 5,248 tokens < 64 x 513 = 32,832;
#   1,025..4,467: the per-request split; at 4,467 the target's pools hold 285,888 tokens
#     = 64 x 4,467 exactly (the plan's table at --max-seq-len 4467), at 4,468 the same
#     285,888 < 64 x 4,468 = 285,952.
GEMMA27_80_64 = [(1, 512), (1025, 4467)]


def test_gemma3_27b_draft_1b_64_requests_brute_force() -> None:
    bound = _bound("gemma3_27b", "draft_1b")
    assert _brute(bound, 80 * GiB, 64, 1, 4608) == GEMMA27_80_64
    assert bound.fit_ranges(80 * GiB, 64, 131072) == GEMMA27_80_64


def test_gemma3_27b_target_tokens_at_the_answer(capsys: pytest.CaptureFixture[str]) -> None:
    # The hand check of the last S: the target's max tokens at S = 4467 and 4468.
    at = {}
    for s in (4467, 4468):
        out = _plan(capsys, "gemma3", "gemma3_27b", "--gpu-memory", "80GiB", "--speculative",
                    "draft_1b", "--max-batch-size", "64", "--max-seq-len", str(s))  # fmt: skip
        at[s] = int(next(ln for ln in out.splitlines() if ln.startswith("  target")).split()[-1])
    assert at == {4467: 285888, 4468: 285888}
    assert 285888 == 64 * 4467 < 64 * 4468


@pytest.mark.slow
def test_gemma3_27b_nothing_longer_fits_every_length() -> None:
    # Every S from 4,609 to the native 131,072 evaluated (about a minute): none fits.
    bound = _bound("gemma3_27b", "draft_1b")
    assert _brute(bound, 80 * GiB, 64, 4609, 131072) == []


def test_plan_prints_the_largest_and_the_shorter_misfits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _plan(capsys, "gemma3", "gemma3_27b", "--gpu-memory", "80GiB", "--speculative",
                "draft_1b", "--max-batch-size", "8", "64")  # fmt: skip
    # f0f85ad printed "largest max_seq_len for 64 requests: 512"
    assert "  largest max_seq_len for 64 requests: 4467\n" in out
    assert (
        "  but not every shorter one fits: 513 to 1024 do not (at 513 the draft pools hold "
        "5248 tokens, fewer than 64 x 513)\n"
    ) in out
    # 8 requests: 1,025 to 1,528 do not fit (the draft's pools hold 5,632 tokens at 1,025)
    assert "  largest max_seq_len for 8 requests: 35736\n" in out
    assert "1025 to 1528 do not (at 1025 the draft pools hold 5632 tokens" in out
    data = json.loads(_plan(capsys, "gemma3", "gemma3_27b", "--gpu-memory", "80GiB",
                            "--speculative", "draft_1b", "--max-batch-size", "64",
                            "--format", "json"))  # fmt: skip
    assert data["batches"][0]["max_seq_len_fit"] == 4467
    assert data["batches"][0]["misfits"] == [[513, 1024]]


def test_json_has_no_misfits_where_every_shorter_length_fits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = json.loads(_plan(capsys, "llama3", "llama3_1_8b", "--gpu-memory", "16GiB",
                            "--format", "json"))  # fmt: skip
    # 131,072 tokens / 8 requests: every S up to 16,384 fits (docs/review.md)
    assert data["batches"][0]["max_seq_len_fit"] == 16384
    assert "misfits" not in data["batches"][0]


def test_gemma3_1b_draft_1b_8_requests() -> None:
    # f0f85ad printed 512 (the snapshot's `plan gemma3 gemma3_1b --gpu-memory 80GiB
    # --speculative draft_1b`); every S evaluated up to 2,048 (1..512 and 1,529.. fit,
    # 513..1,528 do not) and every 61st S from there to the native 32,768 (all fit).
    bound = _bound("gemma3_1b", "draft_1b")
    expected = [(1, 512), (1529, 32768)]
    assert _brute(bound, 80 * GiB, 8, 1, 2048) == [expected[0], (1529, 2048)]
    assert all(bound.fits(80 * GiB, 8, s, s) for s in range(2048, 32769, 61))
    assert bound.fit_ranges(80 * GiB, 8, 32768) == expected


# The facts fit_ranges relies on, checked on every shipped pair of a sliding-window target and
# a separate draft: between two window thresholds the target's tokens never grow with S and
# the draft's never shrink (at every page boundary, S + headroom a multiple of 64).
@pytest.mark.slow
@pytest.mark.parametrize("model", ["gemma3_1b", "gemma3_4b", "gemma3_12b", "gemma3_27b"])
def test_target_never_grows_draft_never_shrinks_within_a_regime(model: str) -> None:
    sizing = load_sizing("gemma3", quiet=True)
    bound = _bound(model, "draft_1b")
    limit, tpb, head = native_max_seq_len(sizing, model), 64, 8
    regimes = (513, 1025)  # the draft's window 512, the target's 1,024, each + 1
    starts = [s for s in range(tpb - head + 1, limit + 1, tpb) if s not in regimes]
    for gib, batch in ((24, 64), (80, 8)):
        last: dict[str, int | None] = {}
        for s in sorted({*starts, *regimes}):
            try:
                tokens = {m.name: m.max_tokens for m in bound.managers(gib * GiB, batch, s)}
            except ValueError:
                last = {}
                continue
            if s not in regimes and last:
                t, d = tokens["target"], tokens["draft"]
                assert t is not None and last["target"] is not None and t <= last["target"], s
                assert d is not None and last["draft"] is not None and d >= last["draft"], s
            last = tokens


def test_costs_change_only_at_pages_and_windows() -> None:
    # Every S from 1 to 3,000: each manager's tokens change only where S + 8 crosses a
    # multiple of 64 (S = 64k - 7) or at a window threshold (513, 1,025).
    bound = _bound("gemma3_27b", "draft_1b")
    before = None
    for s in range(1, 3001):
        now = [(m.share, m.max_tokens) for m in bound.managers(40 * GiB, 8, s)]
        if before is not None and now != before:
            assert (s + 8 - 1) % 64 == 0 or s in (513, 1025), s
        before = now


# fit_ranges on hand-built predicates: each case's ranges are written out.
def test_fit_ranges_monotone_equals_largest() -> None:
    from kvgen._engines.plans import fit_ranges

    rng = random.Random(7)
    for _ in range(200):
        high, cut = rng.randint(1, 5000), rng.randint(0, 5000)
        regimes = sorted(rng.sample(range(2, 5000), 3))

        def probe(s: int, cut: int = cut) -> tuple[bool, int | None]:
            return s <= cut, None

        ranges = fit_ranges(probe, 4, high, regimes, 64)
        expected = min(cut, high)
        assert ranges == ([(1, expected)] if expected else [])
        assert largest(lambda s, cut=cut: s <= cut, high) == expected


def test_fit_ranges_a_gap_below_the_answer() -> None:
    from kvgen._engines.plans import fit_ranges, misfits

    # Regimes [1, 100] and [101, 1000]; cells of 10 (S in [10k + 1, 10k + 10], offset 0).
    # Settled: S <= 80 in the first regime, S <= 900 in the second. Growing capacity, 4
    # requests: 10 x the cell's last S in the first regime (>= 4 x S everywhere); in the
    # second 3 x the cell's last S up to 300 (3 x (S + 9) < 4 x S for S > 27: no S fits)
    # and 5,000 from 301 (>= 4 x S up to 1,250, so the settled 900 binds).
    def probe(s: int) -> tuple[bool, int | None]:
        end = s + (-s) % 10
        if s <= 100:
            return s <= 80, 10 * end
        return s <= 900, (3 * end if s <= 300 else 5000)

    ranges = fit_ranges(probe, 4, 1000, [101], 10)
    assert ranges == [(1, 80), (301, 900)]
    assert misfits(ranges) == [(81, 300)]
    assert largest(lambda s: probe(s)[0] and (probe(s)[1] or 0) >= 4 * s, 1000) == 80


def test_fit_ranges_growing_capacity_comb() -> None:
    from kvgen._engines.plans import fit_ranges, misfits

    # Cells of 8 with offset 3: cell k is S in [8k - 10, 8k - 3] (its last S e_k = 8k - 3:
    # e_k + 3 a multiple of 8). Two requests; the capacity never shrinks: 2 x e_k on even
    # cells (the whole cell fits), 2 x e_(k-1) on odd ones (less than 2 x the cell's first S:
    # none fits). Cells to 60: [1,5] odd, [6,13] even, [14,21] odd, [22,29] even, [30,37]
    # odd, [38,45] even, [46,53] odd, [54,61] even (clipped at 60).
    def probe(s: int) -> tuple[bool, int | None]:
        end = s + (-(s + 3)) % 8
        k = (end + 3) // 8
        return True, 2 * end if k % 2 == 0 else 2 * (end - 8)

    ranges = fit_ranges(probe, 2, 60, [], 8, offset=3)
    assert ranges == [(6, 13), (22, 29), (38, 45), (54, 60)]
    assert misfits(ranges) == [(1, 5), (14, 21), (30, 37), (46, 53)]
    # a bisection from S = 1 answers 0 here: S = 1 does not fit
    assert largest(lambda s: 2 * s <= (probe(s)[1] or 0), 60) == 0


def test_hardware_mode_says_it_too(capsys: pytest.CaptureFixture[str]) -> None:
    # --gpu H100 with 54 GB of weights: (79.65 GiB - 50.29 GiB - 4 GiB) x 0.9 =
    # 24,503,258,419 B of KV budget (the report's own line). Every S from 900 to 1,600
    # evaluated on that budget: 961 to 1,528 do not fit, the rest does.
    budget = 24503258419
    bound = _bound("gemma3_27b", "draft_1b")
    assert bound.fits(budget, 8, 10136, 10136) and not bound.fits(budget, 8, 10137, 10137)
    assert _brute(bound, budget, 8, 900, 1600) == [
        (900, 960), (1529, 1600),
    ]  # fmt: skip
    args = ["gemma3", "gemma3_27b", "--gpu", "H100", "--weights", "54GB", "--speculative",
            "draft_1b", "--max-batch-size", "8"]  # fmt: skip
    out = _plan(capsys, *args)
    assert f"KV budget per rank ({budget} B)" in out
    assert "  largest max_seq_len for 8 requests: 10136\n" in out
    assert "  but not every shorter one fits: 961 to 1528 do not (at 961 the draft pools" in out
    data = json.loads(_plan(capsys, *args, "--format", "json"))
    assert data["batches"] == [
        {"max_batch_size": 8, "max_seq_len_fit": 10136, "misfits": [[961, 1528]],
         "misfit_reason": "at 961 the draft pools hold 7680 tokens, fewer than 8 x 961"},
    ]  # fmt: skip
