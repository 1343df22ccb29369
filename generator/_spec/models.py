"""Spec format v1: the pydantic models that are the contract of a model-family YAML file.

The JSON Schema in ``schema/kvspec.schema.json`` is exported from these models
(``kvgen schema``); the field docs below become its descriptions.

Structural rules (types, ranges, unknown keys, identifiers) live here; semantic
rules that need the whole family (undefined pattern kinds, window >= max_seq_len, ...)
are lint rules under ``generator/rules`` so that they get stable codes and positions.
"""

from __future__ import annotations

import keyword
from typing import Annotated, Literal, get_args

from kvgen._spec.shapes import shape_problem
from kvgen.sizing import facts
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

SCHEMA_ID = "https://kvgen.dev/schema/kvspec-v1.schema.json"

Dtype = Literal[
    "fp32",
    "bf16",
    "fp16",
    "fp8",
    "nvfp4",
    "fp8_per_token_head",
    "int8_per_token_head",
    "mxfp8",
    "mxfp4",
    "fp8_ds_mla",
]
DTYPES: tuple[str, ...] = get_args(Dtype)
# Quantized layouts that carry their scales in the cache (docs/cost-model.md §1): facts.
SCALED_DTYPES = facts.SCALED_DTYPES

SpeculativeMode = Literal[
    "eagle3",
    "eagle3_two_model",
    "mtp",
    "mtp_eagle",
    "mtp_eagle_two_model",
    "draft_target",
    "draft_target_two_model",
    "pard",
    "dflash",
    "ngram",
]
SPECULATIVE_MODES: tuple[str, ...] = get_args(SpeculativeMode)

# docs/cost-model.md §6: one-model external drafters keep their own pool inside the GPU budget.
MODES_WITH_DRAFT_POOL = frozenset({"pard", "dflash", "draft_target"})
# One-model modes whose draft layers live in the target's own cache manager.
MODES_WITH_EXTRA_LAYERS = frozenset({"eagle3", "mtp", "mtp_eagle"})


def _check_identifier(value: str) -> str:
    if keyword.iskeyword(value) or keyword.issoftkeyword(value):
        raise ValueError(f"{value!r} is a Python keyword; choose another name")
    return value


# Bounds shared with `kvgen import-hf` (which refuses configs past them before building).
MAX_LAYERS = 4096
MAX_SEQ_LEN = 1 << 26
MAX_WINDOW = 1 << 24
MAX_HEADS = 4096
MAX_DIM = 65536
MAX_HIDDEN_SIZE = 1 << 20
MAX_BYTES_PER_TOKEN = 1 << 30
MAX_STATE_BYTES = 1 << 40
MAX_VOCAB_SIZE = 1 << 24

