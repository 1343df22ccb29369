"""The what-if flags every planning command takes (``plan``, ``compare``; ``diff`` the engine;
SGLang's Mamba radix cache strategy ``plan`` and ``compare``): one definition, so the commands
agree on names, defaults and help."""

from __future__ import annotations

import argparse
from typing import Any

from kvgen._util.units import engine_bytes, positive_int
from kvgen.sizing import engines_registry, facts
from kvgen.sizing.engines_registry import Release, engine_flags, engine_names, release

# What --engine and --emit take: an engine's name or alias, with ==VERSION or without.
ENGINES = engine_names()
DEFAULT_ENGINE = engines_registry.DEFAULT_RELEASE
# The spec's cache dtypes (kvgen._spec.models.DTYPES, a test keeps them equal), from the light facts
# module so that building the parser never imports the spec model.
KV_DTYPES = (*facts.DTYPE_BYTES, *facts.SCALED_LAYOUTS, facts.DS_MLA)
# SGLang's Mamba radix cache strategies, the default first (kvgen.sizing.engines_sglang's
# SGLANG_MAMBA_STRATEGIES and SGLANG_MAMBA_STRATEGY; a test keeps them equal).
MAMBA_STRATEGIES = (
    "extra_buffer", "no_buffer", "extra_buffer_lazy", "extra_buffer_no_overlap", "disabled",
)  # fmt: skip
GPU_MEMORY_HELP = (
    "KV-cache budget per rank (what the engine may give the KV cache on one GPU, not the "
    "GPU's memory): 80GiB, 80GB, 85899345920B; a unit is required"
)


def aliases(flag: str) -> tuple[str, ...]:
    """The engines' own names for kvgen's ``flag`` (``engine_flags``: --max-num-seqs for
    --max-batch-size), which the flag's argument takes as well."""
    return tuple(sorted(theirs for theirs, ours in engine_flags().items() if ours == flag))


def add_gpu_memory(parser: argparse.ArgumentParser, *, required: bool = False,
                   default: object = None) -> None:  # fmt: skip
    """--gpu-memory SIZE (a unit required) and the engines' name for it, vLLM's
    --kv-cache-memory-bytes (bytes, as vLLM reads them): one of them, into ``gpu_memory``."""
    from kvgen._util.units import size_argument

    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument(
        "--gpu-memory", type=size_argument, default=default, metavar="SIZE", help=GPU_MEMORY_HELP
    )
    group.add_argument(
        *aliases("--gpu-memory"), type=engine_bytes, dest="gpu_memory", default=default,
        metavar="BYTES", help="vLLM's name for --gpu-memory: bytes (38654705664, 36G)",
    )  # fmt: skip


