"""The TensorRT-LLM functions ``trtllm_oracle.py`` runs: upstream file, commit, name, digest.

Nothing of the engine is in this repository. Each row names one function (or class) of the
public repository NVIDIA/TensorRT-LLM as it reads at the commit given; put the file's text
(or at least every function it lists, verbatim, at its upstream indentation) into a folder
under the same relative path and pass that folder as ``--engine-src``. The oracle cuts each
named function out with ``ast``, checks the sha256 prefix of its text (from its first
decorator to its last line, dedented) against the row, and refuses to run on any mismatch.

The static estimator's two modules are read at the revision this comparison names
(``REVISION``). The search index that served the source holds the smaller helper modules at
other commits only (a file is stored where a commit changed it); those rows name the commit
their text was read at. The comparison depends on them only through the values they return
(speculative headroom per mode, window derivation from ``layer_types``).
"""

from __future__ import annotations

REPOSITORY = "https://github.com/NVIDIA/TensorRT-LLM"
REVISION = "38198e34582cf777ecc72062f477987284ba9999"

_KVM = "tensorrt_llm/_torch/pyexecutor/kv_cache/kv_cache_manager_v2.py"
_UTIL = "tensorrt_llm/_torch/pyexecutor/_util.py"
_SPEC = "tensorrt_llm/_torch/speculative/utils.py"
_MODE = "tensorrt_llm/_torch/speculative/interface.py"
_ARGS = "tensorrt_llm/llmapi/llm_args.py"
_CFG = "tensorrt_llm/_torch/pyexecutor/config_utils.py"
_RES = "tensorrt_llm/_torch/pyexecutor/resource_manager.py"
_MAMBA = "tensorrt_llm/_torch/pyexecutor/kv_cache/mamba_cache_manager.py"

_SPEC_AT = "011d0933dcb5e592f5fa2626beaf42a96324c578"
_MODE_AT = "00b6d5a25c30b4382d24fbdf52956d601b3ffd24"
_ARGS_AT = "0004396720054fd8e205cbf616f21f0b57c6b412"
_CFG_AT = "00679c66c3e38f6d2651ad0a5bef0f94d862e36c"
_RES_AT = "index version 57350670334 (commit not named by the index)"
_PARAMS_AT = "index version 57437625015 (commit not named by the index)"

