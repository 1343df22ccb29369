"""The engines kvgen answers for, one value each, with the releases of each that it models.

An ``Engine`` is what holds whatever its release: its name and the other names it is taken by,
how output labels it, the capabilities the planners read instead of its name, where each of
its parts lives (``hooks``: the function that answers for it in each layer, found by name), the
``engine_capacity`` keywords only it reads, and the vocabulary of its launch settings
(``Settings``). A ``Release`` is an engine at one version and carries what differs between
releases: the default page size, the memory fraction and how it resolves (``Memory``), and
what the release refuses. ``release("vllm")`` / ``release("vllm==0.33.0")`` reads
``NAME[==VERSION]``: no version is the engine's default release (``default_release``: its
``default_version``, else the newest modelled); an unknown name or release is a ``ValueError``
naming the ones modelled.

kvgen's own deployment defaults (batch, token budget, context cap) are defined here once too.

This module is part of the sizing runtime written verbatim into every output folder (stdlib
only; NamedTuple values rather than dataclasses, so that importing a generated module imports
nothing more), and it is the one place that tells engines apart by name: everywhere else code
reads a field of the value (tests/unit/test_engine_registry.py walks the package for
comparisons with engine names). CONTRIBUTING.md, "Add an engine behaviour" and "Add an engine
release", lists the files each change touches.
"""

import math
from typing import NamedTuple

from .facts import MODEL_DTYPES  # the float cache dtypes a model dtype decides

__all__ = [
    "DEFAULT_ENGINE",
    "DEFAULT_MAX_BATCH_SIZE",
    "DEFAULT_MAX_NUM_TOKENS",
    "DEFAULT_MAX_SEQ_LEN",
    "DEFAULT_RELEASE",
    "ENGINES",
    "MODEL_DTYPES",
    "RELEASES",
    "TRTLLM_38198E34",
    "TRTLLM_EARLY_2026",
    "Engine",
    "Hooks",
    "Memory",
    "Release",
    "Settings",
    "default_release",
    "engine_flags",
    "engine_names",
    "newest",
    "release",
    "releases_of",
]

# kvgen's deployment defaults: what a plan, a comparison and a launch assume when not told.
# None of them is an engine's own default (TensorRT-LLM's max_batch_size is 2048, vLLM's
# max_num_seqs 256 or more): they are one reference deployment, the same for every engine.
DEFAULT_MAX_BATCH_SIZE = 8  # TensorRT-LLM max_batch_size, vLLM max_num_seqs, SGLang running
DEFAULT_MAX_NUM_TOKENS = 8192  # tokens per iteration (vLLM max_num_batched_tokens)
DEFAULT_MAX_SEQ_LEN = 32768  # the default max_seq_len is min(the model's native length, this)

_GIB = 1 << 30


class Hooks(NamedTuple):
    """Where each part of an engine lives: the name of the function that answers for it in
    each layer (each layer looks it up in its own namespace, so the runtime finds the copy
    ``bind`` made over a family's tables)."""

    capacity: str  # engine_capacity: kvgen.sizing.engines_core (runtime) and
    # kvgen._engines.capacity (a spec)
    terms: str  # its policy terms, in kvgen._engines._terms (``kvgen compare``)
    launch: str  # its launch settings for a plan, in kvgen._deploy.emit (``--emit``)


class Settings(NamedTuple):
    """An engine's launch vocabulary: where kvgen's settings go and what the engine calls the
    values kvgen's spec names (docs/deploy.md)."""

    config_class: str  # the configuration class whose field names the settings use
    launcher: str  # where the settings go on the command line
    form: str  # how a text report prints them: "args" (command-line flags) or "yaml"
    batch_field: str  # its field for the requests running at once
    # spec cache dtype -> the engine's kv-cache dtype ("auto", the model's own, otherwise)
    kv_cache_dtypes: tuple[tuple[str, str], ...]
    # kvgen's speculative mode -> the engine's method (vLLM) or algorithm (SGLang)
    speculative_methods: tuple[tuple[str, str], ...] = ()
    # the engine's own launch flag -> kvgen's flag of the same meaning: kvgen takes it as an
    # alias (``engine_flags``), so a launch line's flags plan as they launch
    flags: tuple[tuple[str, str], ...] = ()
    # its field for copies of the model, each on tp x pp GPUs, behind one server ("": none
    # emitted; a launch per replica)
    replicas_field: str = ""
    # its field for the model's dtype, which its "auto" cache dtype follows ("": none that
    # kvgen emits; a plan in another float dtype than the engine's own is refused)
    dtype_field: str = ""

    def kv_cache_dtype(self, dtype: str) -> str:
        return dict(self.kv_cache_dtypes).get(dtype, "auto")


