"""Run TensorRT-LLM's own static KV-cache estimator (one named revision) on CPU; record goldens.

Usage (from the repository root, kvgen's virtualenv active):
    python bench/engines/trtllm_oracle.py --engine-src DIR [--out FILE] [--print-digests]

``DIR`` holds the engine's source files under their upstream paths (at least every function
``bench/engines/trtllm_static_source.py`` lists, verbatim). Nothing of the engine enters this
repository: this script

1. cuts each listed function (or class) out of its file with ``ast`` and checks the sha256
   prefix of its text against the table (``--print-digests`` prints the digests instead);
2. writes them, after the stand-ins below, into one throwaway module in a temporary folder
   outside the repository (with a two-line ``tensorrt_llm._torch.speculative`` package there,
   for the functions' own local imports) and imports it: no torch, no C++ bindings;
3. drives the engine's functions with small stand-ins for what they read (a model config of
   spec dimensions, a ``KvCacheConfig`` with the fields they read, a mapping of one rank, the
   speculative configs' fields) over the cases below, and writes what they return, with
   provenance (repository, commit, module, function), to
   ``tests/fixtures/engines/trtllm_static.json``.

The engine's inputs are spec dimensions (layer pattern, kv heads, head dim, dtype, window per
kind), read from the generated families' runtime tables, never kvgen's computed bytes; the
model config carries ``layer_types`` and ``sliding_window`` as a Hugging Face config of a
mixed sliding/full model does, so the engine derives its windows itself.

Cases: the speculative headroom per mode (``get_num_extra_kv_tokens``, ``tokens_per_gen_step``,
``_get_generation_kv_capacity``); every shipped draft pair's target/draft budget split
(``_split_kv_cache_budget_for_draft``) at two budgets, with and without ``avg_seq_len``; the
target costs of every mixed sliding-window model; the quota/token conversions with the
multi-rank MIN sync; the automatic host tier; the ``typical_step``/``constraints`` the manager
hands its pool split.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib
import json
import math
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(ROOT))  # the generated families (their runtime tables: spec dimensions)

import trtllm_static_source as source  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "engines" / "trtllm_static.json"
GIB = 1 << 30

# ---- cutting ------------------------------------------------------------------------------


def cut(text: str, qualname: str) -> str:
    """The text of ``qualname`` (a top-level function or class, or Class.method) in ``text``,
    from its first decorator to its last line, dedented."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    parts = qualname.split(".")
    nodes: list[ast.stmt] = tree.body
    found: ast.stmt | None = None
    for depth, name in enumerate(parts):
        found = next((n for n in nodes if _named(n) == name), None)
        if found is None:
            raise LookupError(f"{qualname}: {name} not found")
        if depth < len(parts) - 1:
            nodes = found.body  # type: ignore[attr-defined]
    assert found is not None and found.end_lineno is not None
    first = min([found.lineno] + [d.lineno for d in getattr(found, "decorator_list", [])])
    return textwrap.dedent("".join(lines[first - 1 : found.end_lineno]))


def _named(node: ast.stmt) -> str | None:
    """The name a top-level statement defines: a function, a class or a plain constant."""
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return node.name
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        return target.id if isinstance(target, ast.Name) else None
    return None


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cut_all(engine_src: Path, check: bool = True) -> dict[str, str]:
    """Every listed function's text by qualified name, each digest checked."""
    out: dict[str, str] = {}
    bad = []
    for path, _commit, qualname, want in source.FUNCTIONS:
        text = cut((engine_src / path).read_text(), qualname)
        if check and digest(text) != want:
            bad.append(f"{path} {qualname}: sha256 {digest(text)}, the table says {want}")
        out[qualname] = text
    if bad:
        raise SystemExit("engine source does not match the recorded text:\n  " + "\n  ".join(bad))
    return out


# ---- the C++ pool split --------------------------------------------------------------------

HARNESS = HERE / "trtllm_pool_harness.cpp"
_REGION = (
    "    size_t const gpuQuota = cacheTierQuota(",
    "    mLevels.emplace_back(lifeCycleGrouping(",
)


def cut_cpp(text: str, name: str) -> str:
    """One definition of ``name`` in C++ ``text``: a top-level function (``Class::fn``; ``#n``
    the n-th definition of that name) or struct, from its template line to its closing brace
    at column 0; ``using NAME = ...;``; for ``StorageManager::StorageManager`` the run of the
    constructor's lines that size the hot tier (``_REGION``)."""
    lines = text.splitlines(keepends=True)
    if name == "StorageManager::StorageManager":
        first = next(i for i, line in enumerate(lines) if line.startswith(_REGION[0]))
        last = next(i for i in range(first, len(lines)) if lines[i].startswith(_REGION[1]))
        return "".join(lines[first:last])
    base, _, nth = name.partition("#")
    short = base.rsplit("::", 1)[-1]
    pattern = re.compile(
        rf"^(struct {re.escape(base)}$|using {re.escape(base)} = |.*(^|[\s*&>]){re.escape(base)}\()"
    )
    starts = [i for i, line in enumerate(lines)
              if line[:1] not in (" ", "/", "\n") and pattern.match(line.rstrip("\n"))]  # fmt: skip
    if not starts:
        raise LookupError(f"{name}: {short} not found")
    start = starts[int(nth or 1) - 1]
    if lines[start].startswith("using "):
        return lines[start]
    end = next(i for i in range(start, len(lines)) if lines[i].rstrip("\n") in ("}", "};"))
    if start and lines[start - 1].startswith("template"):
        start -= 1
    return "".join(lines[start : end + 1])


def cut_all_cpp(engine_src: Path, check: bool = True) -> dict[str, list[str]]:
    """The cut C++ definitions grouped by the harness marker they go to, digests checked."""
    out: dict[str, list[str]] = {}
    bad = []
    for path, _version, name, want in source.CPP_FUNCTIONS:
        text = cut_cpp((engine_src / path).read_text(), name)
        if check and digest(text) != want:
            bad.append(f"{path} {name}: sha256 {digest(text)}, the table says {want}")
        marker = path.rpartition("kv_cache_manager_v2/")[2]  # the file's place in the harness
        if name == "StorageManager::StorageManager":
            marker = name  # the constructor's lines go inside the harness's own method
        out.setdefault(marker, []).append(text)
    if bad:
        raise SystemExit("engine source does not match the recorded text:\n  " + "\n  ".join(bad))
    return out


