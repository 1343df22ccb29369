"""The named policy terms that make engines differ for one model, with their size (stdlib only).

``policy_terms`` lists, for one engine and model, each policy of ``POLICY_TERMS`` that applies,
with a one-line account in numbers (what ``kvgen compare`` prints under its table).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from kvgen._engines import _sglang, _trtllm, _vllm
from kvgen._engines._layers import cached_layers
from kvgen._model.engine_rows import _vllm_ssm_dtype, engine_arch
from kvgen.sizing import engines_sglang
from kvgen.sizing.engines_registry import DEFAULT_MAX_BATCH_SIZE, Release, release

if TYPE_CHECKING:
    from kvgen._spec.models import Family

MIB = 1 << 20


class PolicyTerm(NamedTuple):
    name: str  # a key of kvgen._engines.capacity.POLICY_TERMS
    detail: str  # the term for this model, in numbers


class TermsAsked(NamedTuple):
    """What ``policy_terms`` was asked, as each engine's terms read it."""

    block_size: int | None
    max_seq_len: int
    max_num_tokens: int
    max_batch_size: int
    ssm_dtype: str
    speculative: str
    mamba_radix_cache_strategy: str
    heterogeneous_vocab: bool
    dtype: str | None  # the model dtype the engine is launched with (None: its "auto")