class Memory(NamedTuple):
    """How a release turns device memory into its KV budget (docs/deploy.md): its memory
    fraction, where the default comes from, and the quantity the fraction applies to."""

    fraction_field: str  # the setting, as the engine's config class names it
    fraction_source: str  # module and field the default is read from
    # None: the release computes it per deployment (SGLang: kvgen._deploy.budget
    # sglang_default_fraction reproduces its rule)
    default_fraction: float | None
    reserve: int  # kvgen's default reserve per rank (activations, graphs): an estimate
    reserve_note: str
    # True: a share of the memory left after weights and reserve (TensorRT-LLM); False: a
    # share of the whole device, from which weights and reserve are then taken
    of_free_memory: bool
    rounds_up: bool = False  # the device share rounded up (vLLM's request_memory: ceil)

    def kv_bytes(self, total: int, weights: int, reserve: int, fraction: float) -> int:
        """The KV budget per rank: may be <= 0, then nothing fits."""
        if self.of_free_memory:
            return int((total - weights - reserve) * fraction)
        share = math.ceil(total * fraction) if self.rounds_up else int(total * fraction)
        return share - weights - reserve


class Engine(NamedTuple):
    """One engine, whatever its release. Code reads these fields; it never compares names."""

    name: str  # what --engine, --emit, deployment files and engine= take
    aliases: tuple[str, ...]  # other names it is taken by
    # What output calls it and what every generated runtime takes as ``engine=``: kept as
    # c2a37ec printed it (TensorRT-LLM's "trtllm-v2") until answers name their release.
    label: str
    title: str  # the engine's own name, for prose
    hooks: Hooks
    reads: frozenset[str]  # the engine_capacity keywords only this engine reads
    # kvgen's cost functions are its model (cache_costs, quota_for_requests): a plan prints
    # their per-manager shares and semantics, and answers --requests and --plot
    cost_functions: bool
    page_in_spec: bool  # its page is the spec's tokens_per_block: a --block-size rebinds it
    pipeline_parallel: bool  # pp_size above 1 is modelled (one stage per rank)
    caps_concurrency: bool  # it admits at most max_batch_size requests at once
    settings: Settings
    # The release its name alone selects ("": the newest modelled).
    default_version: str = ""
    # Its distribution on the package index: ``plan`` reads the installed version from its
    # metadata (kvgen._engines.installed; the engine is never imported). "": not read.
    distribution: str = ""

    def __repr__(self) -> str:
        return f"Engine({self.name!r})"


# engine_capacity's arguments but the engine, as its hooks take them (``Release.refusal``).
ASKED = (
    "model", "budget_bytes", "max_seq_len", "max_num_tokens", "block_size", "speculative",
    "tp_size", "max_batch_size", "async_scheduling", "mamba_cache_mode", "gdn_prefill_backend",
    "swa_full_tokens_ratio", "mamba_full_memory_ratio", "ssm_dtype", "pp_size", "pp_rank",
    "mamba_radix_cache_strategy", "heterogeneous_vocab", "dtype",
)  # fmt: skip
_ASKED_AT = {name: at for at, name in enumerate(ASKED)}