def build_harness(parts: dict[str, list[str]], folder: Path) -> Path:
    """kvgen's harness with the engine's C++ definitions in place, compiled in ``folder``."""
    text = HARNESS.read_text()
    for marker, texts in parts.items():
        slot = f"// @ENGINE {marker}@"
        if slot not in text:
            raise SystemExit(f"the harness has no place for {marker}")
        text = text.replace(slot, "\n".join(texts))
    (folder / "harness.cpp").write_text(text)
    binary = folder / "harness"
    subprocess.run(["g++", "-std=c++20", "-O1", "-o", str(binary), str(folder / "harness.cpp")],
                   check=True)  # fmt: skip
    return binary


def run_harness(binary: Path, lines: list[str]) -> list[str]:
    done = subprocess.run([str(binary)], input="\n".join(lines) + "\n", capture_output=True,
                          text=True, check=True)  # fmt: skip
    return done.stdout.splitlines()


# ---- the throwaway module ---------------------------------------------------------------------

PRELUDE = '''\
# Throwaway module: TensorRT-LLM functions (cut verbatim by kvgen's trtllm_oracle.py) after
# CPU stand-ins for what they import. Not part of any repository.
import dataclasses
import math
import struct
from enum import IntEnum, auto
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

GB = 1 << 30


class _Logger:
    def __init__(self):
        self.records = []

    def warning(self, msg, *args, **kwargs):
        self.records.append(str(msg))

    info = debug = warning

    def warning_once(self, msg, *args, key=None, **kwargs):
        self.records.append(str(msg))


logger = _Logger()


class np:  # numpy's float32 rounding, the only numpy the functions call
    @staticmethod
    def float32(value):
        return struct.unpack("f", struct.pack("f", value))[0]


ModelConfigPython = ModelConfig = KvCacheConfig = Mapping = KVCacheManagerConfigPy = object
CacheTierConfig = DataRole = object


class BaseResourceManager:
    pass


class StrictBaseModel:
    """Stand-in for the pydantic base: fields from keywords, then the after-validators."""

    _VALIDATORS = ("set_max_total_draft_tokens", "validate_ngram_config",
                   "validate_draft_target_config")

    def __init__(self, **fields):
        for key, value in fields.items():
            setattr(self, key, value)
        for name in self._VALIDATORS:
            validator = getattr(type(self), name, None)
            if validator is not None:
                validator(self)


def model_validator(mode):
    return lambda function: function


def get_pp_layers(num_layers, mapping, spec_config=None, layer_mask=None):
    # Stand-in: one pipeline rank holds every layer (the cases run pp_size 1): the ids of the
    # layers the mask selects, or the first num_layers.
    if layer_mask is not None:
        return [i for i, kept in enumerate(layer_mask) if kept], num_layers
    return list(range(num_layers)), num_layers


class KVCacheManager:
    """Stand-in for the V1 manager's static bytes per token of full attention layers (not in
    the stored source read): K and V of the model config's heads, in its cache dtype."""

    @staticmethod
    def get_cache_size_per_token(model_config, mapping, num_layers=None, **kwargs):
        config = model_config.pretrained_config
        heads = config.num_key_value_heads // mapping.tp_size
        return 2 * heads * config.head_dim * model_config.kv_bytes * num_layers


class MambaHybridCacheManager:
    pass


class torch:  # the dtype sizes the functions read
    class int64:
        itemsize = 8


def is_hybrid_linear(config):
    return False  # the cases are attention-only models


def get_kv_cache_manager_cls(*args, **kwargs):
    return KVCacheManagerV2


@dataclasses.dataclass
class KVCacheDesc:  # records what _build_base_config describes
    capacity: int
    history_length: int
    beam_width: int = 1


@dataclasses.dataclass
class BatchDesc:
    kv_caches: list


class _Recorded:
    def __init__(self, **fields):
        self.__dict__.update(fields)


BufferConfig = AttentionLayerConfig = SwaScratchReuseConfig = _Recorded


class KVCacheManagerConfigPy(_Recorded):
    pass


def typed_range(stop):
    return range(stop)


def LayerId(value):
    return value


class Role:
    KEY = "key"
    VALUE = "value"
    KEY_BLOCK_SCALE = "key_block_scale"
    VALUE_BLOCK_SCALE = "value_block_scale"
    ALL = "all"


class CacheTypeCpp:
    SELF = "self"
    SELFKONLY = "selfkonly"


class DataType:
    HALF = "half"
    NVFP4 = "nvfp4"


class BlockReusePolicy:
    ALL_REUSABLE = "all_reusable"
'''

SPECULATIVE_PACKAGE = """\
from _trtllm_oracle_cut import get_num_extra_kv_tokens  # noqa: F401


def draft_prompt_lookahead(spec_config):  # stand-in: the cases run without block reuse
    return 0
"""

CONFIG_UTILS_MODULE = """\
from _trtllm_oracle_cut import MambaKVCacheParams


def extract_mamba_kv_cache_params(config, spec_config=None, quant_config=None):
    # stand-in: the harness puts the spec's recurrent dimensions and layer masks on the config
    return MambaKVCacheParams(**config.mamba_params)


def is_qwen4_exp(config):
    return False


def extract_qwen4_exp_ple_cache_params(config):  # never reached: no Qwen4-Exp case
    raise NotImplementedError
"""

