"""What a review is made of: the change kinds, the reference deployment, and the result."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvgen._util.diagnostics import Diagnostic, has_errors
from kvgen._util.units import GiB
from kvgen.sizing.engines_registry import (
    DEFAULT_MAX_BATCH_SIZE,
    DEFAULT_MAX_NUM_TOKENS,
    DEFAULT_MAX_SEQ_LEN,
)

__all__ = [
    "ADDED",
    "ANY",
    "API",
    "BLOCKING",
    "CAPACITY_INCREASING",
    "CAPACITY_REDUCING",
    "Capacity",
    "Change",
    "EngineChange",
    "ReferenceDeployment",
    "Review",
    "ReviewError",
]

CAPACITY_REDUCING = "capacity-reducing"
CAPACITY_INCREASING = "capacity-increasing"
API = "api"
ADDED = "added"
BLOCKING = (CAPACITY_REDUCING, API)
ANY = "*"


class ReviewError(Exception):
    """The review cannot run: not a git repository, an unknown ref, no specs (exit 2)."""


@dataclass(frozen=True)
class ReferenceDeployment:
    """The reference deployment every capacity is measured at (flags of ``kvgen diff``)."""

    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    max_num_tokens: int = DEFAULT_MAX_NUM_TOKENS
    max_seq_len: int = DEFAULT_MAX_SEQ_LEN  # capped at each model's native length
    tp_size: int = 1
    gpu_budget: int = 40 * GiB  # split between target and draft pools per docs/cost-model.md §6
    semantics: str = "trtllm-v2"
    # ``--engine``: the engines whose capacity (engine_capacity) is compared too, per engine,
    # in a block of its own; none by default, so the default report is unchanged.
    engines: tuple[str, ...] = ()
    # What-ifs (flags of the same names): pipeline stages (the tightest rank is compared),
    # decode context parallelism, and the KV dtype / page size both sides are rendered with.
    pp_size: int = 1
    dcp_size: int = 1
    kv_cache_dtype: str | None = None
    block_size: int | None = None
    # ``--rope-scaled``: max_seq_len is taken as given past a model's native length (a
    # RoPE-scaled checkpoint) instead of capped at it.
    rope_scaled: bool = False

    def what_ifs(self) -> dict[str, object]:
        """The what-if values given (none at the defaults), for the report and JSON."""
        defaults = {
            "pp_size": 1, "dcp_size": 1, "kv_cache_dtype": None, "block_size": None,
            "rope_scaled": False,
        }  # fmt: skip
        return {k: getattr(self, k) for k, v in defaults.items() if getattr(self, k) != v}

    def kwargs(self, native_max_seq_len: int) -> dict[str, object]:
        return {
            "max_batch_size": self.max_batch_size,
            "max_num_tokens": self.max_num_tokens,
            "max_seq_len": self.max_seq_len
            if self.rope_scaled
            else min(self.max_seq_len, native_max_seq_len),
            "tp_size": self.tp_size,
            "semantics": self.semantics,
        }


@dataclass(frozen=True)
class Capacity:
    """One cache manager at the reference deployment. ``share`` is its part of the GPU budget
    (``None`` when the budget does not cover the intercepts); ``max_tokens`` is ``None`` when
    nothing bounds it (no full-attention layer)."""

    slope: int
    intercept: int
    share: int | None
    max_tokens: int | None


@dataclass(frozen=True)
class Change:
    """One classified difference; ``model``/``profile``/``manager`` are ``*`` above that level."""

    family: str
    model: str
    profile: str
    manager: str
    kind: str
    detail: str
    old: Capacity | None = None
    new: Capacity | None = None
    acknowledged: str | None = None  # the acknowledgement's reason

    @property
    def blocking(self) -> bool:
        return self.kind in BLOCKING and self.acknowledged is None


@dataclass(frozen=True)
class EngineChange:
    """An engine's capacity at the reference deployment, before and after (``kvgen diff
    --engine``): KV tokens and requests at max_seq_len, or why the engine has no answer."""

    family: str
    model: str
    profile: str
    engine: str
    old: tuple[int, float] | str | None  # None: the model or profile did not exist
    new: tuple[int, float] | str | None
    # How the engine serves the model's cache where its "auto" is not the spec's dtype (vLLM
    # serves a float32 checkpoint in bf16), as its capacity is answered; "" the spec's.
    served: str = ""


@dataclass
class Review:
    ref: str
    deployment: ReferenceDeployment
    families: dict[str, str] = field(default_factory=dict)  # family -> status
    changes: list[Change] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    spec_paths: dict[str, str] = field(default_factory=dict)  # family -> new spec path
    # family -> {"family" | "model:<name>" | "profile:<name>": line in the new spec}
    spec_lines: dict[str, dict[str, int]] = field(default_factory=dict)
    engine_changes: list[EngineChange] = field(default_factory=list)  # informational

    @property
    def blocking(self) -> list[Change]:
        return [change for change in self.changes if change.blocking]

    @property
    def failed(self) -> bool:
        return has_errors(self.diagnostics) or bool(self.blocking)