class Release(NamedTuple):
    """An engine at one release: what differs between its releases."""

    engine: Engine
    version: str  # what NAME==VERSION names
    shown: str  # the release as output prints it
    named: str  # the engine and release in a sentence ("vLLM 0.33.0")
    block_size: int  # its default page in tokens (0: the spec's tokens_per_block)
    memory: Memory
    # (engine_capacity keyword, the release's own words) for each setting this release refuses
    # to start with when it is set: engine_capacity raises ValueError naming the release
    refuses: tuple[tuple[str, str], ...] = ()
    # TensorRT-LLM: how this revision sizes its managers (docs/cost-model.md §11). True: it
    # splits the budget between target and draft by what one request spends (capped at
    # max_batch_size mirrors, floored at one mirror's quota) and sizes the pools within a
    # manager from a typical step with floors, taking kv_cache_config.pool_ratio, which
    # --emit then writes so that its split builds kvgen's pools. False: intercepts reserved,
    # the rest split by slope, pools in proportion (the early-2026 revision, §4).
    per_request_split: bool = False
    # (keyword, the keyword it may not be below, the release's words, where they are): a pair
    # of settings this release refuses to start with; the words are formatted with the
    # keywords' values
    minimums: tuple[tuple[str, str, str, str], ...] = ()
    # (kvgen speculative mode, the release's words, where they are): the speculative modes
    # this release refuses to start with (vLLM 0.34.0: PARD, emitted as parallel_drafting);
    # engine_capacity raises ValueError naming the release and the profile
    refuses_modes: tuple[tuple[str, str, str], ...] = ()
    # What the release's launch settings change beyond the KV budget, one sentence each
    # (plan --emit prints them with the settings; docs/engines.md lists them)
    launch_notes: tuple[str, ...] = ()
    # The cache dtype its dtype "auto" serves a float32 checkpoint in (its cache follows the
    # model dtype), with the release's words and where they are ("": it keeps float32):
    # kvgen._engines.dtype plans with it.
    float32_served_as: str = ""
    float32_words: str = ""

    def serves(self, dtype: str) -> str:
        """The cache dtype this release's dtype "auto" gives a ``dtype`` cache."""
        return self.float32_served_as if dtype == "fp32" and self.float32_served_as else dtype

    def cache_dtype(
        self,
        spec: str,
        dtype: str | None,
        asked: str = "dtype",
        instead: str = "call without dtype",
    ) -> str:
        """The cache dtype this release serves a ``spec`` cache in, launched with model dtype
        ``dtype`` (None: "auto"): a plain float cache follows the model dtype, another (fp8)
        is its own. ``ValueError`` (``asked``: the argument; ``instead``: what to do) where
        ``dtype`` is not "auto"'s and the release has no ``Settings.dtype_field``."""
        if spec not in MODEL_DTYPES:
            return spec
        auto = self.serves(spec)
        if dtype is None or dtype == auto:
            return auto
        if not self.engine.settings.dtype_field:
            raise ValueError(
                f"{asked} {dtype}: {self.named} serves this {spec} checkpoint's cache in "
                f"{auto} ({self.float32_words}); {instead}, or serve a {MODEL_DTYPES[dtype]} "
                "copy of the checkpoint"
            )
        return dtype

    def refusal(self, asked: tuple[object, ...]) -> str | None:
        """Why this release refuses a call's values ``asked`` (in ``ASKED``'s order; ``refuses``:
        set, truthy; ``minimums``: a pair out of order), None if it takes them."""
        for keyword, words in self.refuses:
            if asked[_ASKED_AT[keyword]]:
                return f"{self.named} refuses {keyword}: {words}"
        for keyword, floor, words, source in self.minimums:
            value, least = asked[_ASKED_AT[keyword]], asked[_ASKED_AT[floor]]
            if type(value) is int and type(least) is int and value < least:
                said = words.format(**{keyword: value, floor: least})
                return (
                    f"{self.named} refuses {keyword} {value} below {floor} {least}: {said!r} "
                    f"({source}); give {keyword} {least} or more"
                )
        return None

    def mode_refusal(self, profile: str, mode: str) -> str | None:
        """Why this release refuses speculative ``profile`` of kvgen mode ``mode``
        (``refuses_modes``), None if it runs it."""
        for refused, words, source in self.refuses_modes:
            if mode == refused:
                return (
                    f"{self.named} refuses speculative {profile!r} ({mode}): {words!r} ({source})"
                )
        return None

    @property
    def argument(self) -> str:
        """What ``engine_capacity(engine=...)`` takes for exactly this release: the engine's
        label for its default release (what every generated runtime takes), else
        ``NAME==VERSION``."""
        return self.engine.label if default_release(self.engine) is self else self.spelling

    @property
    def spelling(self) -> str:
        """``NAME==VERSION``: what selects exactly this release."""
        return f"{self.engine.name}=={self.version}"

    @property
    def described(self) -> str:
        """The release as output names it: its words and what selects it
        ("vLLM 0.34.0 (vllm==0.34.0)")."""
        return f"{self.named} ({self.spelling})"

    def __repr__(self) -> str:
        return f"Release({self.spelling!r})"