# Methods go into stand-in classes of these names; each class keeps what its cut methods
# read from ``self`` (set by the harness below).
CLASS_HEADERS = {
    "KVCacheManagerV2": (
        "class KVCacheManagerV2(BaseResourceManager):\n"
        "    _supports_reuse_match_backoff = True\n"
        "\n"
        "    def __init__(self, **fields):\n"
        "        self.__dict__.update(fields)\n"
        "\n"
        "    def _get_runtime_cache_size_layer_components(self):\n"
        "        # stand-in: the per-layer bytes/token and windows the harness gives\n"
        "        return list(self.layer_sizes), list(self.max_attention_window_vec)\n"
        "\n"
        "    def get_layer_bytes_per_token(self, local_layer_idx, data_role):\n"
        "        return self.layer_sizes[local_layer_idx] // 2\n"
        "\n"
        "    def _extra_buffers_per_layer(self, *, tokens_per_block):\n"
        "        return None\n"
    ),
    "KvCacheCreator": (
        "class KvCacheCreator:\n"
        "    def __init__(self, **fields):\n"
        "        self.__dict__.update(fields)\n"
        "\n"
        "    def _should_create_separate_draft_kv_cache(self):\n"
        "        return self._draft_config is not None\n"
        "\n"
        "    def _get_effective_draft_config(self):\n"
        "        return self._draft_config\n"
        "\n"
        "    def _get_draft_kv_model_config(self):\n"
        "        return self._draft_config\n"
        "\n"
        "    def _get_model_kv_cache_manager_cls(self, engine, config=None):\n"
        "        return KVCacheManagerV2\n"
        "\n"
        "    def _validate_or_fallback_kv_cache_manager_v2(self, cls, *args):\n"
        "        return cls\n"
        "\n"
        "    def _bound_unsplit_v2_draft_by_tokens(self, budget, target, draft):\n"
        "        return draft\n"
    ),
    "MambaHybridCacheManagerV2": (
        "class MambaHybridCacheManagerV2(KVCacheManagerV2, MambaHybridCacheManager):\n"
        "    _ple_layer_ids = []\n"
        "\n"
        "    def _attention_cache_bytes_per_token(self):\n"
        "        # stand-in: the attention layers' bytes per token the harness gives\n"
        "        return sum(self.layer_sizes)\n"
    ),
    "MambaKVCacheParams": (
        "class MambaKVCacheParams:\n"
        "    def __init__(self, **fields):\n"
        "        self.__dict__.update(fields)\n"
        "\n"
        "    def get_layer_masks(self, is_draft=False, use_separate_draft_kv_cache=False):\n"
        "        # stand-in: a target manager of no draft layers\n"
        "        return list(self.mamba_layer_mask), list(self.full_attention_layer_mask)\n"
    ),
    "DecodingBaseConfig": "class DecodingBaseConfig(StrictBaseModel):\n    pass\n",
    "PARDDecodingConfig": "class PARDDecodingConfig(DecodingBaseConfig):\n    pass\n",
    "DFlashDecodingConfig": "class DFlashDecodingConfig(DecodingBaseConfig):\n    pass\n",
    "NGramDecodingConfig": "class NGramDecodingConfig(DecodingBaseConfig):\n    pass\n",
    "DraftTargetDecodingConfig": "class DraftTargetDecodingConfig(DecodingBaseConfig):\n    pass\n",
}
CLASS_ORDER = ("DecodingBaseConfig", "PARDDecodingConfig", "DFlashDecodingConfig",
               "NGramDecodingConfig", "DraftTargetDecodingConfig", "KVCacheManagerV2",
               "MambaHybridCacheManagerV2", "MambaKVCacheParams", "KvCacheCreator")  # fmt: skip


def build_module(functions: dict[str, str], folder: Path) -> Any:
    """The cut functions after the stand-ins, as module ``_trtllm_oracle_cut`` in ``folder``."""
    top = [text for name, text in functions.items() if "." not in name]
    members: dict[str, list[str]] = {name: [] for name in CLASS_ORDER}
    for name, text in functions.items():
        if "." in name:
            owner, _method = name.split(".", 1)
            members[owner].append(textwrap.indent(text, "    "))
    body = [PRELUDE, *top]
    for owner in CLASS_ORDER:
        body.append(CLASS_HEADERS[owner] + "\n" + "\n".join(members[owner]))
    (folder / "_trtllm_oracle_cut.py").write_text("\n\n".join(body))
    package = folder / "tensorrt_llm" / "_torch" / "speculative"
    package.mkdir(parents=True)
    (folder / "tensorrt_llm" / "__init__.py").write_text("")
    (folder / "tensorrt_llm" / "_torch" / "__init__.py").write_text("")
    (package / "__init__.py").write_text(SPECULATIVE_PACKAGE)
    executor = folder / "tensorrt_llm" / "_torch" / "pyexecutor"
    executor.mkdir()
    (executor / "__init__.py").write_text("")
    (executor / "config_utils.py").write_text(CONFIG_UTILS_MODULE)
    sys.path.insert(0, str(folder))
    return importlib.import_module("_trtllm_oracle_cut")


# ---- stand-in inputs ------------------------------------------------------------------------


class KvCacheConfig:
    """The ``KvCacheConfig`` fields the functions read, with pydantic's ``model_copy``."""

    def __init__(self, **fields: Any) -> None:
        self.max_attention_window = None
        self.enable_block_reuse = False
        self.enable_swa_scratch_reuse = False
        self.max_util_for_resume = 0.95
        self.pool_ratio = None
        self.avg_seq_len = None
        self.max_gpu_total_bytes = None
        self.host_cache_size = None
        self.disk_cache_size = None
        self.max_tokens = None
        self.enable_partial_reuse = True
        self.__dict__.update(fields)

    def model_copy(self, update: dict[str, Any] | None = None) -> KvCacheConfig:
        copy = KvCacheConfig(**self.__dict__)
        copy.__dict__.update(update or {})
        return copy


class _Fp8:
    def has_fp8_kv_cache(self) -> bool:
        return True

    def has_fp4_kv_cache(self) -> bool:
        return False

    def has_kv_cache_quant(self) -> bool:
        return True


def mapping(tp_size: int = 1) -> SimpleNamespace:
    return SimpleNamespace(
        tp_size=tp_size, enable_attention_dp=False, world_size=tp_size,
        has_cp_helix=lambda: False, is_last_pp_rank=lambda: True,
    )  # fmt: skip


def model_config(stack: Any) -> SimpleNamespace:
    """A Hugging Face-like config of a runtime-table stack (spec dimensions only): per-layer
    kinds from the repeating pattern; ``layer_types`` and ``sliding_window`` where the stack
    mixes sliding and full layers (Gemma2/3-style configs carry both)."""
    kinds = [stack.kinds[stack.pattern[i % len(stack.pattern)]] for i in range(stack.count)]
    first = kinds[0]
    sliding = {k.window for k in kinds if k.attention == "sliding"}
    pretrained: dict[str, Any] = {
        "num_hidden_layers": stack.count,
        "num_attention_heads": first.kv_heads,
        "num_key_value_heads": first.kv_heads,
        "head_dim": first.head_dim,
        "hidden_size": first.kv_heads * first.head_dim,
    }
    if sliding:
        pretrained["sliding_window"] = next(iter(sliding))
        if any(k.attention == "full" for k in kinds):
            pretrained["layer_types"] = [
                "sliding_attention" if k.attention == "sliding" else "full_attention" for k in kinds
            ]
    quant = SimpleNamespace(quant_mode=_Fp8()) if first.dtype == "fp8" else None
    return SimpleNamespace(
        pretrained_config=SimpleNamespace(**pretrained),
        quant_config=quant,
        get_num_attention_layers=lambda: stack.count,
    )