# Names that become Python names in generated code (family, model, profile).
Identifier = Annotated[
    str,
    Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=64),
    AfterValidator(_check_identifier),
]
# Layer-kind names only key the spec's own tables, so "global" is fine.
KindName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]
# config.json's architectures[0]: the model class an engine loads, whose support, cache layout
# and start-up checks it decides (vLLM's model registry, SGLang's is_hybrid_swa_model).
Architecture = Annotated[
    str,
    Field(
        pattern=r"^[A-Za-z][A-Za-z0-9_]*$",
        max_length=128,
        description="config.json architectures[0]: the model class engines load "
        "(vLLM's and SGLang's choices of support and cache layout read it, never the "
        "family name).",
    ),
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _integral_floats(cls, value: object) -> object:
        """JSON Schema's ``integer`` is any number with a zero fractional part (``128.0``
        included), and editors validate specs with it; reading ``128.0`` as ``128`` keeps
        kvgen and the exported schema in agreement. ``128.5``, strings and booleans stay
        errors (strict mode)."""
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value


class MambaState(_Strict):
    """The recurrent state of one Mamba-2 / Gated-DeltaNet layer as the engine allocates it
    (docs/cost-model.md §8): a conv window ``conv_dim/tp x (d_conv - 1)`` in the cache dtype,
    ``conv_dim = num_heads*head_dim + 2*n_groups*d_state``, and an SSM state
    ``num_heads/tp x head_dim x d_state`` in ``ssm_dtype``. For Gated DeltaNet (Qwen3-Next):
    num_heads = value heads, head_dim = value head dim, n_groups = key heads, d_state = key
    head dim."""

    num_heads: int = Field(ge=1, le=MAX_HEADS, description="SSM heads (split by tp).")
    head_dim: int = Field(ge=1, le=MAX_DIM, description="SSM head dimension.")
    d_state: int = Field(ge=1, le=MAX_DIM, description="SSM state size per head.")
    n_groups: int = Field(ge=1, le=MAX_HEADS, description="B/C groups (split by tp).")
    d_conv: int = Field(ge=2, le=64, description="Convolution kernel width (d_conv - 1 kept).")
    ssm_dtype: Dtype | None = Field(
        default=None,
        description="SSM cache dtype (e.g. fp32); defaults to the kind's / pool's cache dtype.",
    )
    mamba_ssm_cache_dtype: Dtype | None = Field(
        default=None,
        description="config.json mamba_ssm_cache_dtype: the SSM state dtype vLLM's "
        "mamba_ssm_cache_dtype 'auto' resolves to for this model (NemotronH: the config's "
        "value, float32 where it has none); absent: the conv dtype.",
    )

    @property
    def conv_dim(self) -> int:
        return self.num_heads * self.head_dim + 2 * self.n_groups * self.d_state


class Mamba1State(_Strict):
    """The recurrent state of one Mamba-1 layer (Jamba, Falcon-Mamba) as the engines allocate it
    (docs/cost-model.md §8; vLLM ``MambaStateShapeCalculator.mamba1_state_shape``): a conv
    window ``d_inner/tp x (d_conv - 1)`` in the cache dtype and an SSM state
    ``d_inner/tp x d_state`` in ``ssm_dtype``, with ``d_inner = mamba_expand * hidden_size``.
    Unlike Mamba-2 there are no heads and no B/C groups: the conv window holds x alone and
    every inner channel keeps its own ``d_state`` vector."""

    d_inner: int = Field(
        ge=1,
        le=MAX_HIDDEN_SIZE,
        description="Inner channels, mamba_expand x hidden_size (split by tp).",
    )
    d_state: int = Field(ge=1, le=MAX_DIM, description="SSM state size per channel.")
    d_conv: int = Field(ge=2, le=64, description="Convolution kernel width (d_conv - 1 kept).")
    ssm_dtype: Dtype | None = Field(
        default=None,
        description="SSM cache dtype (e.g. fp32); defaults to the kind's / pool's cache dtype.",
    )

    def as_mamba2(self) -> MambaState:
        """The same buffers in Mamba-2 dimensions: one channel per head (head_dim 1) and no
        B/C groups, so ``conv_dim = d_inner`` and the SSM state is ``d_inner x d_state``;
        the sizing tables, the shim and the engines' split by tp need no second formula.
        Built without validation because ``n_groups = 0`` is outside what a spec may write."""
        return MambaState.model_construct(
            num_heads=self.d_inner,
            head_dim=1,
            d_state=self.d_state,
            n_groups=0,
            d_conv=self.d_conv,
            ssm_dtype=self.ssm_dtype,
        )


class LinearState(_Strict):
    """The recurrent state of one linear-attention layer (lightning attention: Ling/Ring
    linear, BailingMoeV2.5; MiniMax-Text-01) as the engines allocate it (docs/cost-model.md
    §8; vLLM ``MambaStateShapeCalculator.linear_attention_state_shape``): one
    ``head_dim x head_dim`` matrix (the running K^T V) per head, ``num_heads/tp`` heads per
    rank, in the kind's cache dtype, and no conv window."""

    num_heads: int = Field(
        ge=1, le=MAX_HEADS, description="Linear-attention heads, one matrix each (split by tp)."
    )
    head_dim: int = Field(ge=1, le=MAX_DIM, description="Head dimension (the matrix's side).")

    def as_mamba2(self) -> MambaState:
        """The same buffer in Mamba-2 dimensions, as SGLang writes it (``BailingHybridConfig
        .mamba2_cache_params``: n_groups 0, conv_kernel 1, state_size head_dim): no conv
        window (``d_conv - 1 = 0`` rows of ``num_heads*head_dim`` channels) and an SSM state
        ``num_heads/tp x head_dim x head_dim`` in the cache dtype. Built without validation
        because ``d_conv = 1`` and ``n_groups = 0`` are outside what a spec may write."""
        return MambaState.model_construct(
            num_heads=self.num_heads,
            head_dim=self.head_dim,
            d_state=self.head_dim,
            n_groups=0,
            d_conv=1,
            ssm_dtype=None,
        )


class LayerKind(_Strict):
    """How one kind of layer stores its cache.

    Shape: ``kv_heads`` + ``head_dim`` (standard attention; ``head_dim`` may be derived from
    the model's ``hidden_size / num_attention_heads``; ``v_head_dim`` where V's head size
    differs from K's), ``kv_lora_rank`` + ``qk_rope_head_dim``
    (MLA latent cache, never split by tensor parallelism), ``bytes_per_token`` (a synthetic shape,
    per rank), or ``state_bytes`` (a recurrent layer: a fixed state per request, no per-token cost).
    ``attention: none`` is a layer without any cache (an MLP-only or MoE-only block of a hybrid):
    no shape, no cost, but it keeps its place in the layer index (pipeline ranks split by it).
    """

    attention: Literal["full", "sliding", "recurrent", "none", "cross", "chunked"] = Field(
        description="full attention, sliding-window attention, a recurrent (Mamba, "
        "linear-attention) layer with a fixed state per request, none: a layer that holds "
        "no cache at all (MLP-only / MoE-only blocks), counted in the layer index only, "
        "cross: a cross-attention layer caching K/V of encoder_tokens encoder tokens per "
        "request (docs/cost-model.md §4), with no per-token growth, or chunked: local "
        "attention within fixed chunks of `chunk` tokens (Llama 4 RoPE layers)."
    )
    window: int | None = Field(
        default=None, ge=1, le=MAX_WINDOW, description="Attention window in tokens (sliding only)."
    )
    sink_tokens: int = Field(
        default=0, ge=0, le=1 << 16, description="Attention-sink tokens kept forever (sliding)."
    )
    kv_heads: int | None = Field(default=None, ge=1, le=MAX_HEADS)
    head_dim: int | None = Field(default=None, ge=1, le=MAX_DIM)
    v_head_dim: int | None = Field(
        default=None,
        ge=1,
        le=MAX_DIM,
        description="V head size where it differs from K's head_dim (standard attention only; "
        "vLLM head_size_v, SGLang v_head_dim); defaults to head_dim.",
    )
    kv_lora_rank: int | None = Field(default=None, ge=1, le=MAX_DIM, description="MLA latent rank.")
    qk_rope_head_dim: int | None = Field(
        default=None, ge=0, le=MAX_DIM, description="MLA decoupled RoPE key dimension."
    )
    bytes_per_token: int | None = Field(
        default=None,
        ge=1,
        le=MAX_BYTES_PER_TOKEN,
        description="Raw bytes per token per layer on one rank.",
    )
    extra_bytes_per_token: int = Field(
        default=0,
        ge=0,
        le=1 << 30,
        description="Extra per-layer buffers (e.g. a sparse-attention index-K cache), per token.",
    )
    state_bytes: int | None = Field(
        default=None,
        ge=1,
        le=MAX_STATE_BYTES,
        description="Recurrent state per request per layer at tp=1 (split by ceil over tp).",
    )
    mamba: MambaState | None = Field(
        default=None,
        description="Recurrent state dimensions (conv + SSM buffers, docs/cost-model.md §8); "
        "the dimension form of state_bytes. On a full kind beside kv_heads: a parallel hybrid "
        "layer (Falcon-H1) that holds both its K/V cache and this Mamba-2 state.",
    )
    dtype: Dtype | None = Field(
        default=None, description="Per-kind cache dtype; defaults to the pool's kv_cache_dtype."
    )
    index_head_dim: int | None = Field(
        default=None,
        ge=1,
        le=MAX_DIM,
        description="MLA only: head dim of a sparse-attention indexer's key cache "
        "(DeepSeek-V3.2 index_head_dim), stored fp8 with one fp32 scale per 128 elements.",
    )
    reads: int | None = Field(
        default=None,
        ge=0,
        le=MAX_LAYERS - 1,
        description="KV sharing: every layer of this kind attends over the cache of the layer "
        "with this index (same stack, earlier, same shape) and holds no cache of its own; it "
        "keeps its index (pipeline ranks split by it). Gemma 3n num_kv_shared_layers; vLLM "
        "kv_sharing_target_layer_name.",
    )
    encoder_tokens: int | None = Field(
        default=None,
        ge=1,
        le=MAX_SEQ_LEN,
        description="Cross-attention only: encoder tokens whose K/V every request caches (e.g. "
        "vision tiles x tokens per tile); the runtime keyword encoder_tokens= overrides it.",
    )
    mamba1: Mamba1State | None = Field(
        default=None,
        description="Mamba-1 state dimensions (Jamba: conv + SSM buffers of d_inner channels, "
        "docs/cost-model.md §8); the Mamba-1 form of mamba.",
    )
    linear: LinearState | None = Field(
        default=None,
        description="Linear-attention state dimensions (lightning attention: a head_dim x "
        "head_dim matrix per head in the cache dtype, no conv window, docs/cost-model.md §8).",
    )
    chunk: int | None = Field(
        default=None,
        ge=1,
        le=MAX_WINDOW,
        description="Attention chunk in tokens (chunked only): a token at position p attends "
        "to positions [floor(p/chunk)*chunk, p], so earlier chunks' pages go stale.",
    )

    @model_validator(mode="after")
    def _one_shape(self) -> LayerKind:
        problem = shape_problem(self)
        if problem is not None:
            raise ValueError(problem)
        return self

    @property
    def parallel_state(self) -> bool:
        """Whether the layer holds a Mamba-2 state beside its K/V cache (Falcon-H1)."""
        return self.attention == "full" and self.mamba is not None

    @property
    def recurrent_dims(self) -> MambaState | None:
        """The recurrent state's dimensions in Mamba-2 form (``mamba1`` and ``linear``
        lowered, §8); none for the raw ``state_bytes`` form and for attention kinds."""
        if self.mamba1 is not None:
            return self.mamba1.as_mamba2()
        if self.linear is not None:
            return self.linear.as_mamba2()
        return self.mamba


class LayerPattern(_Strict):
    """``count`` layers whose kinds repeat ``pattern`` cyclically (layer i has pattern[i % len])."""

    count: int = Field(ge=1, le=MAX_LAYERS)
    pattern: list[KindName] = Field(min_length=1, max_length=4096)


class LayerStack(_Strict):
    """A set of layer kinds and the cyclic pattern that places them."""

    layer_kinds: dict[KindName, LayerKind] = Field(min_length=1)
    layers: LayerPattern
    kv_cache_dtype: Dtype | None = Field(
        default=None,
        description="Cache dtype of this pool; a draft pool inherits the family's when omitted.",
    )


# Moves no cache: a fact engines check (vLLM's "draft_model" wants draft and target equal).
VocabSize = Annotated[
    int | None, Field(ge=1, le=MAX_VOCAB_SIZE, description="config.json vocab_size.")
]


class DraftStack(LayerStack):
    """A separate draft model's layers, and its vocabulary where known."""

    vocab_size: VocabSize = None


class Model(LayerStack):
    """One release of the family; becomes a name in the generated module."""

    name: Identifier
    max_seq_len: int = Field(ge=1, le=MAX_SEQ_LEN, description="Native context length.")
    hidden_size: int | None = Field(
        default=None, ge=1, le=MAX_HIDDEN_SIZE, description="Derives head_dim if absent."
    )
    num_attention_heads: int | None = Field(default=None, ge=1, le=MAX_HEADS)
    vocab_size: VocabSize = None
    architecture: Architecture | None = None


class Speculative(_Strict):
    """A named speculative-decoding profile (docs/cost-model.md §2)."""

    name: Identifier
    mode: SpeculativeMode
    max_draft_len: int = Field(ge=1, le=64, description="K: draft tokens per step.")
    tree_draft_tokens: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="T, total draft tokens of an EAGLE3 dynamic tree (eagle3 only).",
    )
    draft: DraftStack | None = Field(
        default=None,
        description="The separate draft pool of a one-model external drafter (pard, dflash, "
        "draft_target).",
    )
    extra_layers: LayerStack | None = Field(
        default=None,
        description="Draft layers held by the target's own cache manager (eagle3, mtp, mtp_eagle).",
    )
    models: list[Identifier] | None = Field(
        default=None,
        min_length=1,
        description="Models this profile applies to; every model when omitted.",
    )

    def applies_to(self, model_name: str) -> bool:
        """Whether this profile may be used with the model ``model_name``."""
        return self.models is None or model_name in self.models