TRTLLM = Engine(
    name="trtllm",
    aliases=("trtllm-v2",),
    label="trtllm-v2",
    title="TensorRT-LLM",
    hooks=Hooks("_trtllm_answer", "_trtllm_terms", "_trtllm_launch"),
    reads=frozenset({"pp_size", "pp_rank"}),
    cost_functions=True,
    page_in_spec=True,
    pipeline_parallel=True,
    caps_concurrency=True,
    settings=Settings(
        config_class="tensorrt_llm.llmapi.llm_args.TorchLlmArgs",
        launcher="trtllm-serve --extra_llm_api_options FILE.yaml",
        form="yaml",
        batch_field="max_batch_size",
        kv_cache_dtypes=(("fp8", "fp8"),),
        # trtllm-serve's options (tensorrt_llm/commands/serve.py)
        flags=(
            ("--max_batch_size", "--max-batch-size"),
            ("--max_num_tokens", "--max-num-tokens"),
            ("--max_seq_len", "--max-seq-len"),
            ("--tp_size", "--tp-size"),
            ("--pp_size", "--pp-size"),
        ),
    ),
    distribution="tensorrt_llm",
)
VLLM = Engine(
    name="vllm",
    aliases=(),
    label="vllm",
    title="vLLM",
    hooks=Hooks("_vllm_answer", "_vllm_terms", "_vllm_launch"),
    reads=frozenset(
        {"async_scheduling", "mamba_cache_mode", "gdn_prefill_backend", "heterogeneous_vocab"}
    ),
    cost_functions=False,
    page_in_spec=False,
    pipeline_parallel=False,
    caps_concurrency=False,
    settings=Settings(
        config_class="vllm.engine.arg_utils.EngineArgs",
        launcher="vllm serve flags",
        form="args",
        batch_field="max_num_seqs",
        # fp8_ds_mla: FlashMLA sparse (DeepSeek-V3.2), vLLM's CacheDType of that name; "auto"
        # would give a bf16 MLA cache (vllm/config/cache.py).
        # fp8/int8_per_token_head: vLLM's CacheDTypes of those names, the same bytes (one fp32
        # scale per token and head for K and for V; kvgen.sizing.engines_rows.VLLM_PER_TOKEN_HEAD).
        kv_cache_dtypes=(
            ("fp8", "fp8_e4m3"),
            ("fp8_e5m2", "fp8_e5m2"),
            ("fp8_ds_mla", "fp8_ds_mla"),
            ("fp8_per_token_head", "fp8_per_token_head"),
            ("int8_per_token_head", "int8_per_token_head"),
        ),
        # SpeculativeConfig.method (vllm/config/speculative.py); a mode not listed is its own
        speculative_methods=(
            ("ngram", "ngram"),
            ("eagle3", "eagle3"),
            ("eagle3_two_model", "eagle3"),
            ("mtp", "mtp"),
            ("mtp_eagle", "mtp"),
            ("draft_target", "draft_model"),
            ("pard", "draft_model"),  # with parallel_drafting (SpeculativeConfig: PARD)
        ),
        # EngineArgs' flags (vllm/engine/arg_utils.py add_cli_args); --kv-cache-memory-bytes
        # is CacheConfig.kv_cache_memory_bytes, the KV cache per GPU: kvgen's --gpu-memory
        flags=(
            ("--max-num-seqs", "--max-batch-size"),
            ("--max-num-batched-tokens", "--max-num-tokens"),
            ("--max-model-len", "--max-seq-len"),
            ("--tensor-parallel-size", "--tp-size"),
            ("-tp", "--tp-size"),
            ("--pipeline-parallel-size", "--pp-size"),
            ("-pp", "--pp-size"),
            ("--kv-cache-memory-bytes", "--gpu-memory"),
        ),
        replicas_field="data_parallel_size",  # ParallelConfig.data_parallel_size
        dtype_field="dtype",  # ModelConfig.dtype (--dtype); CacheConfig.cache_dtype auto follows
    ),
    distribution="vllm",
)
SGLANG = Engine(
    name="sglang",
    aliases=(),
    label="sglang",
    title="SGLang",
    hooks=Hooks("_sglang_answer", "_sglang_terms", "_sglang_launch"),
    reads=frozenset(
        {"swa_full_tokens_ratio", "mamba_full_memory_ratio", "mamba_radix_cache_strategy"}
    ),
    cost_functions=False,
    page_in_spec=False,
    pipeline_parallel=False,
    caps_concurrency=False,
    settings=Settings(
        config_class="sglang.srt.server_args.ServerArgs",
        launcher="python -m sglang.launch_server flags",
        form="args",
        batch_field="max_running_requests",
        # SGLang has no fp8_ds_mla: its fp8_e4m3 DSA cache on Hopper (flashmla_kv) is the same
        # 656-byte layout (kv_cache_configurator.py calculate_mla_kv_cache_dim).
        kv_cache_dtypes=(("fp8", "fp8_e4m3"), ("fp8_e5m2", "fp8_e5m2"), ("fp8_ds_mla", "fp8_e4m3")),
        # speculative_algorithm (sglang/srt/speculative/spec_info.py SpeculativeAlgorithm;
        # "NEXTN" is its alias of EAGLE for a model's own MTP heads). Only the drafters kvgen's
        # SGLang model plans: layers in the target's pool (EAGLE3, NEXTN, STANDALONE: a
        # separate draft model) or none (NGRAM).
        speculative_methods=(
            ("eagle3", "EAGLE3"),
            ("mtp", "NEXTN"),
            ("mtp_eagle", "NEXTN"),
            ("draft_target", "STANDALONE"),
            ("ngram", "NGRAM"),
        ),
        # ServerArgs' flags (sglang/srt/server_args.py; --tp-size and --pp-size are kvgen's too)
        flags=(
            ("--max-running-requests", "--max-batch-size"),
            ("--chunked-prefill-size", "--max-num-tokens"),
            ("--context-length", "--max-seq-len"),
            ("--tp", "--tp-size"),
            ("--pp", "--pp-size"),
        ),
        replicas_field="dp_size",  # ServerArgs.dp_size (data parallelism across tp groups)
        dtype_field="dtype",  # ServerArgs.dtype (--dtype); kv_cache_dtype auto follows it
    ),
    distribution="sglang",
)

