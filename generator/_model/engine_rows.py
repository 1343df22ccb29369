"""What the engines read of a loaded spec beyond its layers, decided here once: which
speculative profiles vLLM runs in the target's pool (and how), whether SGLang sizes the
architecture as hybrid SWA, which engine cannot run the family: the ``EngineDraft`` rows of
every model's profiles and the family's ``EngineArch``, written into ``TABLES`` with the
interpreter's rows (``sizing_tables``). The engine rows themselves are derived from those
tables by the runtime (``kvgen.sizing.engines_rows.engine_models``), for ``kvgen._engines.capacity``
(at call time, ``engine_model``) and for a generated module (at bind) alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from kvgen._model.cache_kinds import spec_kind
from kvgen._model.sizing_rows import profile_row, stack_row
from kvgen._spec.models import MODES_WITH_DRAFT_POOL
from kvgen.sizing.engines_rows import (
    VLLM_DRAFT_MODEL_MODES,
    VLLM_POOL_DRAFTERS,
    EngineArch,
    EngineDraft,
    EngineModel,
    NotModelled,
    engine_rows,
    kind_rows,
    model_dtype,
    served_tables,
)
from kvgen.sizing.engines_rows import (
    engine_model as derived_engine_model,
)
from kvgen.sizing.sizing_kinds import Model as ModelRow
from kvgen.sizing.sizing_kinds import Profile, SizingTables, Stack

if TYPE_CHECKING:
    from kvgen._spec.models import Family, Model, Speculative
    from kvgen.sizing.engines_registry import Release


class _SglangDraft(TypedDict, total=False):
    """How SGLang runs a separate draft model (``EngineDraft``'s SGLang fields)."""

    sglang_layers: int
    sglang_draft_tokens: int
    sglang_unmodelled: str


# Drafters whose layers live in vLLM's one pool beside the target's (EAGLE-family, MTP; and a
# separate draft model, draft_target or PARD, whose own layers join the pool: PARD is vLLM's
# draft_model method with parallel_drafting (vllm/config/speculative.py), whose K extra query
# slots per request (max_num_new_slots_for_drafting) are scheduler token budget, not KV
# blocks); ngram has no layers. DFlash is not modelled; the two-model modes are
# TensorRT-LLM's, which vLLM cannot run. Defined with the runtime's draft rule
# (``kvgen.sizing.engines_rows``).
VLLM_SPECULATIVE_MODES = VLLM_POOL_DRAFTERS
# TensorRT-LLM's two-model modes (a second engine for the drafter, with its own KV cache), which
# vLLM has no form of, and the one-model modes whose profiles vLLM runs in their place.
VLLM_ONE_MODEL = {
    "eagle3_two_model": ("eagle3",),
    "mtp_eagle_two_model": ("mtp_eagle", "mtp"),
    "draft_target_two_model": ("draft_target",),
}
# The engines choose a model class by config.json's architectures[0], which the spec records
# (``Model.architecture``, written by import-hf): each table below is keyed on it as the engine
# keys its own, never on kvgen's family name, so a model imported under any family name gets
# the answers and refusals of the shipped one.
#
# Architectures SGLang 0.5.23 sizes as hybrid SWA (configs/model_config.py is_hybrid_swa_model:
# its hybrid_swa_archs, SWA_SINK_ARCHS and MIMO_V2_MODEL_ARCHS): gpt-oss, and Llama 4's
# multimodal class, whose chunked layers become the SWA pool (Llama4ForCausalLM is not on the
# list). BeamForCausalLM and LagunaForCausalLM are hybrid SWA only with sliding layers, where
# kvgen's hybrid-SWA rows differ from the plain ones at all.
SGLANG_HYBRID_SWA_ARCHITECTURES = frozenset({
    "BeamForCausalLM", "Llama4ForConditionalGeneration", "DeepseekV4ForCausalLM",
    "DeepseekV4ForCausalLMNextN", "DeepseekV4ForCausalLMDSpark", "GptOssForCausalLM",
    "GraniteSWAForCausalLM", "GraniteMoeSWAForCausalLM", "IQuestQ1ForCausalLM", "IQuestQ1MTP",
    "MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM", "MiMoV2MTP", "Step3p5ForCausalLM",
    "Step3p5MTP", "Step3p7ForConditionalGeneration", "Gemma4ForCausalLM",
    "Gemma4ForConditionalGeneration", "EmbeddingGemma2Model",
    "Gemma4UnifiedForConditionalGeneration", "DiffusionGemmaForBlockDiffusion",
    "LagunaForCausalLM", "MellumForCausalLM", "MuseGlimmerForCausalLM",
    "MuseGlimmerForConditionalGeneration", "InklingForConditionalGeneration",
    "InklingForConditionalGenerationMTP", "UnlimitedOCRForCausalLM",
})  # fmt: skip
# Architectures whose recurrent layers vLLM builds as Gated DeltaNet (QwenGatedDeltaNetAttention
# in models/qwen3_next.py), not MambaMixer2: no group replication in vLLM (SGLang replicates
# key heads fewer than tp), and in align mode a prefill checkpoint block only under the
# FlashInfer GDN prefill.
VLLM_GDN_ARCHITECTURES = frozenset({"Qwen3NextForCausalLM"})
# Architectures whose recurrent layers are Kimi Delta Attention (vllm/models/kimi_k3, the
# registry's KimiLinearForCausalLM: KimiGatedDeltaNetAttention, a GatedDeltaNetAttention
# without Qwen's prefill checkpoint export): kda_state_shape splits the conv channels by
# divide() (no group replication), widens the conv window by the draft tokens, and in align
# mode keeps no prefill checkpoint block (MambaBase.get_kv_cache_spec). vLLM keeps their SSM
# state in fp32 (MambaStateDtypeCalculator.kda_state_dtype reads mamba_ssm_cache_dtype "auto"
# as float32; the spec says ssm_dtype: fp32 as well). Nemotron-H's is the spec's own
# mamba_ssm_cache_dtype (_vllm_ssm_dtype), which import-hf writes from its config.
VLLM_KDA_ARCHITECTURES = frozenset({"KimiLinearForCausalLM"})
# Architectures an engine cannot run at all, with the UNMODELLED key naming its refusal: vLLM
# 0.33.0's registry (vllm/model_executor/models/registry.py) lists Mllama and MiniMax in
# _PREVIOUSLY_SUPPORTED_MODELS and has no OpenELM; SGLang 0.5.23 has no model class of these
# (sglang/srt/models).
VLLM_UNSUPPORTED = {
    "MllamaForConditionalGeneration": "vllm_no_mllama",
    "OpenELMForCausalLM": "vllm_no_openelm",
    **dict.fromkeys(
        ("MiniMaxForCausalLM", "MiniMaxText01ForCausalLM", "MiniMaxM1ForCausalLM"),
        "vllm_no_minimax",
    ),
}
SGLANG_UNSUPPORTED = {
    "JambaForCausalLM": "sglang_no_jamba",
    "OpenELMForCausalLM": "sglang_no_openelm",
    **dict.fromkeys(
        ("MiniMaxForCausalLM", "MiniMaxText01ForCausalLM", "MiniMaxM1ForCausalLM"),
        "sglang_no_minimax",
    ),
}
# Architectures SGLang 0.5.23 runs as encoder-decoder models in its one token pool
# (configs/model_config.py is_encoder_decoder_model): Mllama (Whisper and MossVL are refused
# by import-hf before they reach an engine).
SGLANG_ENCODER_DECODER = frozenset({"MllamaForConditionalGeneration"})
# kvgen speculative modes SGLang 0.5.23 cannot run, with the UNMODELLED key naming why.
SGLANG_REFUSED_MODES = {"pard": "sglang_no_pard", "eagle3_two_model": "sglang_two_model_eagle3"}


def _cached_layers(stack: Stack, model: str) -> int:
    """The layers of ``stack`` that hold a cache of their own; ``NotModelled`` where no
    engine model holds one of them (the first in layer order, as ``engine_rows`` says)."""
    engine_rows(stack, model)
    return sum(kind.layers for kind in stack.kinds.values()
               if kind.reads is None and kind_rows(kind, model))  # fmt: skip


def vllm_draft(family: Family, model: Model, profile: Speculative) -> EngineDraft:
    """A profile as vLLM runs it: tokens retained below each sliding window, Mamba state
    blocks per request added by the draft tokens, and how SGLang runs it (the drafter's
    layers in the target's pool are derived from the tables: ``engines_rows.engine_rows``).

    vLLM keeps an EAGLE/MTP drafter's layers in the one KV pool beside the target's; a
    multi-module MTP drafter re-prefills K - 1 tokens below each sliding window, so those stay
    retained; every Mamba layer keeps one state block per draft token (``num_speculative_tokens``).
    """
    k = profile.max_draft_len
    if profile.mode == "ngram":
        # SGLang's NGRAM: no draft layers, a chain of k verifying k + 1 tokens (kvgen emits
        # bfs breadth 1), whose intermediate states a recurrent hybrid keeps.
        return EngineDraft(0, k, "", 0, k + 1)
    if profile.mode in VLLM_DRAFT_MODEL_MODES and profile.draft is not None:
        # SGLang: a separate draft model runs as STANDALONE, the draft config's layers at the
        # target's per-layer size (spec_aux_hidden_state.py draft_kv_num_layers,
        # pool_configurator.py), whatever its vocabulary; PARD it cannot run.
        sglang: _SglangDraft = (
            {"sglang_layers": profile.draft.layers.count, "sglang_draft_tokens": k + 1}
            if profile.mode == "draft_target"
            else {"sglang_unmodelled": SGLANG_REFUSED_MODES[profile.mode]}
        )
        # vLLM's "draft_model" method: the draft model's layers join the target's one pool
        # (their specs marked is_draft), nothing retained below a window (it is no EAGLE
        # drafter: num_prefill_lookahead_tokens 0). A draft of another vocabulary (where the
        # spec gives both sizes) keeps its layers, marked: vLLM refuses it unless
        # use_heterogeneous_vocab is set, which maps tokens and changes no cache spec.
        vocabs = {model.vocab_size, profile.draft.vocab_size}
        differs = "vllm_draft_vocab" if None not in vocabs and len(vocabs) > 1 else ""
        try:
            engine_rows(stack_row(profile.draft, family.kv_cache_dtype, profile.draft), model.name)
        except NotModelled as exc:
            return EngineDraft(0, 0, exc.reason, **sglang, draft_model=True)
        return EngineDraft(0, k, differs, **sglang, draft_model=True)
    if profile.mode in VLLM_ONE_MODEL:
        # vLLM's drafters always share the pool: name the one-model profile it runs instead.
        instead = [
            other.name
            for other in family.speculative
            if other.mode in VLLM_ONE_MODEL[profile.mode] and other.applies_to(model.name)
        ]
        return EngineDraft(
            0, 0, "vllm_two_model", instead=instead[0] if instead else "",
            sglang_unmodelled=SGLANG_REFUSED_MODES.get(profile.mode, ""),
        )  # fmt: skip
    if profile.mode in SGLANG_REFUSED_MODES:
        return EngineDraft(0, 0, "separate_draft",
                           sglang_unmodelled=SGLANG_REFUSED_MODES[profile.mode])  # fmt: skip
    if profile.mode not in VLLM_SPECULATIVE_MODES:
        return EngineDraft(0, 0, "separate_draft")
    extra = profile.extra_layers
    try:
        layers = 0
        if extra is not None:
            layers = _cached_layers(stack_row(extra, family.kv_cache_dtype, model), model.name)
    except NotModelled as exc:
        return EngineDraft(0, 0, exc.reason)
    modules = extra.layers.count if extra is not None else 1
    lookahead = k if profile.mode == "mtp" and min(modules, k) > 1 else 1
    # SGLang's EAGLE/MTP path: a chain of k steps verifying k + 1 tokens (what kvgen emits),
    # the drafter's layers charged at the target's per-layer size, except on a recurrent
    # hybrid: a path-less MTP head there counts only if the target's config.json names
    # num_nextn_predict_layers (spec_aux_hidden_state.py), which Qwen3-Next's does not.
    recurrent = any(spec_kind(kind).recurrent for kind in model.layer_kinds.values())
    sglang_layers = 0 if recurrent else layers  # an indexer: its layer's
    return EngineDraft(max(0, lookahead - 1), k, "", sglang_layers, k + 1)


def architectures(family: Family) -> frozenset[str]:
    """The architectures the family's models name (config.json architectures[0])."""
    return frozenset(m.architecture for m in family.models if m.architecture is not None)


def architecture_arch(architecture: str | None) -> EngineArch:
    """What the engines read of one architecture (``EngineArch``); a model naming none is
    run as the engines' plain decoder (no table names it)."""
    arch = architecture or ""
    gdn = "gdn" if arch in VLLM_GDN_ARCHITECTURES else ""
    return EngineArch(
        hybrid_swa=arch in SGLANG_HYBRID_SWA_ARCHITECTURES,
        vllm_unmodelled=VLLM_UNSUPPORTED.get(arch, ""),
        sglang_unmodelled=SGLANG_UNSUPPORTED.get(arch, ""),
        mamba2_form="kda" if arch in VLLM_KDA_ARCHITECTURES else gdn,
        sglang_encoder_decoder=arch in SGLANG_ENCODER_DECODER,
    )


def engine_arch(family: Family) -> EngineArch:
    """What the engines read of the family's architecture as a whole (``EngineArch``), from
    the architecture its models name; lint refuses a family whose models name architectures
    the engines treat differently (KV034, ``architectures_disagree``), so any one of them
    speaks for all (the first in name order, for determinism)."""
    named = sorted(architectures(family))
    return architecture_arch(named[0] if named else None)


def model_row(family: Family, model: Model) -> ModelRow:
    """One model's row of the tables: its layers (each kind once, with its layer count), its
    profiles and EAGLE3/MTP draft layers, and what the engines read beyond them."""
    dtype = family.kv_cache_dtype
    return ModelRow(
        max_seq_len=model.max_seq_len,
        layers=stack_row(model, dtype, model),
        profiles=family.profiles_for(model.name),
        extra_layers={
            profile.name: stack_row(profile.extra_layers, dtype, model)
            for profile in family.speculative
            if profile.extra_layers is not None and profile.applies_to(model.name)
        },
        query_heads=model.num_attention_heads or 0,
        vllm_ssm_dtype=_vllm_ssm_dtype(family, model),
        drafts={
            profile.name: vllm_draft(family, model, profile)
            for profile in family.speculative
            if profile.applies_to(model.name)
        },
    )


def profile_rows(family: Family) -> dict[str, Profile]:
    """The family's speculative profiles ("none" first), a separate draft pool's layers with
    its profile."""
    profiles = {"none": profile_row(None, None)}
    for profile in family.speculative:
        draft = None
        if profile.mode in MODES_WITH_DRAFT_POOL and profile.draft is not None:
            draft = stack_row(profile.draft, family.kv_cache_dtype, profile.draft)
        profiles[profile.name] = profile_row(profile, draft)
    return profiles


def sizing_tables(family: Family, spec_sha256: str = "") -> SizingTables:
    """The family's tables, the one value its sizing module writes (``TABLES``)."""
    return SizingTables(
        family=family.family,
        spec_sha256=spec_sha256,
        tokens_per_block=family.tokens_per_block,
        kv_cache_dtype=family.kv_cache_dtype,
        models={model.name: model_row(family, model) for model in family.models},
        profiles=profile_rows(family),
        engines=engine_arch(family),
    )


def _vllm_ssm_dtype(family: Family, model: Model) -> str:
    """The SSM state dtype vLLM's mamba_ssm_cache_dtype "auto" resolves to ("": the conv
    dtype): the spec's ``mamba_ssm_cache_dtype`` (models/config.py
    NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype: the config's value, else float32),
    fp32 for Kimi Delta Attention (``VLLM_KDA_ARCHITECTURES``)."""
    if engine_arch(family).mamba2_form == "kda":
        return "fp32"
    for kind in model.layer_kinds.values():
        dims = kind.recurrent_dims
        dtype = getattr(dims, "mamba_ssm_cache_dtype", None)
        if dtype:
            return str(dtype)
    return ""


def engine_model(
    family: Family, model: Model, served_by: Release | None = None, dtype: str | None = None
) -> EngineModel:
    """The engine rows of one model of a loaded spec, derived as a generated module derives
    them from its tables; with ``served_by``, in the cache dtype that release serves the model
    in, launched with model dtype ``dtype`` (None: its "auto"; ``Release.cache_dtype``, which
    raises ``ValueError`` where the release cannot), as a generated module's
    ``engine_capacity`` plans it."""
    row, profiles, arch = model_row(family, model), profile_rows(family), engine_arch(family)
    entry = derived_engine_model(model.name, row, profiles, arch)
    if served_by is None:
        return entry
    spec = model_dtype(entry, family.kv_cache_dtype)
    served = served_by.cache_dtype(spec, dtype)
    if served == spec:
        return entry
    tables = served_tables(
        SizingTables(family.family, "", family.tokens_per_block, family.kv_cache_dtype,
                     {model.name: row}, profiles, arch),
        spec, served,
    )  # fmt: skip
    return derived_engine_model(model.name, tables.models[model.name], tables.profiles, arch)


def engine_tables(family: Family) -> dict[str, EngineModel]:
    """Every model's engine rows (``ENGINE_MODELS`` of the family's sizing module)."""
    return {model.name: engine_model(family, model) for model in family.models}