def engine_argument(text: str) -> Release:
    """``--engine`` / ``--emit NAME[==VERSION]``: the release it names (argparse's type)."""
    try:
        return release(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class EngineChoices(tuple[str, ...]):
    """The engine names, as completion and help list them; holds every release, which is what
    argparse checks once ``engine_argument`` has read the value."""

    def __contains__(self, value: object) -> bool:
        return isinstance(value, Release) or tuple.__contains__(self, value)


def add_engine(parser: argparse.ArgumentParser, *, many: bool) -> None:
    names = ", ".join(ENGINES)
    choices = EngineChoices(ENGINES)
    if many:
        parser.add_argument(
            "--engine", type=engine_argument, choices=choices, nargs="+", metavar="ENGINE",
            help=f"engines to answer for ({names}, each NAME or NAME==VERSION; default: all)",
        )  # fmt: skip
    else:
        parser.add_argument(
            "--engine", type=engine_argument, choices=choices, metavar="ENGINE",
            help=f"whose terms ({names}, NAME or NAME==VERSION; default: the engine key of "
            f"[tool.kvgen.deployment], else {DEFAULT_ENGINE.engine.name})",
        )  # fmt: skip


def add_knobs(parser: argparse.ArgumentParser) -> None:
    """--tp-size, --pp-size, --dcp-size, --kv-cache-dtype, --block-size, --rope-scaled."""
    parser.add_argument(
        "--tp-size", *aliases("--tp-size"), type=positive_int, default=1, metavar="T"
    )
    parser.add_argument(
        "--pp-size", *aliases("--pp-size"), type=positive_int, default=1, metavar="P",
        help="pipeline stages: each rank holds its layers' caches; the tightest rank is reported",
    )  # fmt: skip
    parser.add_argument(
        "--dcp-size", type=positive_int, default=1, metavar="D",
        help="decode context parallel size: full-attention history sharded over D TP ranks",
    )  # fmt: skip
    parser.add_argument(
        "--kv-cache-dtype", choices=KV_DTYPES, metavar="DTYPE",
        help="what if the attention caches were in DTYPE (refused where a kind cannot take it)",
    )  # fmt: skip
    parser.add_argument(
        "--block-size", type=positive_int, metavar="T",
        help="tokens per page (default: each engine's own; TensorRT-LLM: the spec's)",
    )  # fmt: skip
    parser.add_argument(
        "--rope-scaled", action="store_true",
        help="allow --max-seq-len above the native length (the checkpoint is RoPE-scaled, YaRN)",
    )  # fmt: skip


def add_mamba_strategy(parser: argparse.ArgumentParser) -> None:
    """--mamba-radix-cache-strategy: SGLang's state slots per running request on a hybrid."""
    parser.add_argument(
        "--mamba-radix-cache-strategy", choices=MAMBA_STRATEGIES, default=MAMBA_STRATEGIES[0],
        help="SGLang's Mamba radix cache on a recurrent hybrid: its state slots per running "
        "request (default: extra_buffer, what an H100/H200 launch resolves: 5; "
        "extra_buffer_lazy and extra_buffer_no_overlap (--disable-overlap-schedule): 4; "
        "no_buffer (page size 1): 3; disabled (--disable-radix-cache): 1, one slot per "
        "max_running_requests)",
    )  # fmt: skip


def add_heterogeneous_vocab(parser: argparse.ArgumentParser) -> None:
    """--heterogeneous-vocab: vLLM's speculative_config use_heterogeneous_vocab."""
    parser.add_argument(
        "--heterogeneous-vocab", action="store_true",
        help="vLLM: run a separate draft model (draft_model profile) whose vocab_size differs "
        "from the target's, as use_heterogeneous_vocab does (greedy draft sampling only); "
        "without it vLLM refuses the pair",
    )  # fmt: skip


def engine_choice(args: argparse.Namespace) -> tuple[Release, str]:
    """The engine release of a single-engine command and where it came from."""
    if args.engine:
        return args.engine, "--engine"
    project = getattr(args, "project", None)
    configured = project.deployment.get("engine") if project is not None else None
    if configured:  # checked when the configuration was read
        return release(configured), "engine of [tool.kvgen.deployment]"
    return DEFAULT_ENGINE, "kvgen's default"


def check_length(args: argparse.Namespace, model: str, native: int) -> None:
    """UsageError for a --max-seq-len past ``model``'s native length without --rope-scaled
    (every planning command refuses it in these words)."""
    if args.max_seq_len and args.max_seq_len > native and not getattr(args, "rope_scaled", False):
        from kvgen._util.exits import UsageError

        raise UsageError(
            f"--max-seq-len {args.max_seq_len} is above {model}'s native length {native}: "
            "give --rope-scaled if the checkpoint is RoPE-scaled (YaRN, ...) to reach it"
        )


def overrides(args: argparse.Namespace, model: str, native: int, *, page_in_spec: bool) -> Any:
    """The what-if values of ``args`` for ``model`` (native context ``native``); a
    --max-seq-len above it without --rope-scaled is left for the planner to refuse.
    ``page_in_spec``: the engine's page is a spec value (tokens_per_block), not a keyword."""
    from kvgen._engines.whatif import Overrides

    longer = args.max_seq_len is not None and args.max_seq_len > native and args.rope_scaled
    return Overrides(
        kv_cache_dtype=args.kv_cache_dtype,
        max_seq_len=(model, args.max_seq_len) if longer else None,
        block_size=args.block_size if page_in_spec else None,
    )


def planning_module(args: argparse.Namespace, engine: Release) -> tuple[Any, int]:
    """The generated module, or (a what-if knob given) the spec's tables with the knob applied,
    bound in memory; and the model's native length as the spec gives it."""
    from kvgen._engines.planner import load_sizing, native_max_seq_len
    from kvgen._engines.whatif import spec_path, whatif_module

    sizing = load_sizing(args.family, args.generated)
    native = native_max_seq_len(sizing, args.model)
    check_length(args, args.model, native)
    wanted = overrides(args, args.model, native, page_in_spec=engine.engine.page_in_spec)
    if not wanted:
        return sizing, native
    project = getattr(args, "project", None)
    spec_dir = project.spec_dir if project is not None and project.source is not None else None
    return whatif_module(spec_path(args.family, spec_dir), wanted), native
