"""The options of one sizing call as one validated value (``_Options``, a plain tuple: the
answers cache key), each argument checked once. Part of the interpreter ``sizing_core`` binds
(docs/api.md, "Options", "The interpreter").
"""

import operator
from collections.abc import Iterable
from typing import Final

from .facts import (
    DCP_ATTENTION,
    dcp_attention,
    dcp_heads,
    dcp_outside_tp,
    dcp_with_attention_dp,
    no_encoder,
)
from .sizing_kinds import (
    _MODELS,
    _PROFILES,
    MODELS,
    SPECULATIVE,
    Model,
    Profile,
)

__all__ = ["MAMBA_STATE_UPDATES", "SEMANTICS", "TIERS", "headroom"]

SEMANTICS = ("trtllm-v2", "exact")
_UTIL = 0.95  # the default max_util_for_resume
TIERS = ("gpu", "host")
MAMBA_STATE_UPDATES = ("default", "replay")
# Every count and byte size an engine takes is a 64-bit integer; past this bound an argument
# describes no deployment, and the float arithmetic of the engine policies would overflow.
_MAX_INT = (1 << 63) - 1
# Default counts: CPython's small ints are one object each, so ``x is _ONE`` is an int 1 only.
_ONE, _ZERO = 1, 0
# What ``_options`` checks each model's options against: its profiles, context and layers
# (``_derive_limits``). Defined here: a method call on an imported name (``_LIMITS.get``)
# compiles to a slower attribute load, as for a module.
_LIMITS: dict[str, tuple[tuple[str, ...], int, int]] = {}


def _derive_limits() -> None:
    """Per family, at bind (``sizing_core._derive``, over the family's namespace)."""
    global _LIMITS
    _LIMITS = {
        name: (model.profiles, model.max_seq_len, model.layers.layer_count)
        for name, model in _MODELS.items()
    }


# Every option of one sizing call, validated once (``_options``): plain ints, bools, a float
# and the names of the tables, so equal options are equal values; the key of the answers
# cache. The fields are the public keywords in ``cost_terms``' order (less ``engine_terms``,
# which changes no term): model, speculative, max_batch_size, max_num_tokens, max_seq_len,
# tp_size, pp_size, pp_rank, scratch_reuse, block_reuse, max_util_for_resume, overlap_slack,
# semantics, attention_dp, mamba_state_update, dcp_size, encoder_tokens. A plain tuple, not a
# NamedTuple: it is built on every call, and building and hashing a NamedTuple instance cost
# a seventh of a warm call (0.13 of 0.95 us); the fields read by name outside ``_compute``
# (which unpacks them all) have positions below.
_Options = tuple[
    str, str, int, int, int, int, int, int, bool, bool, float, bool, str, bool, str, int, int | None
]
_SPECULATIVE_AT: Final = 1
_BATCH_AT: Final = 2
_CHUNK_AT: Final = 3
_SEQ_LEN_AT: Final = 4
_UTIL_AT: Final = 10
_OVERLAP_SLACK_AT: Final = 11


def _did_you_mean(word: object, choices: Iterable[str]) -> str:
    # The same wording as kvgen._util.suggest, copied: a generated module cannot import kvgen.
    if not isinstance(word, str):
        return ""
    import difflib

    lowered = {choice.lower(): choice for choice in sorted(set(choices))}
    found = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return f" (did you mean {lowered[found[0]]!r}?)" if found else ""


def _name(argument: str, value: object, allowed: Iterable[str]) -> str:
    """``value`` when it is one of ``allowed``, else ValueError naming all of them."""
    allowed = tuple(allowed)
    if isinstance(value, str) and value in allowed:
        return value
    hint = _did_you_mean(value, allowed)
    raise ValueError(f"{argument} must be one of {', '.join(allowed)}; got {_shown(value)}{hint}")


def _shown(value: object) -> str:
    # repr of an argument for a message; an int too long for str() is shown by its size.
    if isinstance(value, int) and value.bit_length() > 256:
        return f"an int of {value.bit_length()} bits"
    return repr(value)


