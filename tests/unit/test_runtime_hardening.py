"""Refused calls (issue 9 item 7): typed errors, validated before anything changes.

Every reproducer of the issue is a test here, and a derandomized hypothesis property test
interleaves valid and invalid operations and checks that no refused call changes anything.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kvgen.runtime import allocator as rt

from tests.runtime_tables import shim
from tests.workloads import check_invariants, snapshot_state


def full_state(s: rt.KVCacheShim) -> tuple[object, ...]:
    """Requests, block tables, free lists, counters, bytes in use and peak, freed ids."""
    return (
        snapshot_state(s),
        s.bytes_in_use(),
        s.peak_bytes(),
        s.requests,
        frozenset(s._freed),
    )


@pytest.fixture
def mtp4():
    s = shim(speculative="mtp4")  # K = 4: 4 draft slots
    s.add_request(7)
    s.context_chunk(7, 10)
    return s


def test_accepting_more_than_drafted_leaves_no_forward_open(mtp4):
    before = full_state(mtp4)
    with pytest.raises(rt.InvalidStepError, match="accepted must be in"):
        mtp4.generation_step([7], accepted=5)
    assert full_state(mtp4) == before
    mtp4.generation_step([7], accepted=4)  # the next valid step runs
    assert mtp4.request_state(7) == (15, 18)


@pytest.mark.parametrize("accepted", [1.5, "2", None, [1, 2], object()])
def test_an_acceptance_that_is_not_an_int_is_an_invalid_step(mtp4, accepted):
    before = full_state(mtp4)
    with pytest.raises(rt.InvalidStepError):
        mtp4.generation_step([7], accepted=accepted)
    assert full_state(mtp4) == before


def test_numpy_integers_are_integers(mtp4):
    numpy = pytest.importorskip("numpy")
    mtp4.context_chunk(numpy.int64(7), numpy.int32(5))
    mtp4.generation_step([7], accepted=numpy.int64(2))
    mtp4.generation_step(numpy.array([7]), accepted=numpy.array([1]))
    assert mtp4.request_state(7) == (20, 23)
    assert mtp4.layer_views(numpy.int64(0)).keys() == {"k", "v"}


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda s: s.pool("nope"), rt.UnknownNameError),
        (lambda s: s.pool("full", manager="draft"), rt.UnknownNameError),
        (lambda s: s.pool_bytes_in_use("nope"), rt.UnknownNameError),
        (lambda s: s.layer_views(999), rt.UnknownNameError),
        (lambda s: s.layer_views("layers.0", manager="nope"), rt.UnknownNameError),
        (lambda s: s.layer_views(1.5), rt.UnknownNameError),
        (lambda s: s.block_table(7, "nope"), rt.UnknownNameError),
        (lambda s: s.add_request(None), rt.InvalidRequestIdError),
        (lambda s: s.add_request([1]), rt.InvalidRequestIdError),
        (lambda s: s.free([1]), rt.InvalidRequestIdError),
        (lambda s: s.request_state({}), rt.InvalidRequestIdError),
        (lambda s: s.free(8), rt.UnknownRequestError),
        (lambda s: s.add_request(7), rt.DuplicateRequestError),
        (lambda s: s.context_chunk(7, 1.5), rt.InvalidStepError),
        (lambda s: s.context_chunk(7, True), rt.InvalidStepError),
        (lambda s: s.generation_step(7), rt.InvalidStepError),
        (lambda s: s.generation_step([7, 7]), rt.InvalidStepError),
        (lambda s: s.end_generation([7]), rt.InvalidStepError),
        (lambda s: s.block_tables(7, "full"), rt.InvalidStepError),
    ],
)
def test_every_refusal_is_an_allocator_error_and_changes_nothing(mtp4, call, error):
    before = full_state(mtp4)
    with pytest.raises(error):
        call(mtp4)
    assert issubclass(error, rt.AllocatorError)
    assert full_state(mtp4) == before


def test_unknown_names_are_still_key_errors_for_old_callers(mtp4):
    with pytest.raises(KeyError, match="target has no pool 'nope'"):
        mtp4.pool("nope")


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"quota_bytes": 1e9, "max_tokens": None}, "quota_bytes must be an int"),
        ({"quota_bytes": {"draft": 1 << 20}, "max_tokens": None}, "every manager"),
        ({"quota_bytes": -1, "max_tokens": None}, "non-negative"),
        ({"device": "bogus"}, "device must be"),
        ({"device": 3.0}, "device must be"),
        ({"max_batch_size": 2.0}, "max_batch_size must be a positive int"),
        ({"max_batch_size": True}, "max_batch_size must be a positive int"),
        ({"max_tokens": "256"}, "max_tokens must be a non-negative int"),
        ({"pp_rank": 1.0}, "pp_rank"),
        ({"max_util_for_resume": "0.9"}, "max_util_for_resume"),
        ({"pool_pages": {("target", "nope"): 3}}, "unknown pools"),
        ({"pool_pages": {("target", "full"): 1.5}}, "pool_pages"),
        ({"reserve_pages": -1}, "reserve_pages"),
    ],
)
def test_bad_constructor_arguments_are_value_errors(params, match):
    with pytest.raises(ValueError, match=match):
        shim(**params)


def test_numpy_constructor_arguments():
    numpy = pytest.importorskip("numpy")
    s = shim(max_batch_size=numpy.int64(2), max_tokens=numpy.int32(256))
    assert s.quota_bytes() == shim().quota_bytes()


# --------------------------------------------------------------------------- property


# Valid values are drawn more often than invalid ones so that the state gets rich.
RIDS = st.sampled_from([1, 1, 1, 2, 2, 2, 3, 3, 4, None, [5], "x"])
TOKENS = st.one_of(
    st.integers(1, 40), st.integers(1, 40), st.integers(-2, 80), st.sampled_from([1.5, True])
)
ACCEPTED = st.one_of(
    st.integers(0, 3), st.integers(0, 3), st.integers(-1, 8), st.sampled_from([1.5, None, [9]])
)
POOLS = st.sampled_from(["full", "w32", "w32/scratch", "nope"])
MANAGERS = st.sampled_from(["target", "draft", "nope"])
BATCHES = st.one_of(st.lists(RIDS, max_size=3), RIDS)
LAYERS = st.sampled_from([0, 1, 5, "layers.1", "nope", 1.5])

OPERATIONS = st.one_of(
    st.tuples(st.just("add_request"), RIDS),
    st.tuples(st.just("free"), RIDS),
    st.tuples(st.just("suspend"), RIDS),
    st.tuples(st.just("resume"), RIDS),
    st.tuples(st.just("context_chunk"), RIDS, TOKENS),
    st.tuples(st.just("begin_context"), RIDS, TOKENS),
    st.tuples(st.just("end_context"), RIDS),
    st.tuples(st.just("generation_step"), BATCHES, ACCEPTED),
    st.tuples(st.just("begin_generation"), BATCHES),
    st.tuples(st.just("end_generation"), BATCHES, ACCEPTED),
    st.tuples(st.just("block_table"), RIDS, POOLS, MANAGERS),
    st.tuples(st.just("layer_views"), LAYERS, MANAGERS),
    st.tuples(st.just("pool_bytes_in_use"), MANAGERS),
)


@given(
    profile=st.sampled_from(["none", "mtp4", "pard2"]),
    scratch=st.booleans(),
    max_tokens=st.sampled_from([48, 128]),  # 48: 3 full pages, so pages run out often
    operations=st.lists(OPERATIONS, max_size=40),
)
def test_a_refused_call_never_changes_the_shim(profile, scratch, max_tokens, operations):
    s = shim(speculative=profile, scratch_reuse=scratch, max_tokens=max_tokens, max_seq_len=200)
    for rid, tokens in ((1, 20), (2, 3)):
        s.add_request(rid)
        s.context_chunk(rid, tokens)
    for name, *args in operations:
        before = full_state(s)
        try:
            getattr(s, name)(*args)
        except rt.AllocatorError:
            assert full_state(s) == before, (name, args)
        check_invariants(s)