# (upstream path, commit, qualified name, sha256 prefix of the function's text); a
# module-level constant the functions read is cut the same way
FUNCTIONS = (
    (_KVM, REVISION, "BASE_GENERATION_TOKEN_COUNT", "bbb4026f02b5bb4d"),
    (_KVM, REVISION, "_estimate_full_attn_size_per_token", "ee02a77a96d108bc"),
    (_KVM, REVISION, "_compute_auto_host_tier_quota", "172f869c6ddadd1b"),
    (_KVM, REVISION, "_estimate_swa_cache_size", "109abb0c26c21465"),
    (_KVM, REVISION, "_get_generation_kv_capacity", "a82d355a9a110a6d"),
    (_KVM, REVISION, "_estimate_cache_size_components", "b927ab31f4ee1ff7"),
    (_KVM, REVISION, "_get_single_swa_pool_slot_bytes", "7aae2b977346a87e"),
    (_KVM, REVISION, "_resolve_v2_max_attention_window_vec", "c862dcef0835677b"),
    (_KVM, REVISION, "_extend_swa_windows_for_reuse", "07de525dc18a3f57"),
    (_KVM, REVISION, "_derive_request_windows_from_layer_types", "aac0aaac7c530386"),
    (_KVM, REVISION, "_gpu_alloc_granularity", "1f30b287347227c3"),
    (_KVM, REVISION, "_get_static_cache_size_layer_components", "47995f93fd93b994"),
    (_KVM, REVISION, "KVCacheManagerV2._get_generation_request_capacity", "ba34aa42e11202af"),
    (_KVM, REVISION, "KVCacheManagerV2._get_max_tokens_from_quota", "e70f00aae9f0b3db"),
    (_KVM, REVISION, "KVCacheManagerV2._get_max_tokens_from_quota_impl", "5a7da3ef2b169084"),
    (_KVM, REVISION, "KVCacheManagerV2._get_quota_from_max_tokens", "65e0d8defbe02335"),
    (_KVM, REVISION, "KVCacheManagerV2._get_quota_from_max_tokens_impl", "d87960ac7d6f34ff"),
    (_KVM, REVISION, "KVCacheManagerV2._get_buffer_roles_for_layer", "bdbcd1101dbc4433"),
    (_KVM, REVISION, "KVCacheManagerV2._build_base_config", "82ed04b46bd0af3c"),
    (_KVM, REVISION, "KVCacheManagerV2._get_typical_seq_len", "67efd30d88bfba2e"),
    (_KVM, REVISION, "KVCacheManagerV2.get_cache_size_per_token", "b3c044475f98ef9f"),
    (_KVM, REVISION, "KVCacheManagerV2._get_per_request_layer_tokens", "94cb56dfc4130fa3"),
    (_KVM, REVISION, "KVCacheManagerV2.get_cache_bytes_per_request", "f486d0756b751d6c"),
    (_KVM, REVISION, "KVCacheManagerV2.get_cache_quota_per_request", "813eb85ad985c7d4"),
    (_UTIL, REVISION, "CacheCost", "93675f2f2f7d0ec3"),
    (_UTIL, REVISION, "_normalize_attention_windows", "85f4566d5767698f"),
    (_UTIL, REVISION, "_derive_layer_type_attention_windows", "caff072f1c1ad075"),
    (_UTIL, REVISION, "_derive_v2_layer_type_attention_windows", "fd1a1483e1ba810b"),
    (_UTIL, REVISION, "draft_config_defines_attention_layout", "5c8330b65db921a0"),
    (_UTIL, REVISION, "_derive_draft_max_attention_window", "9c75899782f404bc"),
    (_UTIL, REVISION, "KvCacheCreator._per_manager_cache_cost", "07ee7cea93f9f342"),
    (_UTIL, REVISION, "KvCacheCreator._per_manager_request_estimate", "b60946c0db9191ac"),
    (_UTIL, REVISION, "KvCacheCreator._get_draft_max_attention_window", "7a09b350600d5887"),
    (_UTIL, REVISION, "KvCacheCreator._get_one_model_draft_kv_cache_config", "23c8c6149ddde69a"),
    (_UTIL, REVISION, "KvCacheCreator._get_target_and_draft_cache_costs", "d829666f87c1156b"),
    (_UTIL, REVISION, "KvCacheCreator._compute_draft_budget_shares", "3c3f31ceacace2bd"),
    (_UTIL, REVISION, "KvCacheCreator._split_kv_cache_budget_for_draft", "b072232e29bc0a17"),
    (_UTIL, REVISION, "KvCacheCreator._get_draft_cache_cost", "c78f87fefef24fc5"),
    (_UTIL, REVISION, "KvCacheCreator._get_num_draft_layers", "bfee18e3fd02e56a"),
    (_SPEC, _SPEC_AT, "get_num_spec_layers", "f94c34e9cacb7149"),
    (_SPEC, _SPEC_AT, "get_num_extra_kv_tokens", "e31063b2cec30b36"),
    (_MODE, _MODE_AT, "SpeculativeDecodingMode", "2c86dbd76de0a618"),
    (_ARGS, _ARGS_AT, "DecodingBaseConfig.tokens_per_gen_step", "123c9433e74f8c8f"),
    (_ARGS, _ARGS_AT, "PARDDecodingConfig.set_max_total_draft_tokens", "74ed428a720eac2f"),
    (_ARGS, _ARGS_AT, "PARDDecodingConfig.tokens_per_gen_step", "9d7ee6decdd23faa"),
    (_ARGS, _ARGS_AT, "DFlashDecodingConfig.set_max_total_draft_tokens", "74ed428a720eac2f"),
    (_ARGS, _ARGS_AT, "DFlashDecodingConfig.tokens_per_gen_step", "7a2dbdceb53e25d9"),
    (_ARGS, _ARGS_AT, "NGramDecodingConfig.validate_ngram_config", "25ae7a4c1776ba81"),
    (_ARGS, _ARGS_AT, "DraftTargetDecodingConfig.validate_draft_target_config", "0e896d895fd46ec8"),
    (_CFG, _CFG_AT, "uses_vswa_kv_cache_layout", "9b2f4405d5a59074"),
    (_CFG, _CFG_AT, "_is_sliding_attention_layer", "bd4b48cb41701568"),
    (_CFG, _CFG_AT, "get_layer_attention_window", "2698e027d32bfbf2"),
    (_MAMBA, REVISION, "_get_num_cuda_graph_padding_dummy_slots", "1b289ff990515e74"),
    (_MAMBA, REVISION, "_mamba_snapshot_rule_counts", "380a0898169a7652"),
    (_MAMBA, REVISION, "_mamba_regular_snapshot_interval", "820393799e340d76"),
    (_MAMBA, REVISION, "_get_local_mamba_cache_layout", "2549d108c2a29ab0"),
    (_MAMBA, REVISION, "_qwen4_exp_ple_state_bytes_per_rank", "f2dce94201d74a57"),
    (_MAMBA, REVISION, "_estimate_mamba_hybrid_cache_cost", "cedcfdf5273c7d41"),
    (_MAMBA, REVISION, "MambaHybridCacheManagerV2.get_cache_size_per_token", "7e9a79a0735584b3"),
    (_MAMBA, REVISION, "MambaHybridCacheManagerV2._max_resident_sequences", "a5d9372de148038c"),
    (_MAMBA, REVISION, "MambaHybridCacheManagerV2._mamba_state_bytes_per_slot", "4c1b5be45267c85e"),
    (
        _MAMBA,
        REVISION,
        "MambaHybridCacheManagerV2._num_ssm_snapshots_for_capacity",
        "85d4e1b7834376f1",
    ),
    (_MAMBA, REVISION, "MambaHybridCacheManagerV2._get_quota_from_max_tokens", "b52d23dd6cf28c73"),
    (_MAMBA, REVISION, "MambaHybridCacheManagerV2._get_max_tokens_from_quota", "e35891369939334e"),
    (_CFG, _PARAMS_AT, "MambaKVCacheParams.get_states_bytes_per_layer", "c76b9afde325aebf"),
    (_RES, _RES_AT, "_clamp_max_attention_window_vec", "d8f488a689a66e42"),
    (_RES, _RES_AT, "_project_max_attention_window_vec", "989ac773085fdb0c"),
)