# TensorRT-LLM's memory fraction (both revisions modelled read it alike).
_TRTLLM_MEMORY = Memory(
    # tensorrt_llm/llmapi/llm_args.py KvCacheConfig.free_gpu_memory_fraction, default 0.9:
    # a share of the memory still free once the model is loaded and a profiling forward
    # has run; max_gpu_total_bytes caps the result.
    fraction_field="free_gpu_memory_fraction",
    fraction_source="tensorrt_llm.llmapi.llm_args.KvCacheConfig.free_gpu_memory_fraction",
    default_fraction=0.9,
    reserve=4 * _GIB,
    reserve_note="estimate of the profiling forward's activations and runtime buffers",
    of_free_memory=True,
)
# TensorRT-LLM's PyTorch backend keeps the checkpoint's dtype: kvgen plans the spec's.
_TRTLLM_DTYPE = (
    "its KV cache manager takes the model's dtype, the checkpoint's (kv_cache_dtype = "
    "str_dtype_to_binding(torch_dtype_to_str(dtype)) unless the checkpoint quantizes the cache: "
    "tensorrt_llm/_torch/pyexecutor/_util.py _create_kv_cache_manager; config.json's dtype: "
    "tensorrt_llm/_torch/model_config.py ModelConfig.from_pretrained), and kv_cache_config.dtype "
    "takes only auto, fp8 or nvfp4 (tensorrt_llm/_torch/pyexecutor/model_loader.py "
    "_VALID_KV_CACHE_DTYPES)"
)
# The KV cache manager V2 at the early-2026 revision pinned in bench/engines/trtllm_source.py:
# files of several commits that import each other consistently, none carried by a release
# tag the search index records, so the name is kvgen's. Every answer names its revision.
TRTLLM_EARLY_2026 = Release(
    engine=TRTLLM,
    version="early-2026",
    shown="V2 early-2026 (cost-model §4)",
    named="TensorRT-LLM KV cache manager V2 early-2026",
    block_size=0,
    memory=_TRTLLM_MEMORY,
    float32_words=_TRTLLM_DTYPE,
)
# NVIDIA/TensorRT-LLM commit 38198e34582cf777ecc72062f477987284ba9999 (bench/engines/
# trtllm_static_source.py), the newest modelled and what ``trtllm`` alone selects: the index
# stores tensorrt_llm/version.py at other commits only (1.2.0rc2 at b35ac1b6), so which
# release carries it is not established and it is named by commit.
TRTLLM_38198E34 = Release(
    engine=TRTLLM,
    version="38198e34",
    shown="V2 38198e34 (cost-model §11)",
    named="TensorRT-LLM KV cache manager V2 38198e34",
    block_size=0,
    memory=_TRTLLM_MEMORY,
    float32_words=_TRTLLM_DTYPE,
    per_request_split=True,
)
# vLLM's start-up refusal of max_num_batched_tokens below max_num_seqs (0.33.0 and 0.34.0).
_VLLM_MINIMUMS = (
    (
        "max_num_tokens",
        "max_batch_size",
        (
            "max_num_batched_tokens ({max_num_tokens}) must be greater than or equal to "
            "max_num_seqs ({max_batch_size})."
        ),
        "vllm/config/scheduler.py SchedulerConfig.verify_max_model_len",
    ),
)
_VLLM_RESERVE_NOTE = (
    "estimate of the profiling run's non-KV peak: activations, CUDA graphs, NCCL buffers"
)
VLLM_0_33_0 = Release(
    engine=VLLM,
    version="0.33.0",
    shown="0.33.0",
    named="vLLM 0.33.0",
    block_size=16,  # vLLM's CacheConfig.DEFAULT_BLOCK_SIZE
    memory=Memory(
        # CacheConfig.gpu_memory_utilization, Field(default=0.92, gt=0, le=1): a share of the
        # whole device, rounded up (vllm/v1/worker/utils.py request_memory); the worker then
        # subtracts the weights and the profiled non-KV peak (the reserve).
        fraction_field="gpu_memory_utilization",
        fraction_source="vllm.config.cache.CacheConfig.gpu_memory_utilization (vLLM 0.33.0)",
        default_fraction=0.92,
        reserve=4 * _GIB,
        reserve_note=_VLLM_RESERVE_NOTE,
        of_free_memory=False,
        rounds_up=True,
    ),
    minimums=_VLLM_MINIMUMS,
    # ModelConfig.dtype "auto" on CUDA with bfloat16 (compute capability 8.0 or later: every
    # GPU kvgen names); vLLM 0.34.0 reads the same
    float32_served_as="bf16",
    float32_words="--dtype auto: 'Downcast for float32 models' to the platform's preferred "
    "dtype, bfloat16 on a GPU of compute capability 8.0 or later (vllm/config/model.py "
    "_resolve_auto_dtype); the cache follows the model dtype (kv_cache_dtype auto)",
)
# vLLM 0.34.0 (tests/fixtures/engines/release_facts_vllm.json: each fact run by its own
# classes, with the deciding line). Its capacity math is 0.33.0's (782 goldens and 232 of 235
# closed-loop cases equal); what differs is data: the block, the memory default, two refusals.
VLLM_0_34_0 = Release(
    engine=VLLM,
    version="0.34.0",
    shown="0.34.0",
    named="vLLM 0.34.0",
    block_size=64,  # CacheConfig.DEFAULT_BLOCK_SIZE (vllm/config/cache.py:185)
    memory=Memory(
        # gpu_memory_utilization defaults to None; CacheConfig.resolved_gpu_memory_utilization
        # (vllm/config/cache.py:495) makes it 1.0 under the extensible KV cache, which
        # VllmConfig._resolve_extensible_kv_cache turns on by default on CUDA (0.92 without
        # it). The KV cache is then sized from measured memory: the whole device, less the
        # weights and the non-KV peak, as request_memory's ceil(total x 1.0) gives.
        fraction_field="gpu_memory_utilization",
        fraction_source="vllm.config.cache.CacheConfig.gpu_memory_utilization None, resolved "
        "1.0 under the extensible KV cache (enable_extensible_kv_cache, on by default on "
        "CUDA) (vLLM 0.34.0)",
        default_fraction=1.0,
        reserve=4 * _GIB,
        reserve_note=_VLLM_RESERVE_NOTE,
        of_free_memory=False,
        rounds_up=True,
    ),
    minimums=_VLLM_MINIMUMS,
    # SpeculativeConfig forbids unknown fields (vllm/config/utils.py:72, extra="forbid"), and
    # use_heterogeneous_vocab is gone: pydantic's words for it.
    refuses=(
        (
            "heterogeneous_vocab",
            (
                "'use_heterogeneous_vocab: Unexpected keyword argument' (vllm/config/utils.py: "
                "SpeculativeConfig has no use_heterogeneous_vocab); a draft of another "
                "vocabulary runs on vLLM 0.33.0"
            ),
        ),
    ),
    refuses_modes=(
        (
            "pard",
            (
                "parallel_drafting is only supported by the dflash and dspark methods, not "
                "'draft_model'."
            ),
            (
                "vllm/config/speculative.py SpeculativeConfig: PARD ran on the V1 model runner, "
                "removed in 0.34.0; PARD runs on vLLM 0.33.0"
            ),
        ),
    ),
    launch_notes=(
        (
            "kv_cache_memory_bytes and num_gpu_blocks_override turn off vLLM 0.34.0's extensible "
            "KV cache (VllmConfig._resolve_extensible_kv_cache: 'it sizes the KV cache from "
            "measured memory, which kv_cache_memory_bytes overrides'): the pool is the planned "
            "one, allocated once at start-up"
        ),
    ),
    # ModelConfig.dtype "auto" on CUDA with bfloat16 (compute capability 8.0 or later: every
    # GPU kvgen names); vLLM 0.33.0 reads the same
    float32_served_as="bf16",
    float32_words="--dtype auto: 'Downcast for float32 models' to the platform's preferred "
    "dtype, bfloat16 on a GPU of compute capability 8.0 or later (vllm/config/model.py "
    "_resolve_auto_dtype); the cache follows the model dtype (kv_cache_dtype auto)",
)
SGLANG_0_5_23 = Release(
    engine=SGLANG,
    version="0.5.23",
    shown="0.5.23",
    named="SGLang 0.5.23",
    block_size=1,  # ServerArgs page_size
    memory=Memory(
        # mem_fraction_static covers weights and the KV pool over the device memory, so
        # activations and CUDA graphs already sit outside it; unset, SGLang computes it per GPU
        # size and tp (memory_hook.py handle_gpu_memory_settings).
        fraction_field="mem_fraction_static",
        fraction_source="sglang.srt.arg_groups.fields.schedule mem_fraction_static; default "
        "from sglang.srt.arg_groups.memory_hook.handle_gpu_memory_settings (SGLang 0.5.23)",
        default_fraction=None,
        reserve=0,
        reserve_note="SGLang's fraction already leaves activations and CUDA graphs outside; "
        "CUDA context and communication buffers are not counted (estimate 0)",
        of_free_memory=False,
    ),
    float32_served_as="fp16",
    float32_words="--dtype auto: 'we use float16 for float32 models', bfloat16 where the "
    "model_type starts with gemma, the same 2 bytes (sglang/srt/configs/model_config.py "
    "_get_and_verify_dtype); the cache follows the model dtype (kv_cache_dtype auto)",
)