def supported(stack: Any) -> str:
    """Why the engine's static estimator cannot take this stack as spec dimensions ("" if it
    can): it reads one head_dim, bf16/fp16 or fp8, one sliding window, no sinks, and
    counts every layer as holding its own cache."""
    kinds = list(stack.kinds.values())
    if any(k.attention not in ("full", "sliding") for k in kinds):
        return "attention other than full or sliding"
    if any(k.kv_lora_rank for k in kinds):
        return "MLA"
    if len({(k.kv_heads, k.head_dim, k.dtype) for k in kinds}) > 1:
        return "kinds differ in heads, head_dim or dtype"
    if kinds[0].dtype not in ("bf16", "fp16", "fp8"):
        return f"dtype {kinds[0].dtype}"
    if len({k.window for k in kinds if k.attention == "sliding"}) > 1:
        return "more than one sliding window"
    if any(k.sink_tokens for k in kinds):
        return "sink tokens"
    if any(k.reads is not None for k in kinds):
        return "KV sharing (layers reading another layer's cache)"
    return ""


# ---- speculative configs --------------------------------------------------------------------

# kvgen's speculative modes as the engine's configs: (config class, SpeculativeDecodingMode).
MODES = {
    "eagle3": ("DecodingBaseConfig", "EAGLE3_ONE_MODEL"),
    "mtp": ("DecodingBaseConfig", "MTP"),
    "mtp_eagle": ("DecodingBaseConfig", "MTP_EAGLE_ONE_MODEL"),
    "draft_target": ("DraftTargetDecodingConfig", "DRAFT_TARGET_ONE_MODEL"),
    "dflash": ("DFlashDecodingConfig", "DFLASH"),
    "pard": ("PARDDecodingConfig", "PARD"),
    "eagle3_two_model": ("DecodingBaseConfig", "EAGLE3"),
    "mtp_eagle_two_model": ("DecodingBaseConfig", "MTP_EAGLE"),
    "draft_target_two_model": ("DraftTargetDecodingConfig", "DRAFT_TARGET"),
    "ngram": ("NGramDecodingConfig", "NGRAM"),
}


def spec_config(m: Any, mode: str, k: int, tree: int | None = None, top_k: int = 0) -> Any:
    """The engine's speculative config of a kvgen mode with K draft tokens. Eagle and MTP
    configs set ``max_total_draft_tokens`` in validators not run here: K for a linear chain,
    the tree's node count for a static tree, topK*K for a dynamic tree (read at the
    ``llm_args.py`` commit of ``trtllm_static_source``)."""
    if mode == "none":
        return None
    cls, mode_name = MODES[mode]
    fields: dict[str, Any] = {
        "max_draft_len": k, "spec_dec_mode": m.SpeculativeDecodingMode[mode_name],
        "speculative_model": "draft", "num_nextn_predict_layers": k,
        "_num_draft_hidden_layers": None, "use_dynamic_tree": top_k > 0,
        "dynamic_tree_max_topK": top_k or None,
    }  # fmt: skip
    if cls == "DecodingBaseConfig":
        fields["max_total_draft_tokens"] = top_k * k if top_k else (tree if tree else k)
    return getattr(m, cls)(**fields)


# ---- the cases ---------------------------------------------------------------------------------

HEADROOM_K = (1, 2, 3, 4, 5, 6)


def headroom_rows(m: Any) -> list[dict[str, Any]]:
    rows = []
    variants: list[tuple[str, int, int | None, int]] = [("none", 0, None, 0)]
    variants += [(mode, k, None, 0) for mode in MODES for k in HEADROOM_K]
    variants += [("eagle3", 3, 10, 0), ("eagle3", 4, None, 2), ("mtp_eagle", 3, None, 2)]
    for mode, k, tree, top_k in variants:
        cfg = spec_config(m, mode, k, tree, top_k)
        reserve, head = m._get_generation_kv_capacity(cfg, is_draft=False)
        draft_reserve, draft_head = m._get_generation_kv_capacity(cfg, is_draft=True)
        rows.append({
            "mode": mode, "max_draft_len": k, "tree_draft_tokens": tree, "dynamic_top_k": top_k,
            "extra_kv_tokens": m.get_num_extra_kv_tokens(cfg),
            "tokens_per_gen_step": cfg.tokens_per_gen_step if cfg is not None else 1,
            "target": {"reserve": reserve, "headroom": head},
            "draft": {"reserve": draft_reserve, "headroom": draft_head},
        })  # fmt: skip
    return rows


def creator(m: Any, target: Any, draft: Any, cfg: Any, kv: KvCacheConfig, **o: int) -> Any:
    engine = SimpleNamespace(model=SimpleNamespace(model_config=target))
    return m.KvCacheCreator(
        _kv_cache_config=kv, _mapping=mapping(o["tp"]), _tokens_per_block=o["tpb"],
        _max_seq_len=o["seq"], _max_batch_size=o["batch"], _max_num_tokens=o["chunk"],
        _speculative_config=cfg, _kv_cache_manager_cls=m.KVCacheManagerV2,
        _model_engine=engine, _draft_model_engine=None, _draft_config=draft,
        _is_disagg=False, _cache_transceiver_config=None,
    )  # fmt: skip


def cost(c: Any) -> dict[str, Any]:
    return {"slope": c.slope, "intercept": c.intercept, "bytes_per_request": c.bytes_per_request,
            "quota_per_request": c.quota_per_request}  # fmt: skip


def families() -> list[tuple[str, Any]]:
    import pkgutil

    import generated

    out = []
    for info in pkgutil.iter_modules(generated.__path__):
        if info.name.startswith("_"):
            continue
        try:
            tables = importlib.import_module(f"generated.{info.name}.allocator").TABLES
        except ImportError:
            continue
        out.append((info.name, tables))
    return out