def _integer(
    argument: str, value: object, low: int, high: int | None = None, what: str = ""
) -> int:
    """Any ``operator.index``-able integer (numpy ints too) in [low, high] (high: at most
    ``_MAX_INT``), as a plain ``int``; never a bool or a float."""
    try:
        number = None if isinstance(value, bool | float) else int(operator.index(value))  # type: ignore[arg-type]
    except TypeError:
        number = None
    kind = "a positive int" if low == 1 else "a non-negative int" if low == 0 else "an int"
    if number is None or number < low:
        raise ValueError(f"{argument} must be {kind}, got {_shown(value)}")
    if high is None:
        high, what = _MAX_INT, " (a 64-bit count)"
    if number > high:
        raise ValueError(f"{argument} must be <= {high}{what}, got {_shown(number)}")
    return number


def _real(value: object) -> float | None:
    """A real number (int, float, numpy, Decimal, Fraction) as a float, else None (a bool too)."""
    if isinstance(value, bool | str | bytes | bytearray) or not hasattr(type(value), "__float__"):
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None


def _fraction(argument: str, value: object) -> float:
    """A real number in (0, 1] as a float (numpy floats too); never a bool or a string."""
    number = _real(value)
    if number is None or not 0.0 < number <= 1.0:
        raise ValueError(f"{argument} must be in (0, 1], got {_shown(value)}")
    return number


def _flag(argument: str, value: object) -> bool:
    if value is True or value is False:
        return value
    raise ValueError(f"{argument} must be True or False, got {value!r}")


def _options(
    model: object,
    speculative: object,
    batch: object,
    chunk: object,
    max_seq_len: object,
    tp_size: object = 1,
    pp_size: object = 1,
    pp_rank: object = 0,
    scratch_reuse: object = False,
    block_reuse: object = False,
    util: object = _UTIL,
    overlap_slack: object = False,
    semantics: object = "trtllm-v2",
    attention_dp: object = False,
    mamba_state_update: object = "default",
    dcp_size: object = 1,
    encoder_tokens: object = None,
) -> _Options:
    """The one validation of every public function's options, in ``_Options``' order: each
    checked once, as a plain value, or ValueError naming the argument and what it takes."""
    limits = _LIMITS.get(model) if type(model) is str else None
    if limits is None:
        model = _name("model", model, MODELS)
        limits = _LIMITS[model]
    profiles, most_tokens, layer_count = limits
    if speculative not in profiles:
        if type(speculative) is not str or speculative not in _PROFILES:
            speculative = _name("speculative", speculative, SPECULATIVE)
        raise ValueError(
            f"speculative {speculative!r} does not apply to model {model!r}; "
            f"profiles for {model}: {', '.join(profiles)}"
        )
    if type(batch) is not int or not 0 < batch <= _MAX_INT:
        batch = _integer("max_batch_size", batch, 1)
    if type(chunk) is not int or not 0 < chunk <= _MAX_INT:
        chunk = _integer("max_num_tokens", chunk, 1)
    if type(max_seq_len) is not int or not 0 < max_seq_len <= most_tokens:
        max_seq_len = _integer("max_seq_len", max_seq_len, 1, most_tokens, f" for {model}")
    if type(tp_size) is not int or not 0 < tp_size <= _MAX_INT:
        tp_size = _integer("tp_size", tp_size, 1)
    if type(pp_size) is not int or (pp_size != 1 and not 0 < pp_size <= layer_count):
        pp_size = _integer("pp_size", pp_size, 1, layer_count, " layers")
    if type(pp_rank) is not int or not 0 <= pp_rank < pp_size:
        pp_rank = _integer("pp_rank", pp_rank, 0)
        if pp_rank >= pp_size:
            raise ValueError(f"pp_rank must be in [0, {pp_size}), got {pp_rank}")
    if (
        type(scratch_reuse) is not bool
        or type(block_reuse) is not bool
        or type(overlap_slack) is not bool
    ):
        _flag("scratch_reuse", scratch_reuse)
        _flag("block_reuse", block_reuse)
        _flag("overlap_slack", overlap_slack)
    if type(util) is not float or not 0.0 < util <= 1.0:
        util = _fraction("max_util_for_resume", util)
    if semantics != "trtllm-v2" and semantics != "exact":  # also for unhashable values
        _name("semantics", semantics, SEMANTICS)
    if type(attention_dp) is not bool:
        _flag("attention_dp", attention_dp)
    if mamba_state_update != "default" and mamba_state_update != "replay":
        _name("mamba_state_update", mamba_state_update, MAMBA_STATE_UPDATES)
    if type(dcp_size) is not int or dcp_size != 1:
        dcp_size = _dcp_size(str(model), str(speculative), tp_size, attention_dp, dcp_size)
    if encoder_tokens is not None:
        encoder_tokens = _encoder_tokens(_MODELS[str(model)], model, encoder_tokens)
    return (model, speculative, batch, chunk, max_seq_len, tp_size, pp_size, pp_rank,  # type: ignore[return-value]
            scratch_reuse, block_reuse, util, overlap_slack, semantics, attention_dp,
            mamba_state_update, dcp_size, encoder_tokens)  # fmt: skip