# Every engine, in the order output lists them; every release modelled, oldest first per engine.
ENGINES: tuple[Engine, ...] = (TRTLLM, VLLM, SGLANG)
RELEASES: tuple[Release, ...] = (
    TRTLLM_EARLY_2026,
    TRTLLM_38198E34,
    VLLM_0_33_0,
    VLLM_0_34_0,
    SGLANG_0_5_23,
)
DEFAULT_ENGINE = TRTLLM  # what a plan answers in when no engine is named


def releases_of(engine: Engine) -> tuple[Release, ...]:
    """The releases of ``engine`` modelled, oldest first."""
    return tuple([r for r in RELEASES if r.engine is engine])


def newest(engine: Engine) -> Release:
    """The newest release of ``engine`` modelled (its name alone selects ``default_release``)."""
    return releases_of(engine)[-1]


def default_release(engine: Engine) -> Release:
    """The release ``engine``'s name alone selects: its ``default_version``, else the newest."""
    for each in releases_of(engine):
        if each.version == engine.default_version:
            return each
    return newest(engine)


def engine_names() -> tuple[str, ...]:
    """Every name an engine is taken by (no version): names, then aliases, in ENGINES order."""
    return tuple([e.name for e in ENGINES] + [a for e in ENGINES for a in e.aliases])


