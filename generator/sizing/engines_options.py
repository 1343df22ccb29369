"""The check of one ``engine_capacity`` call's arguments, read by its engine or not (docs/api.md,
"The engine policies"); the engine is resolved before (``kvgen.sizing.engines_registry.release``),
the model and profile are each engine's hook's own."""

from .engines_registry import DEFAULT_MAX_BATCH_SIZE, MODEL_DTYPES
from .engines_rows import SSM_DTYPES
from .engines_sglang import SGLANG_MAMBA_STRATEGIES, _sglang_ratios
from .engines_vllm import GDN_PREFILL_BACKENDS, MAMBA_CACHE_MODES
from .sizing_options import _flag, _integer, _name

_BATCH = DEFAULT_MAX_BATCH_SIZE  # the default count, compared by identity (as _ONE, _ZERO)
_ENGINE_COUNTS = ("budget_bytes", "max_seq_len", "max_num_tokens", "tp_size", "max_batch_size")
_ENGINE_MODES = (
    ("mamba_cache_mode", MAMBA_CACHE_MODES), ("gdn_prefill_backend", GDN_PREFILL_BACKENDS),
    ("mamba_radix_cache_strategy", SGLANG_MAMBA_STRATEGIES),
)  # fmt: skip


def _engine_arguments(call: dict[str, object]) -> None:
    """ValueError naming an argument of ``call`` (``engine_capacity``'s ``locals()``) that no
    engine takes: a count no positive 64-bit int (never a bool or a float), ``pp_rank`` outside
    [0, ``pp_size``), a mode or flag outside its values, a ratio out of range."""
    for name in _ENGINE_COUNTS:
        _integer(name, call[name], 1)
    if call["block_size"] is not None:
        _integer("block_size", call["block_size"], 1)
    stages, rank = _integer("pp_size", call["pp_size"], 1), _integer("pp_rank", call["pp_rank"], 0)
    if rank >= stages:
        raise ValueError(f"pp_rank must be in [0, {stages}), got {rank}")
    for name, names in _ENGINE_MODES:
        _name(name, call[name], names)
    if call["ssm_dtype"] is not None:
        _name("ssm_dtype", call["ssm_dtype"], SSM_DTYPES)
    if call["dtype"] is not None:
        _name("dtype", call["dtype"], tuple(MODEL_DTYPES))
    _sglang_ratios(call["swa_full_tokens_ratio"], call["mamba_full_memory_ratio"])
    _flag("async_scheduling", call["async_scheduling"])
    _flag("heterogeneous_vocab", call["heterogeneous_vocab"])
