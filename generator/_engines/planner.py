"""Capacity planning on a generated sizing module (``kvgen plan``).

Everything here asks the generated module ``generated/<family>/sizing.py`` (stdlib only), so the
plan is exactly what an inference stack that imports it would compute::

    sizing = load_sizing("llama3")
    plan = make_plan(sizing, "llama3_1_8b", gpu_memory=16 * GiB, batch_sizes=[8])
    plan.batches[0].managers[0].max_tokens    # 131072

``engine=release("vllm")`` (a ``kvgen.sizing.engines_registry`` value), or SGLang's, answers in that
engine's terms instead, from the module's own ``engine_capacity`` (kvgen._engines.engine_plan); a
deployment the engine refuses is a ``PlanError`` with the engine's reason. ``pp_size`` plans
every pipeline rank and reports the tightest.

Per max_batch_size B it reports the budget split (docs/cost-model.md §6, ``split_budget``), each
manager's max tokens on its share (``max_tokens_from_quota``), the largest number of requests
of one sequence length that fit together (at TensorRT-LLM 38198e34 with a sliding draft, with
the smaller counts that do not: ``request_ranges``), and the largest max_seq_len that B
requests fit at (at 38198e34 with the shorter ones that do not: ``_Sizing.fit_ranges``).
"Fit" means every cache manager holds ``requests * length`` tokens of history on its share;
both searches re-evaluate the costs at each candidate because the intercept grows with the
batch and the windows depend on max_seq_len.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kvgen._engines.plans import (
    BatchPlan,
    ManagerPlan,
    Plan,
    PlanError,
    fit_ranges,
    largest,
    misfits,
    request_ranges,
)
from kvgen._generate.config import OUT_DIR as _OUT
from kvgen._generate.vendored import import_generated, interface_refusal
from kvgen._util.suggest import did_you_mean
from kvgen.sizing.engines_registry import (
    DEFAULT_MAX_NUM_TOKENS,
    DEFAULT_MAX_SEQ_LEN,
    DEFAULT_RELEASE,
    Release,
)
from kvgen.sizing.engines_sglang import SGLANG_MAMBA_STRATEGY

if TYPE_CHECKING:
    from kvgen.sizing._trtllm_budget import ManagerCost

__all__ = [
    "BatchPlan",
    "ManagerPlan",
    "Plan",
    "PlanError",
    "capacity_curve",
    "load_sizing",
    "make_plan",
    "native_max_seq_len",
]

SEARCH_LIMIT = 1 << 24  # requests; a cost that never grows with them is reported at this cap
_FAMILY = re.compile(r"^[a-z][a-z0-9_]*$")


OUT_DIR = Path(_OUT)  # the config's default (kvgen._generate.project's, without the spec loader)


def load_sizing(
    family: str, generated_dir: Path = OUT_DIR, *, quiet: bool = False
) -> types.ModuleType:
    """``generated/<family>/sizing.py`` of this project, else of the family kvgen ships
    (``kvgen._generate.shipped.locate``: the project's own family of that name wins; ``quiet``: the
    choice is not said on stderr)."""
    from kvgen._generate.shipped import known_families, locate
    from kvgen._util.files import MAX_GENERATED_BYTES, Refused, exists, read_bytes

    generated_dir = locate(family, generated_dir, quiet=quiet).generated
    path = generated_dir / family / "sizing.py"
    if _FAMILY.match(family) and exists(path):
        try:  # the file-access rules first: no link, no FIFO or device, bounded
            read_bytes(path, limit=MAX_GENERATED_BYTES, root=generated_dir)
        except Refused as exc:
            raise PlanError(exc.diagnostic.render()) from None
    if not _FAMILY.match(family) or not path.is_file():
        found = sorted(p.parent.name for p in generated_dir.glob("*/sizing.py"))
        known = f" (generated families: {', '.join(found)})" if found else ""
        known += did_you_mean(family, known_families(generated_dir))
        raise PlanError(
            f"{path.as_posix()} not found{known}: run `kvgen generate` to create it, or name "
            "a family kvgen ships (`kvgen models` lists them)"
        )
    try:
        module = import_generated(path, "kvgen_plan_generated")
    except (Exception, SystemExit) as exc:  # SystemExit too: exiting is not answering
        raise PlanError(f"{path.as_posix()} failed to load: {_describe(exc)}") from exc
    missing = [name for name in _API if not hasattr(module, name)]
    if missing:
        raise PlanError(
            f"{path.as_posix()} is not a kvgen sizing module (no {', '.join(missing)}): "
            "run `kvgen generate`"
        )
    refusal = interface_refusal(module, path)
    if refusal is not None:
        raise PlanError(refusal)
    return module


_API = ("FAMILY", "MODELS", "MAX_SEQ_LEN", "SPECULATIVE", "cache_costs", "split_budget")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r})"
    return f"{type(exc).__name__}: {exc}"


def native_max_seq_len(sizing: types.ModuleType, model: str) -> int:
    from kvgen._generate.shipped import model_hint

    if model not in sizing.MODELS:
        hint = model_hint(model, sizing.MODELS)  # a Hugging Face name too
        raise PlanError(f"model must be one of {', '.join(sizing.MODELS)}; got {model!r}{hint}")
    return int(sizing.MAX_SEQ_LEN[model])


class _Sizing:
    """The generated module bound to one model, profile and deployment."""

    def __init__(
        self,
        sizing: types.ModuleType,
        model: str,
        speculative: str,
        max_num_tokens: int,
        tp_size: int,
        semantics: str,
        dcp_size: int = 1,
        pp_size: int = 1,
        engine: Release = DEFAULT_RELEASE,
    ) -> None:
        self.sizing = sizing
        self.model = model
        # A TensorRT-LLM release that splits per request (38198e34): each manager's share and
        # tokens are what that release builds with the settings --emit writes (trtllm_emit),
        # where its split is modelled (one stage, kvgen's semantics, no DCP).
        self.split = (
            engine if engine.per_request_split and pp_size == 1 and dcp_size == 1
            and semantics == "trtllm-v2" else None
        )  # fmt: skip
        self.common: dict[str, str | int] = {
            "speculative": speculative,
            "max_num_tokens": max_num_tokens,
            "tp_size": tp_size,
            "semantics": semantics,
        }
        if dcp_size != 1:  # modules generated before dcp_size take no such keyword
            self.common["dcp_size"] = dcp_size
        # Each pipeline stage holds its own layers' caches in its own budget (§1): every rank
        # must fit, so a rank's answer is the least of them.
        self.ranks: list[dict[str, int]] = [
            {} if pp_size == 1 else {"pp_size": pp_size, "pp_rank": r} for r in range(pp_size)
        ]

    def rank_managers(
        self, budget: int, batch: int, max_seq_len: int, rank: int
    ) -> list[ManagerPlan]:
        kwargs = {**self.common, **self.ranks[rank], "max_batch_size": batch}
        kwargs["max_seq_len"] = max_seq_len
        costs = self.sizing.cache_costs(self.model, **kwargs)
        split = self.split_tokens(budget, kwargs)
        if split is not None:
            shares, tokens = split
        else:
            shares = self.sizing.split_budget(self.model, budget, **kwargs)
            tokens = self.sizing.max_tokens_from_quota(self.model, shares, **kwargs)
            tokens.update(self.engine_tokens(shares, kwargs))
        return [
            ManagerPlan(name, int(cost[0]), int(cost[1]), shares[name], tokens[name])
            for name, cost in costs.items()
        ]

    def split_tokens(
        self, budget: int, kwargs: dict[str, str | int]
    ) -> tuple[dict[str, int], dict[str, int | None]] | None:
        """At a release that splits per request: each manager's quota and the tokens of the
        pools that release builds from ``budget`` with the settings ``--emit`` writes
        (``kvgen.sizing._trtllm_pools.trtllm_emit``, what ``engine_capacity`` answers); None where
        its split is not modelled (the early-2026 answer stands, as engine_capacity's does)."""
        if self.split is None:
            return None
        from kvgen.sizing._trtllm_pools import trtllm_emit

        serving = {k: v for k, v in kwargs.items() if k not in ("semantics", "max_batch_size")}
        try:
            emit = trtllm_emit(self.sizing, self.model, budget, revision=self.split.version,
                               max_batch_size=int(kwargs["max_batch_size"]), **serving)  # fmt: skip
        except ValueError:  # not modelled at that release
            return None
        return dict(emit.quotas), dict(emit.held or {})

    def engine_tokens(
        self, shares: dict[str, int], kwargs: dict[str, str | int]
    ) -> dict[str, int | None]:
        """Under "trtllm-v2", the tokens the pools TensorRT-LLM V2's own split builds from
        each share in whole grains hold (``engine_plan_for_quota``, what ``engine_capacity``
        answers); none where that split is not modelled (kvgen's estimate stands)."""
        if self.common["semantics"] != "trtllm-v2" or "dcp_size" in self.common:
            return {}
        from kvgen.sizing._trtllm_pools import engine_plan_for_quota
        from kvgen.sizing.trtllm_split import whole_grains

        serving = {k: v for k, v in kwargs.items() if k != "semantics"}  # a rank's own layers
        try:
            quotas = {name: whole_grains(share) for name, share in shares.items()}
            # serving: this call's keywords, each with its own type (str or int by name)
            split = engine_plan_for_quota(self.sizing, self.model, quotas, **serving)  # type: ignore[arg-type]
        except ValueError:  # not modelled
            return {}
        return {name: tokens for name, (tokens, _pools) in split.items()}

    def managers(self, budget: int, batch: int, max_seq_len: int) -> list[ManagerPlan]:
        """Each manager's cost, share and max tokens on the tightest pipeline rank;
        ``ValueError`` when nothing fits."""
        rank = self.binding_rank(budget, batch, max_seq_len)
        return self.rank_managers(budget, batch, max_seq_len, rank)

    def binding_rank(self, budget: int, batch: int, max_seq_len: int) -> int:
        """The pipeline rank whose target pool holds the fewest tokens (0 without pp)."""
        if len(self.ranks) == 1:
            return 0
        least: tuple[float, int] | None = None
        for rank in range(len(self.ranks)):
            try:
                managers = self.rank_managers(budget, batch, max_seq_len, rank)
            except ValueError:
                return rank
            bounded = [m.max_tokens for m in managers if m.max_tokens is not None]
            tokens = min(bounded, default=float("inf"))
            if least is None or tokens < least[0]:
                least = (tokens, rank)
        return least[1] if least else 0

    def probe(
        self, budget: int, batch: int, max_seq_len: int, length: int | None = None
    ) -> tuple[bool, int | None]:
        """``batch`` requests of ``length`` tokens (default ``max_seq_len``) at a release that
        splits per request (``fit_ranges``' and ``request_ranges``' probe): whether the budget
        covers the intercepts and every manager but the draft holds them, and the draft's
        tokens (None: no draft, or unbounded)."""
        try:
            managers = self.managers(budget, batch, max_seq_len)
        except ValueError:
            return False, None
        need = batch * (max_seq_len if length is None else length)
        settled = all(
            m.max_tokens is None or m.max_tokens >= need for m in managers if m.name != "draft"
        )
        draft = next((m.max_tokens for m in managers if m.name == "draft"), None)
        return settled, draft

    def fit_ranges(self, budget: int, batch: int, limit: int) -> list[tuple[int, int]]:
        """The max_seq_len in [1, limit] at which ``batch`` requests of that length fit, at a
        release that splits per request (38198e34). There the fit is not monotone in S: a
        window of at least S is full attention (the layout changes at each window + 1), and
        the split gives the draft a share that grows with S (its per-request spend at full
        context, capped at ``batch`` mirrors) and the target what is left, so a longer S can
        fit where a shorter one does not (gemma3_27b + draft_1b at 80 GiB, 64 requests: 512
        and 1,025 to 4,467 fit, 513 to 1,024 do not). ``kvgen._engines.plans.fit_ranges``
        finds every range exactly from that structure: the target's tokens never grow with S
        within a regime (its share only shrinks as the draft's grows) and the draft's never
        shrink, and each manager's cost changes only where ``S + headroom`` crosses a page
        (``manager_costs``' full length). tests/cli/test_plan_fit_search.py checks both
        directions over the shipped gemma3 pairs and the answers against every S evaluated.
        Cheaper than evaluating every page (2,048 of them to
        131,072 tokens): a bisection per regime and one evaluation per stretch that fits or
        page that does not, about as many as the bisection it replaces."""
        tables = self.sizing.TABLES
        entry = tables.models[self.model]
        speculative = str(self.common["speculative"])
        profile = tables.profiles[speculative]
        stacks = [entry.layers, entry.extra_layers.get(speculative), profile.draft]
        regimes = {
            length + 1
            for stack in stacks
            if stack is not None
            for kind in stack.kinds.values()
            for length in (kind.window, kind.chunk)
            if length
        }
        return fit_ranges(
            lambda s: self.probe(budget, batch, s), batch, limit, sorted(regimes),
            self.sizing.TOKENS_PER_BLOCK, self.sizing.headroom(speculative),
        )  # fmt: skip

    def request_ranges(
        self, budget: int, max_seq_len: int, length: int, limit: int
    ) -> list[tuple[int, int]]:
        """The request counts B in [1, limit] at which B requests of ``length`` tokens fit at
        ``max_seq_len``, at a release that splits per request with a draft that slides there
        (``kvgen._engines.plans.request_ranges``: the target's conditions bisected, the
        draft's tokens evaluated at every B below their last, by :meth:`draft_tokens`)."""
        return request_ranges(
            lambda n: self.probe(budget, n, max_seq_len, length), length, limit,
            self.draft_tokens(budget, max_seq_len),
        )  # fmt: skip

    def draft_tokens(self, budget: int, max_seq_len: int) -> Callable[[int], int | None]:
        """The draft's tokens at B requests (``probe``'s second value) where the budget
        covers the intercepts: what ``trtllm_emit`` builds for the draft alone, without the
        target's split and its own checks. Per B only what depends on B is computed: the
        intercepts (``manager_terms``), the draft's share of ``trtllm_emit``'s quota
        (``draft_budget_shares``, as ``split_budget`` calls it) and its pools
        (``engine_plan_for_split`` on that share); the quota and each manager's per-request
        spend and quota come from the first B asked (``manager_costs`` reads B only in the
        intercepts). tests/cli/test_plan_request_search.py holds it equal to ``probe`` at
        every B up to the target's last, over the shipped gemma3 pairs."""
        from kvgen.sizing._trtllm_budget import draft_budget_shares, manager_costs
        from kvgen.sizing._trtllm_pools import engine_plan_for_split, trtllm_emit

        assert self.split is not None and len(self.ranks) == 1 and "dcp_size" not in self.common
        version = self.split.version
        common = self.common
        speculative, chunk, tp = (
            str(common["speculative"]),
            int(common["max_num_tokens"]),
            int(common["tp_size"]),
        )
        serving = {"speculative": speculative, "max_num_tokens": chunk, "tp_size": tp,
                   "max_seq_len": max_seq_len}  # fmt: skip
        first: list[tuple[int, dict[str, ManagerCost]]] = []  # quota, costs at the first B

        def tokens(batch: int) -> int | None:
            if not first:
                emit = trtllm_emit(self.sizing, self.model, budget, max_batch_size=batch,
                                   revision=version, **serving)  # fmt: skip
                first.append((emit.quota, manager_costs(
                    self.sizing, self.model, max_batch_size=batch, max_num_tokens=chunk,
                    max_seq_len=max_seq_len, speculative=speculative, tp_size=tp,
                    revision=version,
                )))  # fmt: skip
            quota, costs = first[0]
            at = {t.manager: t.intercept for t in self.sizing.manager_terms(
                self.model, max_batch_size=batch, **serving
            )}  # fmt: skip
            target = costs["target"]._replace(intercept=at["target"])
            draft = costs["draft"]._replace(intercept=at["draft"])
            share = draft_budget_shares(quota, target, draft, batch)["draft"]
            pools = engine_plan_for_split(
                self.sizing, self.model, {"draft": share}, max_batch_size=batch,
                max_num_tokens=chunk, max_seq_len=max_seq_len, speculative=speculative,
                tp_size=tp,
            )  # fmt: skip
            return pools["draft"][0]

        return tokens

    def draft_slides(self, max_seq_len: int) -> bool:
        """Whether a separate draft has a window or chunk shorter than ``max_seq_len`` (a
        window of at least S is full attention). Where it has none, its pools are one full
        pool, and at a release that splits per request the number of requests that fit is
        monotone: the draft's share is B mirrors of S tokens while the cap binds (B requests
        fit it) and then the per-request-weighted rest of the budget, which never grows with
        B while the need does, so the counts that fit are a prefix and the bisection finds
        its end (tests/cli/test_plan_request_search.py: brute force over B for each shipped
        draft). Where it slides, its own pool split decides, and follows no order in B."""
        profile = self.sizing.TABLES.profiles[str(self.common["speculative"])]
        if profile.draft is None:
            return False
        return any(
            0 < length < max_seq_len
            for kind in profile.draft.kinds.values()
            for length in (kind.window, kind.chunk)
            if length
        )

    def misfit_reason(
        self, budget: int, batch: int, max_seq_len: int, length: int | None = None
    ) -> str:
        """Why ``batch`` requests of ``max_seq_len`` tokens do not fit: the manager whose
        pools hold fewer tokens, or the refusal of the split. Given ``length``, why ``batch``
        requests of ``length`` tokens do not fit at ``max_seq_len`` (worded at the count)."""
        try:
            managers = self.managers(budget, batch, max_seq_len)
        except ValueError as exc:
            return str(exc)
        tokens = max_seq_len if length is None else length
        at = max_seq_len if length is None else batch
        need = batch * tokens
        short = next(
            (m for m in managers if m.max_tokens is not None and m.max_tokens < need), None
        )
        if short is None:
            return f"at {at} the pools do not hold {batch} x {tokens} tokens"
        return (
            f"at {at} the {short.name} pools hold {short.max_tokens} tokens, fewer "
            f"than {batch} x {tokens}"
        )

    def fits(self, budget: int, requests: int, length: int, max_seq_len: int) -> bool:
        if hasattr(self.sizing, "quota_for_requests") and self.split is None:
            # The least quota with which ``requests`` requests each reach ``length`` (§4),
            # on every pipeline rank.
            for rank in self.ranks:
                need = self.sizing.quota_for_requests(
                    self.model, requests=requests, seq_len=length, **self.common, **rank
                )
                if sum(need.values()) > budget:
                    return False
            return True
        try:
            managers = self.managers(budget, requests, max_seq_len)
        except ValueError:
            return False
        need = requests * length
        return all(m.max_tokens is None or m.max_tokens >= need for m in managers)


@dataclass
class RequestsNeed:
    """The memory ``requests`` concurrent requests of ``seq_len`` tokens need (§4)."""

    family: str
    model: str
    speculative: str
    semantics: str
    requests: int
    seq_len: int
    max_num_tokens: int
    tp_size: int
    managers: dict[str, int] = field(default_factory=dict)
    dcp_size: int = 1

    @property
    def total(self) -> int:
        return sum(self.managers.values())


def memory_for_requests(
    sizing: types.ModuleType,
    model: str,
    *,
    requests: int,
    seq_len: int | None,
    speculative: str = "none",
    max_num_tokens: int = DEFAULT_MAX_NUM_TOKENS,
    tp_size: int = 1,
    semantics: str = "trtllm-v2",
    dcp_size: int = 1,
) -> RequestsNeed:
    """``quota_for_requests`` of the generated module: bytes per manager."""
    if not hasattr(sizing, "quota_for_requests"):
        raise PlanError(f"{sizing.FAMILY}/sizing.py has no quota_for_requests: run kvgen generate")
    native = native_max_seq_len(sizing, model)
    seq_len = seq_len or min(native, DEFAULT_MAX_SEQ_LEN)
    sharded = {"dcp_size": dcp_size} if dcp_size != 1 else {}
    managers = sizing.quota_for_requests(
        model, requests=requests, seq_len=seq_len, speculative=speculative,
        max_num_tokens=max_num_tokens, tp_size=tp_size, semantics=semantics, **sharded,
    )  # fmt: skip
    return RequestsNeed(
        sizing.FAMILY, model, speculative, semantics, requests, seq_len, max_num_tokens,
        tp_size, dict(managers), dcp_size,
    )  # fmt: skip


def profiles_for(sizing: types.ModuleType, model: str) -> tuple[str, ...]:
    """The profiles of the generated module that apply to ``model`` ("none" first)."""
    profiles = getattr(sizing, "PROFILES", None)
    return tuple(profiles[model]) if profiles is not None else tuple(sizing.SPECULATIVE)


def make_plan(
    sizing: types.ModuleType,
    model: str,
    *,
    gpu_memory: int,
    batch_sizes: list[int],
    speculative: str = "none",
    max_num_tokens: int = DEFAULT_MAX_NUM_TOKENS,
    max_seq_len: int | None = None,
    tp_size: int = 1,
    semantics: str = "trtllm-v2",
    seq_len: int | None = None,
    dcp_size: int = 1,
    engine: Release = DEFAULT_RELEASE,
    pp_size: int = 1,
    block_size: int | None = None,
    rope_scaled: bool = False,
    native: int | None = None,
    kv_cache_dtype: str | None = None,
    mamba_radix_cache_strategy: str = SGLANG_MAMBA_STRATEGY,
    heterogeneous_vocab: bool = False,
) -> Plan:
    """The plan in ``engine``'s terms. ``native`` is the spec's own context length where
    ``sizing`` was bound with a longer one (``rope_scaled``: kvgen._engines.whatif); ``block_size``
    and ``kv_cache_dtype`` are recorded as asked (the module is bound to them already).
    ``mamba_radix_cache_strategy``: SGLang's on a recurrent hybrid (its state slots per running
    request, ``engine_capacity``'s keyword); read by no other engine. ``heterogeneous_vocab``:
    vLLM's use_heterogeneous_vocab (``engine_capacity``'s keyword), for engine vllm only."""
    if heterogeneous_vocab and "heterogeneous_vocab" not in engine.engine.reads:
        raise PlanError(
            "--heterogeneous-vocab is vLLM's use_heterogeneous_vocab: plan it with --engine vllm "
            f"({engine.engine.label} sizes a separate draft model whatever its vocabulary)"
        )
    native = native or native_max_seq_len(sizing, model)
    limit = native_max_seq_len(sizing, model)  # what the bound module sizes for
    if speculative not in sizing.SPECULATIVE:
        hint = did_you_mean(speculative, sizing.SPECULATIVE)
        raise PlanError(
            f"speculative must be one of {', '.join(sizing.SPECULATIVE)}; got {speculative!r}{hint}"
        )
    applicable = profiles_for(sizing, model)
    if speculative not in applicable:
        raise PlanError(
            f"speculative {speculative!r} does not apply to model {model!r}; "
            f"profiles for {model}: {', '.join(applicable)}"
        )
    max_seq_len = max_seq_len or min(native, DEFAULT_MAX_SEQ_LEN)
    if max_seq_len > limit:
        raise PlanError(
            f"max_seq_len must be <= {native} (native length of {model}); a checkpoint that "
            "reaches further by RoPE scaling (YaRN, ...) is planned with --rope-scaled"
        )
    seq_len = seq_len or max_seq_len
    if seq_len > max_seq_len:
        raise PlanError(f"seq_len {seq_len} is longer than max_seq_len {max_seq_len}")
    plan = Plan(
        sizing.FAMILY, model, speculative, semantics, gpu_memory, max_num_tokens, max_seq_len,
        native, tp_size, seq_len, dcp_size=dcp_size, engine=engine, pp_size=pp_size,
        block_size=block_size, kv_cache_dtype=kv_cache_dtype,
        rope_scaled=rope_scaled and max_seq_len > native,
        heterogeneous_vocab=heterogeneous_vocab,
    )  # fmt: skip
    if not engine.engine.cost_functions:
        from kvgen._engines.engine_plan import engine_plan

        return engine_plan(sizing, plan, batch_sizes, limit, mamba_radix_cache_strategy)
    from kvgen._engines.engine_plan import trtllm_refusal

    trtllm_refusal(sizing, plan)
    bound = _Sizing(
        sizing, model, speculative, max_num_tokens, tp_size, semantics, dcp_size, pp_size, engine
    )
    if bound.split is None or not bound.draft_slides(max_seq_len):
        plan.max_requests = largest(  # monotone in the count
            lambda n: bound.fits(gpu_memory, n, seq_len, max_seq_len), SEARCH_LIMIT
        )
    else:  # a sliding draft at a release that splits per request: not monotone
        found = bound.request_ranges(gpu_memory, max_seq_len, seq_len, SEARCH_LIMIT)
        plan.max_requests = found[-1][1] if found else 0
        plan.request_misfits = misfits(found)
        if plan.request_misfits:
            plan.request_misfit_reason = bound.misfit_reason(
                gpu_memory, plan.request_misfits[0][0], max_seq_len, seq_len
            )
    for batch in batch_sizes:
        entry = BatchPlan(batch)
        try:
            entry.managers = bound.managers(gpu_memory, batch, max_seq_len)
        except ValueError as exc:
            entry.error = str(exc)
        for m in entry.managers:
            if m.max_tokens == 0:
                entry.error = f"the {m.name} share {m.share} B does not cover its fixed cost"

        def fits(s: int, batch: int = batch) -> bool:
            return bound.fits(gpu_memory, batch, s, s)

        if bound.split is None:  # kvgen's own split: monotone in S
            entry.max_seq_len_fit = largest(fits, limit)
        else:
            ranges = bound.fit_ranges(gpu_memory, batch, limit)
            entry.max_seq_len_fit = ranges[-1][1] if ranges else 0
            entry.misfits = misfits(ranges)
            if entry.misfits:
                entry.misfit_reason = bound.misfit_reason(gpu_memory, batch, entry.misfits[0][0])
        plan.batches.append(entry)
    if pp_size > 1 and batch_sizes:
        plan.pp_rank = bound.binding_rank(gpu_memory, batch_sizes[0], max_seq_len)
    plan.engine_version = engine.named
    return plan


def capacity_curve(
    sizing: types.ModuleType,
    model: str,
    budgets: list[int],
    *,
    speculative: str,
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    tp_size: int = 1,
    semantics: str = "trtllm-v2",
    dcp_size: int = 1,
    engine: Release = DEFAULT_RELEASE,
) -> list[int | None]:
    """Target max tokens at each GPU budget (0 where the intercepts do not fit) at the
    TensorRT-LLM release ``engine``."""
    bound = _Sizing(sizing, model, speculative, max_num_tokens, tp_size, semantics, dcp_size,
                    engine=engine)  # fmt: skip
    out: list[int | None] = []
    for budget in budgets:
        try:
            managers = bound.managers(budget, max_batch_size, max_seq_len)
        except ValueError:
            out.append(0)
            continue
        out.append(next(m.max_tokens for m in managers if m.name == "target"))
    return out