# The pool split inside a manager is C++ at this revision (``tensorrt_llm/runtime/
# kv_cache_manager_v2/__init__.py`` re-exports the nanobind module of
# ``cpp/tensorrt_llm/batch_manager/kv_cache_manager_v2``). The index stores none of those
# files at REVISION; each row names the stored version its text was read from (the index
# gives no commit for them). ``storageManager.cpp`` was chosen as the stored version that
# agrees with REVISION's Python: ``initial_pool_ratio`` one weight per life cycle (REVISION's
# ``_derive_v2_layer_type_attention_windows`` counts one per derived window),
# ``computeSlotsFromConstraints`` by that name and the integer grain that REVISION's
# ``_gpu_alloc_granularity`` says it mirrors. Its ``KVCacheDesc`` has no beam width, which
# REVISION's descs set to 1 (its comment: at prompt_length 0 the per-beam factor cancels).
# Names: ``Class::function``, ``#n`` the n-th definition of an overloaded name; the
# constructor row is the run of its lines from the hot tier's quota to its first
# CacheLevelManager (the cases size the GPU tier only).
_CPP = "cpp/tensorrt_llm/batch_manager/kv_cache_manager_v2/"
_SM_AT = "index version 57398650899 (85,220 characters)"
_CORE_AT = "index version 55157404688 (33,206 characters)"
_LCR_AT = "index version 55118970483 (8,421 characters)"
_MATH_AT = "index version 55118579062 (10,956 characters)"

