"""The "max concurrent requests" line at TensorRT-LLM 38198e34, where the fit is not monotone in
the number of requests B.

At that revision the budget is split between the target and a separate draft per request: the
draft's share grows by one mirror per request (capped at B mirrors) and its own pool split
changes form with B, so the set of B at which B requests fit need not be an interval. A
bisection over B (``kvgen._engines.plans.largest``) printed 5 for gemma3_1b + draft_1b at
24 GiB and max_seq_len 1,000 (f0f85ad and 4cdd11e); 52 to 150 requests fit too.

References here are brute force over B (``_Sizing.fits``, the planner's predicate, at every B
of a range) or hand-built predicates, never ``request_ranges`` compared with itself.
"""

from __future__ import annotations

import json
import random
import struct

import pytest
from kvgen._cli.main import main
from kvgen._engines.planner import SEARCH_LIMIT, _Sizing, load_sizing
from kvgen._engines.plans import largest

GiB = 1 << 30


def _plan(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> str:
    assert main(["-q", "plan", *args]) == code
    return capsys.readouterr().out


def _bound(model: str, profile: str = "draft_1b") -> _Sizing:
    return _Sizing(load_sizing("gemma3", quiet=True), model, profile, 8192, 1, "trtllm-v2")


def _brute(bound: _Sizing, budget: int, length: int, seq: int, last: int) -> list[tuple[int, int]]:
    """The B in [1, last] at which ``bound.fits`` holds, as ranges: every B evaluated."""
    ranges: list[tuple[int, int]] = []
    for b in range(1, last + 1):
        if bound.fits(budget, b, length, seq):
            if ranges and ranges[-1][1] == b - 1:
                ranges[-1] = (ranges[-1][0], b)
            else:
                ranges.append((b, b))
    return ranges


def _search(bound: _Sizing, budget: int, length: int, seq: int) -> list[tuple[int, int]]:
    """The planner's search: the target bisected, the draft alone at every B below."""
    return bound.request_ranges(budget, seq, length, SEARCH_LIMIT)


# gemma3_1b + draft_1b at 24 GiB, max_seq_len 1,000, requests of 1,000 tokens (the plan's
# table at --max-batch-size B, B x 1,000 tokens needed). Brute force over every B to 1,000:
#   B 1..5: the draft's pools hold 4,800 .. 5,056 tokens >= B x 1,000 (5,056 >= 5,000);
#   B 6..51: its window pool bounds it: 5,184 < 6,000 at 6, 8,128 < 51,000 at 51;
#   B 52..150: its window pool first holds B requests' window pages: 162,816 at 52,
#     447,488 >= 150,000 at 150;
#   B 151..: its split leaves the window pool fewer pages than 151 requests' (1,495 built,
#     1,510 = 151 x 10 needed): 0 tokens;
#   B 450..: the target's pools too (7,616 tokens at 450; 1,630,208 at 449); from 881 the
#     budget does not cover the intercepts.
GEMMA1_24_1000 = [(1, 5), (52, 150)]


def test_gemma3_1b_draft_1b_brute_force() -> None:
    bound = _bound("gemma3_1b")
    assert _brute(bound, 24 * GiB, 1000, 1000, 1000) == GEMMA1_24_1000
    assert _search(bound, 24 * GiB, 1000, 1000) == GEMMA1_24_1000
    # what the bisection answered
    assert largest(lambda b: bound.fits(24 * GiB, b, 1000, 1000), SEARCH_LIMIT) == 5


def _float32(x: float) -> float:
    """The nearest float32 (IEEE rounding, as the engine keeps a ratio)."""
    return float(struct.unpack("f", struct.pack("f", x))[0])


def _draft_tokens_by_hand(b: int, gib: int = 24, seq: int = 1000) -> int:
    """The draft's tokens at B requests, gemma3_1b + draft_1b at ``gib`` GiB and max_seq_len
    ``seq``, derived from the spec rows and docs/cost-model.md §2-§4 and §11 alone (no kvgen
    function), where the draft's share is capped at B mirrors (below: up to B = 151 at 24 GiB
    and S 1,000, B = 4,431 at 141 GiB and S 600). Worked at 24 GiB and S 1,000.

    Rows (schema/families/gemma3.yaml): target gemma3_1b and drafter draft_1b are the same 26
    layers, pattern 5 local + 1 global: 22 window-512 layers and 4 full; 1 kv head x 256 x
    (K, V) x 2 B (bf16) = 1,024 B/token a layer. TensorRT-LLM's tpb 64, N 8,192, draft_target
    with K 4: H = E + G = 3 + 5 = 8 (§2).

    Terms (§4), both managers alike: pages(512, 8) = ceil(518 / 64) + 1 = 10 window pages a
    request; per_request = 22 x 1,024 x 64 x 10 = 14,417,920; intercept(B) = B x 14,417,920 +
    8,192 x 22 x 1,024 (= 184,549,376).

    Budget split (§11): the quota is the budget itself (24 and 141 GiB are multiples of their
    32 MiB grain). One request's spend at full = ceil((S + 8) / 64) x 64 tokens (1,024 at S
    1,000, 640 at S 600): the target 4 x 1,024 x full = 4,194,304 (its window pages are in its
    intercept); a draft mirror 26 x 1,024 x full - 22 x 1,024 x 640 = 12,845,056 (2,621,440 at
    S 600: the target's). The room budget - 2 x intercept(B) is weighed mirror / (target +
    mirror) to the draft (0.754; 1/2 at S 600), capped at B mirrors. At 24 GiB up to B = 151
    the room is at least 25,769,803,776 - 2 x 2,361,655,296 = 21,046,493,184 B, whose draft
    part (15.9e9) exceeds 151 mirrors (1,939,603,456); at 141 GiB and S 600 half the room
    covers B mirrors while 151,397,597,184 - 2 x 184,549,376 >= B x (2 x 14,417,920 + 2 x
    2,621,440), up to B = 4,431. Where the cap binds the draft quota is q(B) = intercept(B) +
    B x mirror (24 GiB: B x 27,262,976 + 184,549,376, every layer of B requests at the full
    1,024 tokens plus the context chunk's window bytes; 141 GiB, S 600: B x 17,039,360 +
    184,549,376).

    The draft's own split (§11, pools within a manager): grain g = 2 MiB << min(4, floor(log2(
    q // 1 GiB))), 2 MiB below 2 GiB; G = ceil(q / g) grains. Slots: window 22 x 2 x 256 x 2 x
    64 = 1,441,792 B, full 4 x 2 x 256 x 2 x 64 = 262,144 B (the smaller, pool group 0); least
    pages (512 + 62) // 64 + 1 = 9 each (never binding here). No avg_seq_len: the ratio is the
    page need of one request of 2,049 tokens with 2,048 of history: full ceil(2049 / 64) = 33
    pages, window 33 - (2,049 - 512) // 64 = 9 pages, each pool in whole grains: full
    ceil(33 x 262,144 / g), window ceil(9 x 1,441,792 / g): 5 and 7 grains at 2 MiB (5/12,
    7/12), 3 and 4 at 4 MiB (3/7, 4/7), 2 and 2 at 8 MiB, 1 and 1 at 16 and 32 MiB (1/2, 1/2),
    each kept as the nearest float32 (5/12 as 0.41666666, just under; 7/12 as 0.58333331;
    summed per pool group in float32 they make 1, so renormalising leaves them) and their sum
    taken in double (0.99999997 at 2 MiB). The group of the smaller ratio (full; on a tie the
    first group, full) takes nearbyint(G x its ratio / that sum) grains (half to even), each
    grain g / 262,144 full slots; the window group takes the G grains left, floor(grains x g
    / 1,441,792) slots. The float32 values matter only at an exact half: G x 5/12 is one
    where G = 6 mod 12, and 5/12's quotient, 0.41666667 (over 5/12), rounds it up (B 14: G
    270, 112.5 -> 113); G x 1/2 is an exact half of exact values, to even.

    Held (38198e34's pools for T = k x 64 tokens): the window pool keeps 10 pages per request
    and min(k, 128) context pages (n = 8,192 / 64), the full pool k pages. With W window and
    F full slots: W < 10 B holds nothing (0 tokens); else k = min(F, W - 10 B) where W - 10 B
    < 128, k = F otherwise."""
    full_tokens = -(-(seq + 8) // 64) * 64
    mirror = 26 * 1024 * full_tokens - 22 * 1024 * 640
    q = b * (14_417_920 + mirror) + 184_549_376
    grain = (2 << 20) << min(4, (q >> 30).bit_length() - 1) if q >> 30 else 2 << 20
    grains = -(-q // grain)
    full_ratio, window_ratio = {2: (5, 7), 4: (3, 4)}.get(grain >> 20, (1, 1))
    r_full, r_window = (
        _float32(r / (full_ratio + window_ratio)) for r in (full_ratio, window_ratio)
    )
    full_grains = round(grains * (r_full / (r_full + r_window)))  # half to even, as nearbyint
    full = full_grains * grain // 262_144
    window = (grains - full_grains) * grain // 1_441_792
    if window < 10 * b:
        return 0
    room = window - 10 * b
    return 64 * (min(full, room) if room < 128 else full)


def test_gemma3_1b_draft_tokens_at_the_edges(capsys: pytest.CaptureFixture[str]) -> None:
    # The draft's max tokens in the plan's table at B requests, at each edge of the ranges,
    # against the hand derivation above. Worked through:
    #   B 5: q = 320,864,256 = 153 grains of 2 MiB; full round(153 x 5/12 = 63.75) = 64 grains
    #     = 512 slots; window 89 grains = floor(89 x 16 / 11) = 129 slots, room 129 - 50 = 79
    #     < 128: 79 x 64 = 5,056 tokens >= 5 x 1,000 (fits);
    #   B 6: q = 348,127,232 = 166 grains; full round(69.17) = 69 (552 slots); window 97 grains
    #     = 141 slots, room 81: 5,184 < 6,000;
    #   B 51: q = 1,574,961,152 = 751 grains; full round(312.92) = 313 (2,504 slots); window
    #     438 grains = 637 slots, room 127: 8,128 < 51,000;
    #   B 52: q = 1,602,224,128 = 764 grains; full round(318.33) = 318 (2,544 slots); window
    #     446 grains = 648 slots, room 128: the window pool no longer bounds, 2,544 x 64 =
    #     162,816 >= 52,000;
    #   B 150: q = 4,273,995,776 (under 4 GiB) = 1,019 grains of 4 MiB; full round(436.71) =
    #     437 grains x 16 = 6,992 slots; window 582 grains x 32 / 11 = 1,693 slots, room 193:
    #     6,992 x 64 = 447,488 >= 150,000;
    #   B 151: q = 4,301,258,752 (over 4 GiB): 8 MiB grains, ceil(512.75) = 513; full
    #     round(256.5) = 256 (half to even); window 257 grains x 64 / 11 = 1,495 slots, fewer
    #     than 151 x 10 = 1,510 window pages: 0 tokens (with the tie the other way, 1,489).
    def draft(b: int) -> int:
        # exit 1 at 151: a pool of 0 tokens is "does not cover its fixed cost"
        out = _plan(capsys, "gemma3", "gemma3_1b", "--gpu-memory", "24GiB", "--speculative",
                    "draft_1b", "--max-seq-len", "1000", "--max-batch-size", str(b),
                    code=int(b == 151))  # fmt: skip
        return int(next(ln for ln in out.splitlines() if ln.startswith("  draft")).split()[-1])

    edges = (5, 6, 51, 52, 150, 151)
    hand = {b: _draft_tokens_by_hand(b) for b in edges}
    assert hand == {5: 5056, 6: 5184, 51: 8128, 52: 162816, 150: 447488, 151: 0}
    assert {b: draft(b) for b in edges} == hand
    assert hand[5] >= 5 * 1000 and hand[6] < 6 * 1000 and hand[51] < 51 * 1000
    assert hand[52] >= 52 * 1000 and hand[150] >= 150 * 1000 and hand[151] < 151 * 1000


def test_the_hand_derivation_at_every_count() -> None:
    # The derivation above at every B to 151 (past that the cap argument is not made) against
    # the planner's probe: the draft's tokens at each count, and so the ranges 1-5, 52-150.
    bound = _bound("gemma3_1b")
    for b in range(1, 152):
        assert bound.probe(24 * GiB, b, 1000)[1] == _draft_tokens_by_hand(b), b
    fits = [b for b in range(1, 152) if _draft_tokens_by_hand(b) >= b * 1000]
    assert fits == [*range(1, 6), *range(52, 151)]


def test_plan_prints_the_largest_count_and_the_smaller_misfits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ("gemma3", "gemma3_1b", "--gpu-memory", "24GiB", "--speculative", "draft_1b",
            "--max-seq-len", "1000")  # fmt: skip
    out = _plan(capsys, *args)
    # 4cdd11e printed "max concurrent requests of 1000 tokens: 5"
    assert (
        "max concurrent requests of 1000 tokens: 150\n"
        "  but not every smaller one fits: 6 to 51 do not (at 6 the draft pools hold 5184 "
        "tokens, fewer than 6 x 1000)\n"
    ) in out
    data = json.loads(_plan(capsys, *args, "--format", "json"))
    assert data["max_requests"] == 150
    assert data["request_misfits"] == [[6, 51]]
    assert data["request_misfit_reason"] == (
        "at 6 the draft pools hold 5184 tokens, fewer than 6 x 1000"
    )


def test_json_has_no_request_misfits_where_every_smaller_count_fits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # gemma3_27b + draft_1b at 80 GiB and max_seq_len 8,192: 1 to 34 requests fit, 35 do
    # not (brute force below); the target alone and early-2026 never print the note.
    for extra in ((), ("--engine", "trtllm==early-2026"), ("--speculative", "none")):
        args = ("gemma3", "gemma3_27b", "--gpu-memory", "80GiB", "--max-seq-len", "8192")
        if extra[:1] != ("--speculative",):
            args += ("--speculative", "draft_1b")
        out = _plan(capsys, *args, *extra)
        assert "but not every smaller one fits" not in out
        data = json.loads(_plan(capsys, *args, *extra, "--format", "json"))
        assert "request_misfits" not in data and "request_misfit_reason" not in data
    assert _brute(_bound("gemma3_27b"), 80 * GiB, 8192, 8192, 40) == [(1, 34)]


def test_a_shorter_request_length() -> None:
    # --seq-len 500 below max_seq_len 1,000: the same pools, B x 500 tokens needed. The
    # draft's 5,504 tokens at 11 and 12 requests hold 5,500 and not 6,000; from 52 to 150 as
    # above; every B to 1,000 evaluated.
    bound = _bound("gemma3_1b")
    assert _brute(bound, 24 * GiB, 500, 1000, 1000) == [(1, 11), (52, 150)]
    assert _search(bound, 24 * GiB, 500, 1000) == [(1, 11), (52, 150)]


# The fact request_ranges relies on: the conditions other than the draft's (the target's pools,
# the intercepts) hold on a prefix of B. Every shipped gemma3 target with draft_1b, at two
# budgets and four lengths, every B to 50 past the last that settles.
@pytest.mark.parametrize("model", ["gemma3_1b", "gemma3_4b", "gemma3_27b"])
def test_settled_conditions_hold_on_a_prefix(model: str) -> None:
    bound = _bound(model)
    for budget in (24 * GiB, 80 * GiB):
        for seq in (1000, 8192, 32768):
            settled = [bound.probe(budget, b, seq)[0] for b in range(1, 400)]
            last = settled.index(False) if False in settled else len(settled)
            assert not any(settled[last:]), (model, budget, seq)
            assert last >= 1


# Where no draft layer slides at max_seq_len (every shipped full-attention draft, and draft_1b
# up to its window of 512) the planner keeps the bisection (_Sizing.draft_slides): the counts
# that fit are a prefix. Every B evaluated up to 5 past the last at which the target's
# pools and the intercepts hold (beyond it nothing fits: the prefix above).
@pytest.mark.parametrize(
    ("family", "model", "profile", "gib", "seq"),
    [
        ("llama3", "llama3_1_8b", "pard4", 24, 2048),
        ("llama3", "llama3_1_8b", "pard4", 80, 8192),
        ("qwen2_5", "qwen2_5_7b", "draft_0_5b", 24, 2048),
        ("qwen2_5", "qwen2_5_7b", "pard4", 24, 512),
        ("qwen3", "qwen3_8b", "pard4", 24, 2048),
        ("gemma3", "gemma3_1b", "draft_1b", 24, 512),
        ("gemma3", "gemma3_27b", "draft_1b", 24, 512),
    ],
)
def test_full_attention_draft_counts_are_a_prefix(
    family: str, model: str, profile: str, gib: int, seq: int
) -> None:
    bound = _Sizing(load_sizing(family, quiet=True), model, profile, 8192, 1, "trtllm-v2")
    assert bound.split is not None and not bound.draft_slides(seq)
    budget = gib * GiB
    top = largest(lambda b: bound.probe(budget, b, seq)[0], SEARCH_LIMIT)
    found = _brute(bound, budget, seq, seq, top + 5)
    assert len(found) == 1 and found[0][0] == 1
    assert found[0][1] == largest(lambda b: bound.fits(budget, b, seq, seq), SEARCH_LIMIT)


# What the scan evaluates at every B up to the target's last (T): the draft's tokens alone
# (_Sizing.draft_tokens), which must be the probe's, the whole split's. Every B to T, in the
# scan's order (from T down: the per-request spends are taken at the first B asked), for each
# shipped target with draft_1b where the draft slides, up to 141 GiB (T = 3,289), and at
# another chunk (N) and tp.
@pytest.mark.parametrize(
    ("model", "gib", "seq", "chunk", "tp"),
    [
        ("gemma3_1b", 24, 1000, 8192, 1),
        ("gemma3_1b", 141, 600, 8192, 1),
        ("gemma3_1b", 12, 4096, 8192, 1),
        ("gemma3_1b", 24, 1000, 2048, 1),
        ("gemma3_4b", 80, 600, 8192, 1),
        ("gemma3_4b", 24, 32768, 8192, 1),
        ("gemma3_4b", 40, 700, 512, 1),
        ("gemma3_12b", 80, 2000, 8192, 2),
        ("gemma3_27b", 141, 1000, 8192, 1),
        ("gemma3_27b", 80, 513, 8192, 1),
        ("gemma3_27b", 80, 1000, 2048, 2),
    ],
)
def test_draft_tokens_equal_the_probe(model: str, gib: int, seq: int, chunk: int, tp: int) -> None:
    bound = _Sizing(load_sizing("gemma3", quiet=True), model, "draft_1b", chunk, tp, "trtllm-v2")
    budget = gib * GiB
    assert bound.split is not None and bound.draft_slides(seq)
    top = largest(lambda b: bound.probe(budget, b, seq)[0], SEARCH_LIMIT)
    assert top >= 1
    tokens = bound.draft_tokens(budget, seq)
    for b in range(top, 0, -1):
        assert tokens(b) == bound.probe(budget, b, seq)[1], (model, gib, seq, b)


# The search against brute force (every B to 5 past T) at other chunks, tps and lengths,
# where the counts that fit have gaps of other shapes (a run of misfits after the first count,
# a single misfit near the first or the last count that fits, none).
@pytest.mark.parametrize(
    ("model", "gib", "seq", "chunk", "tp"),
    [
        ("gemma3_1b", 24, 1000, 2048, 1),
        ("gemma3_12b", 80, 2000, 8192, 2),
        ("gemma3_27b", 141, 900, 8192, 4),
        ("gemma3_4b", 40, 700, 512, 1),
    ],
)
def test_search_against_brute_force_elsewhere(
    model: str, gib: int, seq: int, chunk: int, tp: int
) -> None:
    bound = _Sizing(load_sizing("gemma3", quiet=True), model, "draft_1b", chunk, tp, "trtllm-v2")
    budget = gib * GiB
    top = largest(lambda b: bound.probe(budget, b, seq)[0], SEARCH_LIMIT)
    found = _search(bound, budget, seq, seq)
    assert found == _brute(bound, budget, seq, seq, top + 5)
    assert found and found[-1][1] <= top


def test_the_141_gib_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    # The plan bench/bench_request_search.py times: gemma3_1b + draft_1b at 141 GiB, S = L =
    # 600. By hand (_draft_tokens_by_hand, the cap binding to 4,431 > T): at 5 requests q =
    # 5 x 17,039,360 + 184,549,376 = 269,746,176 B, 129 grains of 2 MiB (128.63 up); full
    # round(53.75) = 54 grains (432 slots), window 75 grains = 109 slots, room 109 - 50 = 59:
    # 3,776 tokens >= 3,000; at 6, 137 grains, full 57 (456), window 80 grains = 116 slots,
    # room 56: 3,584 < 3,600. Each further request adds 8.125 grains, of which the window
    # pool gets about 7/12 x 8.125 x 16 / 11 = 6.9 slots (fewer at the larger grains) against
    # its 10 pages: the room only shrinks, so nothing from 6 on fits.
    bound = _bound("gemma3_1b")
    budget = 141 * GiB
    top = largest(lambda b: bound.probe(budget, b, 600)[0], SEARCH_LIMIT)
    assert top < 4431
    fits = [b for b in range(1, top + 1) if _draft_tokens_by_hand(b, 141, 600) >= b * 600]
    assert fits == [1, 2, 3, 4, 5]
    assert _draft_tokens_by_hand(5, 141, 600) == 3776
    assert _draft_tokens_by_hand(6, 141, 600) == 3584
    # The speed of the scan: the whole probe (both managers' splits) runs only for the
    # bisection of the target's last count T (at most two probes per bit of T: the gallop and
    # the halving), the draft alone at every other count; 4e5873c ran the probe at all T.
    probed: list[int] = []
    probe = bound.probe

    def counted(*args: int) -> tuple[bool, int | None]:
        probed.append(args[1])
        return probe(*args)

    monkeypatch.setattr(bound, "probe", counted)
    assert _search(bound, budget, 600, 600) == [(1, 5)]
    assert 0 < len(probed) <= 2 * top.bit_length() + 2 < top
    monkeypatch.undo()
    # the hand figures against the probe at every B to T, and the brute force beyond it
    for b in range(1, top + 1):
        assert bound.probe(budget, b, 600)[1] == _draft_tokens_by_hand(b, 141, 600), b
    assert _brute(bound, budget, 600, 600, top + 5) == [(1, 5)]


def test_draft_1b_slides_above_its_window() -> None:
    bound = _bound("gemma3_1b")
    assert not bound.draft_slides(512) and bound.draft_slides(513)


# request_ranges on hand-built predicates: each case's ranges are written out.
def test_request_ranges_monotone_equals_largest() -> None:
    from kvgen._engines.plans import request_ranges

    rng = random.Random(11)
    for _ in range(200):
        high, cut = rng.randint(1, 5000), rng.randint(0, 5000)
        ranges = request_ranges(lambda b, cut=cut: (b <= cut, None), 7, high)
        expected = min(cut, high)
        assert ranges == ([(1, expected)] if expected else [])
        assert largest(lambda b, cut=cut: b <= cut, high) == expected


def test_request_ranges_gaps_below_the_answer() -> None:
    from kvgen._engines.plans import misfits, request_ranges

    # Settled up to 90. Length 10. Growing capacity: 100 up to B 5 (holds 10 x B up to 10,
    # so 1..5), 20 from 6 to 40 (fails), 1,000 from 41 to 60 (holds up to 100), 0 from 61 to
    # 70 (fails), 2,000 from 71 (holds up to 200, the settled 90 binds).
    def probe(b: int) -> tuple[bool, int | None]:
        cap = 100 if b <= 5 else 20 if b <= 40 else 1000 if b <= 60 else 0 if b <= 70 else 2000
        return b <= 90, cap

    ranges = request_ranges(probe, 10, 1 << 20)
    assert ranges == [(1, 5), (41, 60), (71, 90)]
    assert misfits(ranges) == [(6, 40), (61, 70)]
    # the bisection's answer
    assert largest(lambda b: probe(b)[0] and (probe(b)[1] or 0) >= 10 * b, 1 << 20) == 5


def test_request_ranges_scans_the_capacity_alone() -> None:
    from kvgen._engines.plans import request_ranges

    # The gaps case above with the growing capacity given apart: the same ranges, the probe
    # asked only by the bisection of the settled 90 (1, 2, 4, ..., 128, then 64..128 halved:
    # 14 counts), the capacity at each of the other B to 90 (90 - 10 of them probed already).
    def cap(b: int) -> int:
        return 100 if b <= 5 else 20 if b <= 40 else 1000 if b <= 60 else 0 if b <= 70 else 2000

    probed: list[int] = []
    scanned: list[int] = []

    def probe(b: int) -> tuple[bool, int | None]:
        probed.append(b)
        return b <= 90, cap(b)

    def capacity(b: int) -> int:
        scanned.append(b)
        return cap(b)

    assert request_ranges(probe, 10, 1 << 20, capacity) == [(1, 5), (41, 60), (71, 90)]
    assert sorted(probed) == [1, 2, 4, 8, 16, 32, 64, 80, 88, 90, 91, 92, 96, 128]
    assert sorted(scanned) == sorted(set(range(1, 91)) - set(probed))


def test_request_ranges_nothing_fits() -> None:
    from kvgen._engines.plans import request_ranges

    assert request_ranges(lambda b: (False, None), 10, 100) == []
    assert request_ranges(lambda b: (b <= 10, 5), 10, 100) == []