def _vllm_terms(found: Release, family: Family, model: str, asked: TermsAsked) -> list[PolicyTerm]:
    block_size = found.block_size if asked.block_size is None else asked.block_size
    max_seq_len, max_num_tokens = asked.max_seq_len, asked.max_num_tokens
    heterogeneous_vocab = asked.heterogeneous_vocab
    spec_model = family.model(model)
    profile = family.profile(asked.speculative)
    plan = _vllm.vllm_plan(family, spec_model, block_size=block_size, speculative=profile,
                           heterogeneous_vocab=heterogeneous_vocab, served_by=found,
                           dtype=asked.dtype)  # fmt: skip
    terms = []
    if plan.padding_layers:
        layers = sum(g.group_count for g in plan.groups) * plan.group_size
        terms.append(
            PolicyTerm(
                "group_padding_layers",
                f"{sum(g.group_count for g in plan.groups)} groups of {plan.group_size} layers, "
                f"{plan.padding_layers} of them padding "
                f"({100 * plan.padding_layers / layers:.1f}% of every block unused)",
            )
        )
    terms.append(PolicyTerm("null_block", f"one block of {plan.bytes_per_block:,} bytes held back"))
    in_flight = _vllm.in_flight_tokens(max_num_tokens, async_scheduling=True)
    for count, reach, size in plan.sliding:
        held = min(reach + in_flight, max_seq_len)
        blocks = -(-held // size) + 1
        terms.append(
            PolicyTerm(
                "swa_in_flight_bound",
                f"window {reach + 1}: {blocks} blocks per request on each of {count} sliding "
                f"group{'s' if count != 1 else ''} "
                f"(min({reach} + {in_flight} in flight, {max_seq_len}) tokens + 1 block)",
            )
        )
    if plan.mamba_page_padding or plan.block_size != block_size:
        terms.append(
            PolicyTerm(
                "mamba_page_unification",
                f"attention block {block_size} -> {plan.block_size} tokens; each state page "
                f"padded by {plan.mamba_page_padding:,} bytes",
            )
        )
    if plan.state_groups:
        blocks = 2 + plan.checkpoint_blocks + plan.speculative_blocks
        terms.append(
            PolicyTerm(
                "mamba_align_mode",
                f"{blocks} state blocks per request on each of {plan.state_groups} Mamba groups "
                f"({1 + plan.speculative_blocks} with prefix caching off)",
            )
        )
    if engine_arch(family).mamba2_form == "kda":  # the spec says fp32 too (ssm_dtype)
        terms.append(PolicyTerm("vllm_fp32_ssm_state", "KDA recurrent state in fp32 (vLLM "
                                "kda_state_dtype), no prefill checkpoint block"))  # fmt: skip
    elif _vllm_ssm_dtype(family, family.model(model)) == "fp32":  # the spec's
        terms.append(PolicyTerm("vllm_fp32_ssm_state", "SSM state in fp32, not the spec's dtype"))
    return terms


def _sglang_terms(
    found: Release, family: Family, model: str, asked: TermsAsked
) -> list[PolicyTerm]:
    ssm_dtype, speculative = asked.ssm_dtype, asked.speculative
    strategy = asked.mamba_radix_cache_strategy
    spec_model = family.model(model)
    profile = None if speculative == "none" else family.profile(speculative)
    plan = _sglang.sglang_plan(family, spec_model, ssm_dtype=ssm_dtype, speculative=profile,
                               served_by=found, dtype=asked.dtype)  # fmt: skip
    # An encoder-decoder model has SGLang rows only (its cross layers sized as the others).
    layers = () if plan.encoder_tokens else cached_layers(family, spec_model)
    sliding = sum(1 for lay in layers if lay.attention == "sliding")
    terms = []
    if plan.encoder_tokens:
        terms.append(
            PolicyTerm(
                "encoder_tokens_in_pool",
                f"{plan.encoder_tokens:,} encoder tokens per request (the spec's encoder_tokens) "
                f"take pool slots of {plan.full_bytes_per_token:,} B before its text; "
                f"{engines_sglang.SGLANG_VLM_CACHE_SIZE_MB} MiB of the budget kept for the "
                "multimodal cache",
            )
        )
    if sliding and not plan.swa_bytes_per_token:
        terms.append(
            PolicyTerm(
                "full_length_layers",
                f"{sliding} sliding layers sized full length (not a hybrid-SWA architecture)",
            )
        )
    if plan.swa_bytes_per_token:
        terms.append(
            PolicyTerm(
                "swa_ratio",
                f"sliding pool = {_sglang.SWA_FULL_TOKENS_RATIO} x the full pool's tokens, "
                f"window {plan.window} or not",
            )
        )
    if plan.state_bytes_per_request:
        ratio = _sglang.MAMBA_FULL_MEMORY_RATIO
        size = f"{plan.state_bytes_per_request / MIB:.1f} MiB"
        terms.append(
            PolicyTerm(
                "mamba_memory_ratio",
                f"one state slot of {size} per max_running_requests (--max-batch-size): the "
                "radix cache disabled"
                if strategy == "disabled"
                else f"{ratio}/{1 + ratio:g} of the budget to state slots of {size}",
            )
        )
        terms.append(
            PolicyTerm(
                "mamba_running_requests",
                f"at most 1 running request per {_sglang.SLOTS_PER_RUNNING_REQUEST[strategy]} "
                f"state slots ({strategy})",
            )
        )
        if plan.draft_tokens:
            terms.append(
                PolicyTerm(
                    "mamba_spec_states",
                    f"{plan.draft_tokens} intermediate states of "
                    f"{plan.state_bytes_per_request / MIB:.1f} MiB per running request",
                )
            )
        states = [k.recurrent_dims for k in spec_model.layer_kinds.values()]
        said = {d.ssm_dtype for d in states if d is not None}  # Kimi Linear: fp32 already
        if plan.ssm_extra_bytes and said != {"fp32"}:
            spec_bytes = plan.state_bytes_per_request - plan.ssm_extra_bytes
            terms.append(
                PolicyTerm(
                    "fp32_ssm_state",
                    f"{plan.state_bytes_per_request / MIB:.1f} MiB per request "
                    f"vs {spec_bytes / MIB:.1f} MiB in the spec's dtype",
                )
            )
    return terms


def _trtllm_terms(
    found: Release, family: Family, model: str, asked: TermsAsked
) -> list[PolicyTerm]:
    block_size = family.tokens_per_block if asked.block_size is None else asked.block_size
    max_seq_len, max_num_tokens = asked.max_seq_len, asked.max_num_tokens
    max_batch_size, speculative = asked.max_batch_size, asked.speculative
    target = _trtllm.target_terms(
        family,
        model,
        speculative=speculative,
        max_batch_size=max_batch_size,
        max_num_tokens=max_num_tokens,
        max_seq_len=max_seq_len,
        tp_size=1,
        block_size=block_size,
    )
    state = sum(lay.state_bytes for lay in cached_layers(family, family.model(model)))
    terms = []
    if target["per_request"] > state:
        terms.append(
            PolicyTerm(
                "swa_pages_per_request",
                f"{max_batch_size} x {target['per_request'] - state:,} bytes of sliding pages "
                f"+ {max_num_tokens} x {target['ctx_swa']:,} bytes of context",
            )
        )
    if state:
        terms.append(
            PolicyTerm(
                "recurrent_state_slots",
                f"{max_batch_size} x {state / MIB:.1f} MiB of recurrent state",
            )
        )
    return terms


def policy_terms(
    family: Family,
    model: str,
    *,
    engine: str,
    max_seq_len: int,
    max_num_tokens: int,
    block_size: int | None = None,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    ssm_dtype: str = "fp32",
    speculative: str = "none",
    mamba_radix_cache_strategy: str = _sglang.MAMBA_STRATEGY,
    heterogeneous_vocab: bool = False,
    dtype: str | None = None,
) -> list[PolicyTerm]:
    """The policy terms of ``engine`` that apply to ``model``, each with its size (SGLang's
    ``mamba_radix_cache_strategy``: its state slots per running request; vLLM's
    ``heterogeneous_vocab``: its use_heterogeneous_vocab, as ``engine_capacity`` reads it),
    sized in the cache dtype the engine serves the model in, launched with model dtype
    ``dtype`` (None: its "auto"), as ``engine_capacity`` sizes it (``Release.cache_dtype``;
    TensorRT-LLM keeps the checkpoint's). Each engine's terms are its hook
    (``kvgen.sizing.engines_registry``, ``Hooks.terms``)."""
    found = release(engine)
    asked = TermsAsked(block_size, max_seq_len, max_num_tokens, max_batch_size, ssm_dtype,
                       speculative, mamba_radix_cache_strategy, heterogeneous_vocab,
                       dtype)  # fmt: skip
    terms: list[PolicyTerm] = globals()[found.engine.hooks.terms](found, family, model, asked)
    return terms