def _plain_options(
    model: object, speculative: object, batch: int, chunk: int, max_seq_len: int, tp_size: int
) -> _Options:
    """``_options`` of a call that leaves every option past ``tp_size`` at its default and
    gives its four sizes as ints of type int: those checked inline, ``_options`` naming a bad
    argument (or taking a str subclass of a name)."""
    limits = _LIMITS.get(model) if type(model) is str else None
    if (
        limits is None or type(speculative) is not str or speculative not in limits[0]
        or not 0 < batch <= _MAX_INT or not 0 < chunk <= _MAX_INT
        or not 0 < max_seq_len <= limits[1] or not 0 < tp_size <= _MAX_INT
    ):  # fmt: skip
        return _options(model, speculative, batch, chunk, max_seq_len, tp_size)
    return (model, speculative, batch, chunk, max_seq_len, tp_size, 1, 0, False, False,  # type: ignore[return-value]
            _UTIL, False, "trtllm-v2", False, "default", 1, None)  # fmt: skip


def _dcp_size(model: str, speculative: str, tp_size: int, attention_dp: object, dcp: object) -> int:
    """``dcp`` as an int, or ValueError where the engines refuse decode context parallelism
    (§9): the DCP group is carved from the TP ranks that hold copies of the same KV heads
    (vLLM ``config/parallel.py``, ``config/model.py``), and only full-attention caches are
    sharded (vLLM ``SlidingWindowSpec`` asserts ``DCP not support sliding window``)."""
    dcp = _integer("dcp_size", dcp, 1)
    if dcp == 1:
        return dcp
    if attention_dp:
        raise ValueError(dcp_with_attention_dp(dcp))
    if tp_size % dcp:
        raise ValueError(dcp_outside_tp(tp_size, dcp))
    entry = _MODELS[model]
    for stack in (entry.layers, entry.extra_layers.get(speculative), _PROFILES[speculative].draft):
        for name, kind in stack.kinds.items() if stack is not None else ():
            if kind.attention not in DCP_ATTENTION:
                raise ValueError(dcp_attention(dcp, name, kind.attention))
            if kind.kv_heads and (tp_size <= kind.kv_heads or dcp > tp_size // kind.kv_heads):
                raise ValueError(dcp_heads(dcp, name, kind.kv_heads, tp_size))
    return dcp


def _encoder_tokens(entry: Model, model: object, value: object) -> int:
    """``value`` when the model has cross-attention layers and the encoder can produce that
    many tokens (at most the spec's count); ValueError naming encoder_tokens otherwise."""
    most = max(
        (k.encoder_tokens for k in entry.layers.kinds.values() if k.attention == "cross"),
        default=0,
    )
    if not most:
        raise ValueError(no_encoder(model))
    return _integer("encoder_tokens", value, 1, most, f" for {model}")


def headroom(speculative: str = "none", *, overlap_slack: bool = False) -> int:
    """H = E + G (+ K with the overlap slack): how far capacity runs ahead of history at the
    allocation peak (§2). A property of the profile alone, so it takes no model."""
    profile = _PROFILES[_name("speculative", speculative, SPECULATIVE)]
    return _headroom(profile, _flag("overlap_slack", overlap_slack))


def _headroom(profile: Profile, overlap_slack: bool) -> int:
    return profile.extra + profile.step + (profile.draft_len if overlap_slack else 0)