# (upstream path, version read, definition name, sha256 prefix of its text)
CPP_FUNCTIONS = (
    (_CPP + "utils/math.h", _MATH_AT, "divUp", "6ddab71cf94d969b"),
    (_CPP + "utils/math.h", _MATH_AT, "roundUp", "801b7d4df32cb4ff"),
    (_CPP + "utils/math.h", _MATH_AT, "normalizeToRatio#1", "bc2c188f70901571"),
    (_CPP + "utils/math.h", _MATH_AT, "normalizeToRatio#2", "f9373bada8114b31"),
    (_CPP + "utils/math.h", _MATH_AT, "HalfOpenRange", "f7f1a8e7133f7260"),
    (_CPP + "utils/math.h", _MATH_AT, "intersect", "b6d378c41d040583"),
    (_CPP + "lifeCycleRegistry.h", _LCR_AT, "AttnLifeCycle", "39057aa3b2e2a080"),
    (_CPP + "lifeCycleRegistry.h", _LCR_AT, "SsmLifeCycle", "45d43ebb767be05f"),
    (_CPP + "lifeCycleRegistry.h", _LCR_AT, "LifeCycle", "b1e2e36c0cfb0700"),
    (_CPP + "lifeCycleRegistry.h", _LCR_AT, "getStaleRange", "0e8da3e47a313aa4"),
    (_CPP + "lifeCycleRegistry.h", _LCR_AT, "computeScratchRange", "b531f6aef9428d79"),
    (
        _CPP + "storageManager.cpp",
        _SM_AT,
        "CacheLevelManager::cacheTierGranularity",
        "9d276c28233dc06b",
    ),
    (_CPP + "storageManager.cpp", _SM_AT, "StorageManager::StorageManager", "42fd00f14be74532"),
    (
        _CPP + "storageManager.cpp",
        _SM_AT,
        "StorageManager::getPoolGroupIndex#1",
        "94965c4d5fecf0fa",
    ),
    (
        _CPP + "storageManager.cpp",
        _SM_AT,
        "StorageManager::getPoolGroupIndex#2",
        "61962dc17e14fa04",
    ),
    (
        _CPP + "storageManager.cpp",
        _SM_AT,
        "StorageManager::poolGroupNeedsHeadroomForGrowth",
        "0c14bf91e53f4ffd",
    ),
    (_CPP + "storageManager.cpp", _SM_AT, "StorageManager::toPoolGroupRatio", "e5b22f1215b85c97"),
    (_CPP + "storageManager.cpp", _SM_AT, "StorageManager::ratioFromBatch", "154cdbd5ac7bcce6"),
    (
        _CPP + "storageManager.cpp",
        _SM_AT,
        "StorageManager::computeSlotsFromConstraints",
        "0ad2903d93b22477",
    ),
    (
        _CPP + "storageManager.cpp",
        _SM_AT,
        "StorageManager::computePoolGroupMinSlotsFromConstraints",
        "605bdbbb71ed0a83",
    ),
    (
        _CPP + "storageManager.cpp",
        _SM_AT,
        "StorageManager::computeSlotsForBatch",
        "54fad6dc6da85d12",
    ),
    (
        _CPP + "storageManager.cpp",
        _SM_AT,
        "StorageManager::computePoolGroupSlotsForBatch",
        "bd4e92fb7df4cff0",
    ),
    (_CPP + "storageManager.cpp", _SM_AT, "StorageManager::slotsToBytes#1", "edbe6bd8d3ddb87f"),
    (_CPP + "storageManager.cpp", _SM_AT, "StorageManager::slotsToBytes#2", "0a421c2aa97b17b3"),
    (
        _CPP + "storageManager.cpp",
        _SM_AT,
        "StorageManager::computeSlotCountForLevel",
        "498d1c08a85bf8c1",
    ),
    (_CPP + "storageManager.cpp", _SM_AT, "StorageManager::minQuotaForLevel", "87a4c68ae1d1c97a"),
    (_CPP + "storage/core.cpp", _CORE_AT, "CacheLevelStorage::grainsToSlots", "4d9a99bbd3663073"),
    (_CPP + "storage/core.cpp", _CORE_AT, "CacheLevelStorage::grainsForSlots", "73d140bd71d6d374"),
    (
        _CPP + "storage/core.cpp",
        _CORE_AT,
        "CacheLevelStorage::ratioToSlotCountList",
        "61882a457c07109a",
    ),
)