BATCH, CHUNK, SEQ = 8, 8192, 32768
BUDGETS = (40 * GIB, 12 * GIB)
HOST_BUDGET = 64 * GIB


def split_rows(m: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Every shipped draft pair (a profile with a draft stack): the engine's costs and split."""
    rows, skipped = [], []
    for family, tables in families():
        for name, table in tables.models.items():
            for profile in table.profiles:
                draft_stack = tables.drafts.get(profile)
                if draft_stack is None:
                    continue
                why = supported(table.stack) or supported(draft_stack)
                if why:
                    skipped.append(f"{family}/{name}/{profile}: {why}")
                    continue
                mode, k, tree = tables.profiles[profile]
                seq = min(SEQ, table.max_seq_len)
                o = {"tp": 1, "tpb": tables.tokens_per_block, "seq": seq, "batch": BATCH,
                     "chunk": CHUNK}  # fmt: skip
                target, draft = model_config(table.stack), model_config(draft_stack)
                cfg = spec_config(m, mode, k, tree)
                for avg in (None, seq):
                    for budget in BUDGETS:
                        kv = KvCacheConfig(max_gpu_total_bytes=budget, avg_seq_len=avg,
                                           host_cache_size=HOST_BUDGET)  # fmt: skip
                        c = creator(m, target, draft, cfg, kv, **o)
                        costs = c._get_target_and_draft_cache_costs(kv, include_request_cost=True)
                        row: dict[str, Any] = {
                            "family": family, "model": name, "speculative": profile,
                            "max_batch_size": BATCH, "max_num_tokens": CHUNK, "max_seq_len": seq,
                            "budget_bytes": budget, "avg_seq_len": avg,
                            "target": cost(costs[0]), "draft": cost(costs[1]),
                        }  # fmt: skip
                        try:
                            t_cfg, d_cfg = c._split_kv_cache_budget_for_draft(
                                "max_gpu_total_bytes", kv
                            )
                            row["shares"] = {"target": t_cfg.max_gpu_total_bytes,
                                             "draft": d_cfg.max_gpu_total_bytes}  # fmt: skip
                        except ValueError as exc:
                            row["refused"] = str(exc)
                        t_host, d_host = c._split_kv_cache_budget_for_draft("host_cache_size", kv)
                        row["host_shares"] = {"target": t_host.host_cache_size,
                                              "draft": d_host.host_cache_size}  # fmt: skip
                        rows.append(row)
    return rows, skipped


def target_rows(m: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Every model mixing sliding and full layers, no speculation: the target's costs."""
    rows, skipped = [], []
    for family, tables in families():
        for name, table in tables.models.items():
            kinds = {k.attention for k in table.stack.kinds.values()}
            if "sliding" not in kinds:
                continue
            why = supported(table.stack) or ("" if "full" in kinds else "no full layer")
            if why:
                skipped.append(f"{family}/{name}: {why}")
                continue
            seq = min(SEQ, table.max_seq_len)
            for avg in (None, seq):
                kv = KvCacheConfig(avg_seq_len=avg)
                o = {"tp": 1, "tpb": tables.tokens_per_block, "seq": seq, "batch": BATCH,
                     "chunk": CHUNK}  # fmt: skip
                c = creator(m, model_config(table.stack), None, None, kv, **o)
                got = c._per_manager_cache_cost(m.KVCacheManagerV2, model_config(table.stack), kv,
                                                include_request_cost=True)  # fmt: skip
                rows.append({"family": family, "model": name, "max_batch_size": BATCH,
                             "max_num_tokens": CHUNK, "max_seq_len": seq, "avg_seq_len": avg,
                             "target": cost(got)})  # fmt: skip
    return rows, skipped


def conversion_rows(m: Any) -> list[dict[str, Any]]:
    """The manager's quota <-> token conversions of one rank's layers, and the multi-rank
    MIN sync of its ``__init__`` (``quota = min(q, ceil(quota(min_r tokens_r) / u))``, the
    arithmetic of those lines applied to the engine's own conversions)."""
    rows = []
    layers = [(4096, None)] * 4 + [(4096, 1024)] * 20  # 24 layers, 4 full, 20 of window 1024
    for head, scratch in ((1, False), (8, False), (11, True)):
        mgr = m.KVCacheManagerV2(
            layer_sizes=[s for s, _w in layers], max_attention_window_vec=[w for _s, w in layers],
            tokens_per_block=32, enable_swa_scratch_reuse=scratch,
            _generation_kv_capacity_headroom=head, max_batch_size=8, max_num_tokens=2048,
            _has_cp_helix=False, _helix_cp_size=1,
        )  # fmt: skip
        quotas = {t: mgr._get_quota_from_max_tokens(t) for t in (0, 1, 1000, 2048, 2049, 50000)}
        tokens = {q: mgr._get_max_tokens_from_quota(q) for q in (0, 10 << 20, 600 << 20, 4 * GIB)}
        util = np_float32(0.95)
        ranks = (3 * GIB, 5 * GIB + 12345, 4 * GIB)
        rank_tokens = [mgr._get_max_tokens_from_quota(int(q * util)) for q in ranks]
        least = min(rank_tokens)
        synced = [min(q, math.ceil(mgr._get_quota_from_max_tokens(least) / util))
                  for q in ranks]  # fmt: skip
        rows.append({
            "layers": "4 x 4096 B full + 20 x 4096 B window 1024", "tokens_per_block": 32,
            "headroom": head, "scratch": scratch, "max_batch_size": 8, "max_num_tokens": 2048,
            "quota_for_tokens": {str(t): q for t, q in quotas.items()},
            "tokens_for_quota": {str(q): t for q, t in tokens.items()},
            "ranks": {"quotas": list(ranks), "max_util_for_resume": 0.95,
                      "tokens": rank_tokens, "synced_quotas": synced},
        })  # fmt: skip
    return rows


def np_float32(value: float) -> float:
    import struct

    rounded: float = struct.unpack("f", struct.pack("f", value))[0]
    return rounded


def host_rows(m: Any) -> list[dict[str, Any]]:
    inf = float("inf")
    cases = [
        (40 * GIB, 1, inf, inf, False), (40 * GIB, 4, 100 * GIB, inf, False),
        (40 * GIB, 2, 500 * GIB, 16 * GIB, False), (40 * GIB, 1, 0.0, inf, False),
        (40 * GIB, 1, 60 * GIB, inf, True), (40 * GIB, 1, 30 * GIB, inf, True),
    ]  # fmt: skip
    rows = []
    for quota, ranks, avail, memlock, shared in cases:
        got = m._compute_auto_host_tier_quota(quota, ranks, avail, memlock, shared)
        rows.append({"quota": quota, "local_ranks": ranks,
                     "mem_available": None if avail == inf else avail,
                     "memlock_limit": None if memlock == inf else memlock,
                     "shares_device_memory": shared, "host_quota": got})  # fmt: skip
    return rows


def typical_step_rows(m: Any) -> list[dict[str, Any]]:
    """What ``_build_base_config`` hands the pool split: typical_step, constraints and the
    initial ratio, for avg_seq_len unset/set and pool_ratio set."""
    rows = []
    for avg, ratio, k in ((None, None, 0), (4096, None, 0), (4096, None, 4), (None, [0.3, 0.7], 0)):
        cfg = SimpleNamespace(pool_ratio=ratio, avg_seq_len=avg, max_util_for_resume=0.95,
                              enable_partial_reuse=True, enable_block_reuse=False)  # fmt: skip
        mgr = m.KVCacheManagerV2(
            enable_swa_scratch_reuse=False, max_beam_width=1, max_seq_len=8192,
            max_num_tokens=2048, num_extra_kv_tokens=max(0, k - 1), max_draft_len=k,
            max_batch_size=4, num_local_layers=2, kv_cache_type="self", dtype="half",
            layer_sizes=[1024, 1024], max_attention_window_vec=[None, 512],
            _ledger_tokens_per_block=32, reuse_match_backoff=0, enable_stats=False,
            block_reuse_policy="all_reusable", head_dim_per_layer=[128, 128],
        )  # fmt: skip
        built = mgr._build_base_config(cfg, tokens_per_block=32, cache_tiers=[])

        def descs(batch: Any) -> list[list[int]]:
            return [[d.capacity, d.history_length, d.beam_width] for d in batch.kv_caches]

        rows.append({
            "avg_seq_len": avg, "pool_ratio": ratio, "max_draft_len": k, "max_seq_len": 8192,
            "max_num_tokens": 2048, "max_batch_size": 4,
            "typical_step": None if built.typical_step is None else descs(built.typical_step),
            "constraints": [descs(b) for b in built.constraints],
            "initial_pool_ratio": built.initial_pool_ratio,
        })  # fmt: skip
    return rows


POOL_BUDGETS = (40 * GIB, 12 * GIB)
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1}


def manager_layers(m: Any, table: Any, tpb: int, seq: int, kv: Any) -> Any:
    """What the engine's ``_build_base_config`` hands the C++ split for a target of spec
    dimensions: per-layer windows derived from ``layer_types`` and resolved as the manager
    does (``_derive_v2_layer_type_attention_windows``, ``_resolve_v2_max_attention_window_vec``),
    K and V buffers per layer, and the typical step, constraints and initial ratio."""
    stack = table.stack
    config = model_config(stack)
    derived = m._derive_v2_layer_type_attention_windows(
        kv, m.KVCacheManagerV2, config, seq
    )  # fmt: skip
    layers = list(range(stack.count))
    windows = m._resolve_v2_max_attention_window_vec(derived, seq, layers)
    first = stack.kinds[stack.pattern[0]]
    size = 2 * first.kv_heads * first.head_dim * DTYPE_BYTES[first.dtype]
    mgr = m.KVCacheManagerV2(
        enable_swa_scratch_reuse=False, max_beam_width=1, max_seq_len=seq,
        max_num_tokens=CHUNK, num_extra_kv_tokens=0, max_draft_len=0,
        max_batch_size=BATCH, num_local_layers=stack.count, kv_cache_type="self",
        dtype="half", layer_sizes=[size] * stack.count, max_attention_window_vec=windows,
        _ledger_tokens_per_block=tpb, reuse_match_backoff=0, enable_stats=False,
        block_reuse_policy="all_reusable", head_dim_per_layer=[first.head_dim] * stack.count,
    )  # fmt: skip
    return mgr._build_base_config(kv, tokens_per_block=tpb, cache_tiers=[])


def storage_of(built: Any) -> tuple[list[Any], list[list[int]], list[int], list[list[int]]]:
    """The C++ side's view of built layer configs (kvgen's stand-in for the C++
    ``LifeCycleRegistry`` and ``createStorageConfig``): life cycles (window, sink tokens) by
    first appearance; per life cycle its buffers coalesced by size, one pool per size, largest
    first; life cycles of equal pool lists share a pool group, groups in ascending order of
    that list (the engine keys them in a std::map)."""
    cycles: dict[tuple[Any, Any], dict[int, int]] = {}
    for layer in built.layers:
        sizes = cycles.setdefault((layer.sliding_window_size, layer.num_sink_tokens), {})
        for buffer in layer.buffers:
            sizes[buffer.size] = sizes.get(buffer.size, 0) + 1
    keys = list(cycles)
    pools = [sorted((s * n for s, n in cycles[k].items()), reverse=True) for k in keys]
    groups = sorted({tuple(p) for p in pools})
    group_of = [groups.index(tuple(p)) for p in pools]
    return keys, pools, group_of, [list(g) for g in groups]


def harness_line(tpb: int, quota: int, built: Any, storage: Any) -> str:
    keys, _pools, group_of, groups = storage
    out = [tpb, quota, repr(float(built.max_util_for_resume)), len(keys)]
    for window, sinks in keys:
        out += [-1 if window is None else window, -(-(sinks or 0) // tpb), 0]
    out.append(len(groups))
    for group in groups:
        out += [len(group), *group]
    out += group_of

    def batch(b: Any) -> list[Any]:
        return [len(b.kv_caches)] + [x for d in b.kv_caches for x in (d.capacity, d.history_length)]

    out += [0] if built.typical_step is None else [1, *batch(built.typical_step)]
    out.append(len(built.constraints))
    for c in built.constraints:
        out += batch(c)
    ratio = built.initial_pool_ratio
    out += [0] if ratio is None else [1, *(repr(float(r)) for r in ratio)]
    return " ".join(str(x) for x in out)


def parse_harness(line: str) -> dict[str, Any]:
    if line.startswith("error "):
        return {"error": line[len("error ") :]}
    words = line.split()
    i, j = words.index("min"), words.index("ratio")
    # The ratios are float32 printed to 9 significant digits, which names one float32.
    return {"slots": [int(w) for w in words[1:i]], "min_slots": [int(w) for w in words[i + 1 : j]],
            "ratio": [np_float32(float(w)) for w in words[j + 1 :]]}  # fmt: skip


def pool_split_rows(m: Any, binary: Path) -> list[dict[str, Any]]:
    """Every model mixing sliding and full layers (the targets of ``target_rows``), no
    speculation, at two budgets, with and without avg_seq_len = S, and with an explicit
    pool_ratio: the slots per pool group the engine's C++ split builds."""
    rows, lines = [], []
    for family, tables in families():
        for name, table in tables.models.items():
            kinds = {k.attention for k in table.stack.kinds.values()}
            if "sliding" not in kinds or "full" not in kinds or supported(table.stack):
                continue
            seq, tpb = min(SEQ, table.max_seq_len), tables.tokens_per_block
            for budget in POOL_BUDGETS:
                for avg, ratio in ((None, None), (seq, None), (None, "explicit")):
                    kv = KvCacheConfig(avg_seq_len=avg)
                    storage = storage_of(manager_layers(m, table, tpb, seq, kv))
                    if ratio == "explicit":  # one weight per life cycle: 1/3, 2/3
                        kv = KvCacheConfig(pool_ratio=[1 / 3, 2 / 3][: len(storage[0])])
                    built = manager_layers(m, table, tpb, seq, kv)
                    storage = storage_of(built)
                    lines.append(harness_line(tpb, budget, built, storage))
                    rows.append({
                        "family": family, "model": name, "max_batch_size": BATCH,
                        "max_num_tokens": CHUNK, "max_seq_len": seq, "tokens_per_block": tpb,
                        "budget_bytes": budget, "avg_seq_len": avg,
                        "pool_ratio": kv.pool_ratio,
                        "life_cycles": [[w, -(-(s or 0) // tpb)] for w, s in storage[0]],
                        "slot_sizes": storage[1], "group_of": storage[2],
                        "group_slot_sizes": storage[3],
                    })  # fmt: skip
    for row, line in zip(rows, run_harness(binary, lines), strict=True):
        row["engine"] = parse_harness(line)
    return rows


def emit_split_rows(m: Any, binary: Path) -> list[dict[str, Any]]:
    """The same models and budgets with the ``pool_ratio`` ``kvgen plan --emit trtllm``
    writes for revision 38198e34 (``kvgen.sizing._trtllm_pools.pool_ratio_for_quota``, the input):
    the slots the engine's C++ split then builds."""
    from kvgen.sizing._trtllm_pools import pool_ratio_for_quota

    rows, lines = [], []
    for family, tables in families():
        sizing = importlib.import_module(f"generated.{family}.sizing")
        for name, table in tables.models.items():
            kinds = {k.attention for k in table.stack.kinds.values()}
            if "sliding" not in kinds or "full" not in kinds or supported(table.stack):
                continue
            seq, tpb = min(SEQ, table.max_seq_len), tables.tokens_per_block
            for budget in POOL_BUDGETS:
                ratio = pool_ratio_for_quota(sizing, name, budget, max_batch_size=BATCH,
                                             max_num_tokens=CHUNK, max_seq_len=seq)  # fmt: skip
                built = manager_layers(m, table, tpb, seq, KvCacheConfig(pool_ratio=ratio))
                storage = storage_of(built)
                lines.append(harness_line(tpb, budget, built, storage))
                rows.append({
                    "family": family, "model": name, "max_batch_size": BATCH,
                    "max_num_tokens": CHUNK, "max_seq_len": seq, "tokens_per_block": tpb,
                    "budget_bytes": budget, "pool_ratio": ratio,
                    "life_cycles": [[w, -(-(s or 0) // tpb)] for w, s in storage[0]],
                    "group_of": storage[2], "group_slot_sizes": storage[3],
                })  # fmt: skip
    for row, line in zip(rows, run_harness(binary, lines), strict=True):
        row["engine"] = parse_harness(line)
    return rows


_DTYPE_SIZES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1}
# (block reuse, periodic_snapshot_interval): none; reuse without periodic snapshots; every
# 256 tokens (4 pages of 64); every 1,000 tokens (not a page multiple).
SNAPSHOTS = ((False, None), (True, None), (True, 256), (True, 1000))


def mamba_model_config(table: Any) -> tuple[SimpleNamespace, int] | None:
    """A hybrid's config as the Mamba manager's functions read it (spec dimensions): the
    attention heads, and on the config the recurrent dimensions and per-layer masks
    ``extract_mamba_kv_cache_params`` would derive (its stand-in reads them). None where the
    layers are not separate full-attention and Mamba layers of one recurrent shape."""
    stack = table.stack
    kinds = [stack.kinds[stack.pattern[i % len(stack.pattern)]] for i in range(stack.count)]
    attention = [k for k in kinds if k.attention == "full"]
    recurrent = [k for k in kinds if k.attention == "recurrent"]
    shapes = {(k.ssm_heads, k.ssm_head_dim, k.d_state, k.n_groups, k.d_conv, k.dtype,
               k.ssm_dtype) for k in recurrent}  # fmt: skip
    heads = {(k.kv_heads, k.head_dim, k.dtype) for k in attention}
    if (not recurrent or not attention or len(shapes) != 1 or len(heads) != 1
            or any(k.ssm_heads for k in attention) or not all(k.ssm_heads for k in recurrent)
            or any(k.attention not in ("full", "recurrent", "none") for k in kinds)
            or any(k.kv_lora_rank for k in attention)):  # fmt: skip
        return None
    ((ssm_heads, head_dim, d_state, groups, d_conv, dtype, ssm_dtype),) = shapes
    ((kv_heads, attn_dim, attn_dtype),) = heads

    def size(name: str) -> SimpleNamespace:
        return SimpleNamespace(itemsize=_DTYPE_SIZES[name])

    params = {"state_size": d_state, "conv_kernel": d_conv, "num_heads": ssm_heads,
              "n_groups": groups, "head_dim": head_dim, "dtype": size(dtype),
              "mamba_ssm_cache_dtype": size(ssm_dtype or dtype),
              "mamba_layer_mask": [k.attention == "recurrent" for k in kinds],
              "full_attention_layer_mask": [k.attention == "full" for k in kinds]}  # fmt: skip
    pretrained = SimpleNamespace(num_key_value_heads=kv_heads, head_dim=attn_dim,
                                 mamba_params=params)  # fmt: skip
    config = SimpleNamespace(pretrained_config=pretrained, quant_config=None,
                             kv_bytes=_DTYPE_SIZES[attn_dtype])  # fmt: skip
    return config, len(attention)


def mamba_rows(m: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Every hybrid of separate full-attention and Mamba layers, B 8, S = min(32768, native),
    under each snapshot setting of ``SNAPSHOTS``: ``MambaHybridCacheManagerV2``'s static cost
    and its runtime quota/token conversions."""
    rows, skipped = [], []
    for family, tables in families():
        for name, table in tables.models.items():
            kinds = table.stack.kinds.values()
            if not any(k.attention == "recurrent" or k.ssm_heads for k in kinds):
                continue
            found = mamba_model_config(table)
            if found is None:
                skipped.append(f"{family}/{name}: not separate full-attention layers of plain "
                               "heads and Mamba layers")  # fmt: skip
                continue
            config, attention_layers = found
            seq, tpb = min(SEQ, table.max_seq_len), tables.tokens_per_block
            for reuse, interval in SNAPSHOTS:
                state_config = SimpleNamespace(periodic_snapshot_interval=interval,
                                               additional_snapshot_offsets_from_start=[],
                                               additional_snapshot_offsets_from_end=[])  # fmt: skip
                kv = KvCacheConfig(enable_block_reuse=reuse, mamba_state_config=state_config)
                one = SimpleNamespace(tp_size=1, pp_size=1, enable_attention_dp=False)
                slope, intercept = m.MambaHybridCacheManagerV2.get_cache_size_per_token(
                    config, one, max_batch_size=BATCH, kv_cache_config=kv,
                    tokens_per_block=tpb, max_seq_len=seq, spec_config=None,
                )  # fmt: skip
                params, mamba_layers, _ = m._get_local_mamba_cache_layout(config, one)
                attention = m.KVCacheManager.get_cache_size_per_token(config, one,
                                                                      num_layers=1)  # fmt: skip
                mgr = m.MambaHybridCacheManagerV2(
                    max_batch_size=BATCH, mapping=one, max_seq_len=seq, tokens_per_block=tpb,
                    kv_cache_config=kv, max_num_tokens=CHUNK,
                    _num_reserved_dummy_slots=m._get_num_cuda_graph_padding_dummy_slots(
                        None, BATCH),
                    local_num_mamba_layers=mamba_layers,
                    ssm_bytes=params.get_states_bytes_per_layer(one), conv_bytes=0,
                    pp_layers=list(range(table.stack.count)),
                    layer_sizes=[attention] * attention_layers,
                    max_attention_window_vec=[None] * attention_layers,
                    enable_swa_scratch_reuse=False, _generation_kv_capacity_headroom=1,
                    _has_cp_helix=False, _helix_cp_size=1,
                )  # fmt: skip
                tokens = (0, 1, 255, 256, 1000, 8192, 50000)
                quotas = (0, 1 << 30, 4 << 30, 40 << 30)
                rows.append({
                    "family": family, "model": name, "max_batch_size": BATCH,
                    "max_seq_len": seq, "tokens_per_block": tpb,
                    "enable_block_reuse": reuse, "periodic_snapshot_interval": interval,
                    "slope": slope, "intercept": intercept,
                    "quota_for_tokens": {str(t): mgr._get_quota_from_max_tokens(t)
                                         for t in tokens},
                    "tokens_for_quota": {str(q): mgr._get_max_tokens_from_quota(q)
                                         for q in quotas},
                })  # fmt: skip
    return rows, skipped


def run(engine_src: Path) -> dict[str, Any]:
    functions = cut_all(engine_src)
    cpp = cut_all_cpp(engine_src)
    with tempfile.TemporaryDirectory(prefix="kvgen_trtllm_oracle_") as tmp:
        m = build_module(functions, Path(tmp))
        binary = build_harness(cpp, Path(tmp))
        try:
            splits, split_skipped = split_rows(m)
            targets, target_skipped = target_rows(m)
            hybrids, hybrid_skipped = mamba_rows(m)
            data = {
                "engine": "trtllm",
                "revision": source.REVISION,
                "repository": source.REPOSITORY,
                "provenance": {
                    "produced_by": "bench/engines/trtllm_oracle.py: the engine's functions cut "
                    "verbatim and run on CPU with stand-ins (no torch, no C++ bindings)",
                    "functions": [
                        {"module": p, "commit": c, "function": q, "sha256": d}
                        for p, c, q, d in source.FUNCTIONS
                    ],
                },
                "headroom": headroom_rows(m),
                "splits": splits,
                "splits_not_covered": split_skipped,
                "targets": targets,
                "targets_not_covered": target_skipped,
                "conversions": conversion_rows(m),
                "host_tier": host_rows(m),
                "typical_step": typical_step_rows(m),
                "cpp_functions": [
                    {"module": p, "version": v, "function": n, "sha256": d}
                    for p, v, n, d in source.CPP_FUNCTIONS
                ],
                "pool_splits": pool_split_rows(m, binary),
                "emit_pool_splits": emit_split_rows(m, binary),
                "mamba_hybrids": hybrids,
                "mamba_hybrids_not_covered": hybrid_skipped,
            }
        finally:
            sys.path.remove(tmp)
            for name in [n for n in sys.modules if n == "_trtllm_oracle_cut"
                         or n.startswith("tensorrt_llm")]:  # fmt: skip
                del sys.modules[name]
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine-src", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--print-digests", action="store_true")
    args = parser.parse_args()
    if args.print_digests:
        for path, _commit, qualname, _want in source.FUNCTIONS:
            print(digest(cut((args.engine_src / path).read_text(), qualname)), qualname)
        for path, _version, name, _want in source.CPP_FUNCTIONS:
            print(digest(cut_cpp((args.engine_src / path).read_text(), name)), name)
        return
    data = run(args.engine_src)
    args.out.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    print(f"wrote {args.out}: {len(data['headroom'])} headroom rows, {len(data['splits'])} "
          f"splits, {len(data['targets'])} targets")  # fmt: skip


if __name__ == "__main__":
    main()