class Acknowledgement(_Strict):
    """A reviewed capacity-reducing or API change (read by ``kvgen diff``)."""

    change: Literal["capacity-reducing", "api"]
    model: str = Field(default="*", description="Model name, or * for every model.")
    profile: str = Field(default="*", description="Profile name, or * for every profile.")
    reason: str = Field(min_length=1)


class Family(_Strict):
    """A model family: its releases, their layer shapes, and the speculative profiles used."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        json_schema_extra={"$id": SCHEMA_ID, "title": "kvgen model-family spec v1"},
    )

    schema_version: Literal[1]
    family: Identifier
    tokens_per_block: int = Field(ge=1, le=4096, description="Tokens per page; a power of two.")
    kv_cache_dtype: Dtype
    models: list[Model] = Field(min_length=1)
    speculative: list[Speculative] = Field(default_factory=list)
    acknowledge: list[Acknowledgement] = Field(default_factory=list)

    def model(self, name: str) -> Model:
        for model in self.models:
            if model.name == name:
                return model
        raise KeyError(name)

    def profile(self, name: str) -> Speculative | None:
        """The profile called ``name``; ``None`` for the implicit ``"none"`` profile."""
        if name == "none":
            return None
        for profile in self.speculative:
            if profile.name == name:
                return profile
        raise KeyError(name)

    @property
    def profile_names(self) -> tuple[str, ...]:
        return ("none", *(p.name for p in self.speculative))

    def profiles_for(self, model_name: str) -> tuple[str, ...]:
        """The profiles that apply to ``model_name``, ``"none"`` first (it always applies)."""
        return ("none", *(p.name for p in self.speculative if p.applies_to(model_name)))

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """Every applicable (model, profile) pair, in spec order."""
        return tuple(
            (model.name, profile)
            for model in self.models
            for profile in self.profiles_for(model.name)
        )