def engine_flags() -> dict[str, str]:
    """Every engine's own launch flag that kvgen takes -> kvgen's flag of the same meaning
    (``Settings.flags``); one spelling never means two things."""
    found: dict[str, str] = {}
    for engine in ENGINES:
        for theirs, ours in engine.settings.flags:
            if found.setdefault(theirs, ours) != ours:
                raise AssertionError(f"{theirs} means both {found[theirs]} and {ours}")
    return found


def _spellings() -> dict[str, Release]:
    found: dict[str, Release] = {}
    for engine in ENGINES:
        for name in (engine.name, *engine.aliases):
            found[name] = default_release(engine)
            for each in releases_of(engine):
                found[f"{name}=={each.version}"] = each
    return found


DEFAULT_RELEASE = default_release(DEFAULT_ENGINE)  # what a plan answers for when no engine is named

# Every accepted text -> its release (``release``'s fast path; also the runtime's dispatch).
SPELLINGS: dict[str, Release] = _spellings()


def release(text: object) -> Release:
    """The release ``text`` names, ``NAME`` or ``NAME==VERSION`` (see ``engine_names``);
    ``ValueError`` naming the engines, or the releases of the engine, that are modelled."""
    if type(text) is str:
        found = SPELLINGS.get(text)
        if found is not None:
            return found
        name, sep, version = text.partition("==")
        for engine in ENGINES:
            if sep and name in (engine.name, *engine.aliases):
                versions = ", ".join([r.version for r in releases_of(engine)])
                raise ValueError(
                    f"engine {engine.name} release {version!r} is not modelled; "
                    f"releases modelled: {versions} (default: {default_release(engine).version})"
                )
    hint = ""
    if type(text) is str:
        from difflib import get_close_matches

        close = get_close_matches(text.partition("==")[0], engine_names(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
    names = ", ".join([e.name for e in ENGINES])
    aliases = ", ".join([a for e in ENGINES for a in e.aliases])
    raise ValueError(
        f"engine must be one of {names} (or {aliases}, an alias), as NAME or NAME==VERSION; "
        f"got {text!r}{hint}"
    )
