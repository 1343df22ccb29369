"""Breaking-change review: the capacity of every spec at a git ref against the working tree.

``kvgen diff`` is the command; this module is its logic, free of any output format::

    review = review_specs("HEAD", ["schema/families"], Deployment())
    review.blocking        # capacity-reducing or API changes nobody acknowledged

Each side is evaluated through a sizing module. The OLD side uses the module committed at the
ref (``generated/<family>/sizing.py``, stdlib only, exec'd into a fresh namespace) so that a
generator change shows up as a capacity change too; when the ref has no such module, or it was
generated from another spec, the old spec is rendered with the current generator. The NEW side
always renders the working-tree spec with the current generator.

Every (family, model, profile, manager) is evaluated at one reference deployment
(``Deployment``) and classified:

- ``capacity-reducing``: max tokens down, or intercept or slope up (blocks unless acknowledged);
- ``capacity-increasing``: any other change of slope, intercept or max tokens;
- ``api``: a family, model or profile renamed or removed, or a cache manager appearing or
  disappearing (blocks unless acknowledged);
- ``added``: a new family, model or profile (never blocks).

A family whose spec or module text changed without any of the above is ``cosmetic``.
An acknowledgement lives in the NEW spec: ``acknowledge: [{change, model, profile, reason}]``;
``model`` and ``profile`` match by name or ``*``. A removed family has no new spec, so its
removal cannot be acknowledged; a family renamed in the same file is acknowledged by the new one.
"""

from __future__ import annotations

import hashlib
import logging
import subprocess
import types
from dataclasses import dataclass, field, replace
from pathlib import Path

from generator.diagnostics import Diagnostic, has_errors
from generator.loader import load_bytes
from generator.project import OUT_DIR, SPEC_DIR, SPEC_SUFFIXES
from generator.spec import Acknowledgement, Family
from generator.units import GiB

__all__ = [
    "ADDED",
    "API",
    "BLOCKING",
    "CAPACITY_INCREASING",
    "CAPACITY_REDUCING",
    "Capacity",
    "Change",
    "Deployment",
    "Review",
    "ReviewError",
    "default_ref",
    "review_specs",
]

log = logging.getLogger("kvgen")

CAPACITY_REDUCING = "capacity-reducing"
CAPACITY_INCREASING = "capacity-increasing"
API = "api"
ADDED = "added"
BLOCKING = (CAPACITY_REDUCING, API)
ANY = "*"


class ReviewError(Exception):
    """The review cannot run: not a git repository, an unknown ref, no specs (exit 2)."""


def default_ref(environ: dict[str, str]) -> str:
    """``origin/$GITHUB_BASE_REF`` in a GitHub pull-request job, ``HEAD`` anywhere else."""
    base = environ.get("GITHUB_BASE_REF", "").strip()
    return f"origin/{base}" if base else "HEAD"


@dataclass(frozen=True)
class Deployment:
    """The reference deployment every capacity is measured at (flags of ``kvgen diff``)."""

    max_batch_size: int = 8
    max_num_tokens: int = 8192
    max_seq_len: int = 32768  # capped at each model's native length
    tp_size: int = 1
    gpu_budget: int = 40 * GiB  # split between target and draft pools per SIZING.md §6
    semantics: str = "trtllm-v2"

    def kwargs(self, native_max_seq_len: int) -> dict[str, object]:
        return {
            "max_batch_size": self.max_batch_size,
            "max_num_tokens": self.max_num_tokens,
            "max_seq_len": min(self.max_seq_len, native_max_seq_len),
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


@dataclass
class Review:
    ref: str
    deployment: Deployment
    families: dict[str, str] = field(default_factory=dict)  # family -> status
    changes: list[Change] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    spec_paths: dict[str, str] = field(default_factory=dict)  # family -> new spec path

    @property
    def blocking(self) -> list[Change]:
        return [change for change in self.changes if change.blocking]

    @property
    def failed(self) -> bool:
        return has_errors(self.diagnostics) or bool(self.blocking)


# --- git -----------------------------------------------------------------------------------


class GitTree:
    """Read-only access to the files of one commit, with paths relative to ``cwd``."""

    def __init__(self, ref: str, cwd: Path):
        self.cwd = cwd.resolve()
        top = self._git("rev-parse", "--show-toplevel")
        if top.returncode:
            raise ReviewError(f"{self.cwd} is not in a git repository; kvgen diff compares a ref")
        self.root = Path(top.stdout.decode().strip()).resolve()
        bad = not ref or ref.startswith("-")
        commit = None if bad else self._git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        if commit is None or commit.returncode:
            hint = " (in CI, fetch it: actions/checkout with fetch-depth: 0)" if "/" in ref else ""
            raise ReviewError(f"unknown git ref {ref!r}{hint}")
        self.ref = ref
        self.commit = commit.stdout.decode().strip()

    def _git(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        cwd = getattr(self, "root", self.cwd)
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)

    def _rel(self, path: Path) -> str | None:
        try:
            return (self.cwd / path).resolve().relative_to(self.root).as_posix()
        except ValueError:
            return None

    def kind(self, path: Path) -> str | None:
        """``"blob"``, ``"tree"`` or ``None`` for ``path`` at the commit."""
        rel = self._rel(path)
        if rel is None:
            return None
        result = self._git("cat-file", "-t", f"{self.commit}:{rel}")
        return result.stdout.decode().strip() if result.returncode == 0 else None

    def read(self, path: Path) -> bytes | None:
        rel = self._rel(path)
        if rel is None:
            return None
        result = self._git("cat-file", "blob", f"{self.commit}:{rel}")
        return result.stdout if result.returncode == 0 else None

    def specs_in(self, directory: Path) -> list[Path]:
        """Spec files directly inside ``directory`` at the commit (like ``spec_paths``)."""
        rel = self._rel(directory)
        if rel is None:
            return []
        listing = self._git("ls-tree", "--name-only", self.commit, "--", f"{rel}/")
        names = listing.stdout.decode().splitlines() if listing.returncode == 0 else []
        return sorted(
            directory / Path(name).name for name in names if Path(name).suffix in SPEC_SUFFIXES
        )


# --- loading both sides ----------------------------------------------------------------------


@dataclass
class Side:
    """One family on one side: its spec and the sizing module that answers for it."""

    path: str
    raw: bytes
    family: Family
    module: types.ModuleType | None = None
    module_text: str = ""
    origin: str = ""


def _candidate_paths(tree: GitTree, args: list[str]) -> list[Path]:
    found: dict[Path, None] = {}
    for arg in [Path(a) for a in args or [SPEC_DIR]]:
        if arg.is_dir() or tree.kind(arg) == "tree":
            now = (
                [p for p in sorted(arg.iterdir()) if p.suffix in SPEC_SUFFIXES]
                if arg.is_dir()
                else []
            )
            found.update(dict.fromkeys([*now, *tree.specs_in(arg)]))
        elif arg.is_file() or tree.kind(arg) == "blob":
            found[arg] = None
        else:
            raise ReviewError(
                f"{arg.as_posix()}: no such spec in the working tree or at {tree.ref}"
            )
    return sorted(found)


def _load(label: str, display: str, raw: bytes, review: Review) -> Side | None:
    from generator.lint import lint_loaded

    loaded = load_bytes(label, raw)
    diagnostics = lint_loaded(loaded)
    if loaded.family is None or has_errors(diagnostics):
        review.diagnostics += diagnostics
        return None
    return Side(display, raw, loaded.family)


def _by_family(sides: list[Side], review: Review, label: str) -> dict[str, Side]:
    out: dict[str, Side] = {}
    for side in sides:
        name = side.family.family
        if name in out:
            review.diagnostics.append(
                Diagnostic(
                    f"{label}{side.path}", 1, 1, "KV010",
                    f"family '{name}' is also defined in {out[name].path}",
                    fix="give each spec file its own family name",
                )
            )  # fmt: skip
            continue
        out[name] = side
    return out


def _exec_module(text: str, name: str, filename: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = filename
    exec(compile(text, filename, "exec"), module.__dict__)  # our own generated code, stdlib only
    return module


def _render_module(side: Side, tag: str) -> None:
    from generator.render import SpecInput, render

    name = side.family.family
    text = render([SpecInput(side.path, side.raw, side.family)])[f"{name}/sizing.py"]
    side.module = _exec_module(text, f"kvgen_review_{tag}_{name}", f"<{tag}:{name}/sizing.py>")
    side.module_text = text


def _committed_module(side: Side, tree: GitTree, out_dir: Path) -> None:
    """Use ``generated/<family>/sizing.py`` at the ref when it was generated from this spec."""
    name = side.family.family
    path = out_dir / name / "sizing.py"
    raw = tree.read(path)
    if raw is not None:
        label = f"{tree.ref}:{path.as_posix()}"
        try:
            module = _exec_module(raw.decode(), f"kvgen_review_old_{name}", label)
        except Exception as exc:  # an old module that no longer runs is rendered instead
            log.warning("%s does not load (%s); rendering the spec instead", label, exc)
        else:
            if getattr(module, "SPEC_SHA256", None) == hashlib.sha256(side.raw).hexdigest():
                side.module, side.module_text, side.origin = module, raw.decode(), label
                return
            log.warning("%s was generated from another spec; rendering the spec instead", label)
    _render_module(side, "old")
    side.origin = f"{tree.ref}:{side.path} rendered by the current generator"


# --- evaluation and classification -----------------------------------------------------------


def applicable_profiles(module: types.ModuleType, model: str) -> tuple[str, ...]:
    """The profiles that apply to ``model``; a module generated before per-model profiles
    (no ``PROFILES``) applies every profile to every model."""
    profiles = getattr(module, "PROFILES", None)
    return tuple(profiles[model]) if profiles is not None else tuple(module.SPECULATIVE)


def capacities(side: Side, deployment: Deployment) -> dict[tuple[str, str], dict[str, Capacity]]:
    """Per (model, profile), per manager, the capacity at the reference deployment."""
    module = side.module
    assert module is not None
    out: dict[tuple[str, str], dict[str, Capacity]] = {}
    for model in module.MODELS:
        kwargs = deployment.kwargs(side.family.model(model).max_seq_len)
        for profile in applicable_profiles(module, model):
            costs = module.cache_costs(model, speculative=profile, **kwargs)
            try:
                shares = module.split_budget(
                    deployment.gpu_budget, model, speculative=profile, **kwargs
                )
            except ValueError:
                shares = None  # the budget does not cover the intercepts: nothing fits
            row = out[(model, profile)] = {}
            for manager, cost in costs.items():
                share = shares[manager] if shares else None
                tokens = (
                    module.max_tokens_from_quota(
                        model, share, manager=manager, speculative=profile, **kwargs
                    )
                    if share is not None
                    else 0
                )
                row[manager] = Capacity(int(cost[0]), int(cost[1]), share, tokens)
    return out


def _fewer(new: int | None, old: int | None) -> bool:
    """``new < old`` with ``None`` as unbounded."""
    if new is None:
        return False
    return old is None or new < old


def classify(old: Capacity, new: Capacity) -> str | None:
    """The kind of change of one manager, ``None`` when slope, intercept and tokens agree."""
    if (old.slope, old.intercept, old.max_tokens) == (new.slope, new.intercept, new.max_tokens):
        return None
    if (
        _fewer(new.max_tokens, old.max_tokens)
        or new.intercept > old.intercept
        or new.slope > old.slope
    ):
        return CAPACITY_REDUCING
    return CAPACITY_INCREASING


def _acknowledged(acks: list[Acknowledgement], change: Change) -> str | None:
    for ack in acks:
        if (
            ack.change == change.kind
            and ack.model in (ANY, change.model)
            and ack.profile in (ANY, change.profile)
        ):
            return ack.reason
    return None


def _names_changes(family: str, kind: str, old: list[str], new: list[str]) -> list[Change]:
    """Models (``kind="model"``) or profiles removed (API) and added."""
    out = []
    for name in old:
        if name not in new:
            model, profile = (name, ANY) if kind == "model" else (ANY, name)
            out.append(Change(family, model, profile, ANY, API, f"{kind} removed"))
    for name in new:
        if name not in old:
            model, profile = (name, ANY) if kind == "model" else (ANY, name)
            out.append(Change(family, model, profile, ANY, ADDED, f"{kind} added"))
    return out


def compare_family(name: str, old: Side, new: Side, deployment: Deployment) -> list[Change]:
    """Every change of one family between two evaluated sides (``name`` is the new name)."""
    before, after = capacities(old, deployment), capacities(new, deployment)
    changes = _names_changes(name, "model", list(old.module.MODELS), list(new.module.MODELS))
    changes += _names_changes(
        name, "profile", list(old.module.SPECULATIVE), list(new.module.SPECULATIVE)
    )
    # A profile that stays but starts or stops applying to a model that stays.
    for key in sorted(after.keys() ^ before.keys()):
        model, profile = key
        kept = (
            model in old.module.MODELS
            and model in new.module.MODELS
            and profile in old.module.SPECULATIVE
            and profile in new.module.SPECULATIVE
        )
        if kept:
            stopped = key in before
            kind = API if stopped else ADDED
            detail = f"profile {'no longer applies' if stopped else 'now applies'} to the model"
            changes.append(Change(name, model, profile, ANY, kind, detail))
    for key in [key for key in after if key in before]:
        model, profile = key
        for manager in sorted(set(before[key]) | set(after[key])):
            was, now = before[key].get(manager), after[key].get(manager)
            if was is None or now is None:
                detail = f"{manager} cache manager {'added' if was is None else 'removed'}"
                changes.append(Change(name, model, profile, manager, API, detail, was, now))
                continue
            kind = classify(was, now)
            if kind is not None:
                changes.append(Change(name, model, profile, manager, kind, "", was, now))
    return changes


def _pair_renames(
    old: dict[str, Side], new: dict[str, Side]
) -> dict[str, str]:  # new name -> old name
    by_path = {side.path: name for name, side in old.items() if name not in new}
    return {
        name: by_path[side.path]
        for name, side in new.items()
        if name not in old and side.path in by_path
    }


def _status(changes: list[Change], old: Side, new: Side) -> str:
    if changes:
        return "changed"
    if old.raw != new.raw or old.module_text != new.module_text:
        return "cosmetic"
    return "unchanged"


def review_specs(
    ref: str,
    paths: list[str],
    deployment: Deployment,
    *,
    cwd: Path | None = None,
    out_dir: Path = OUT_DIR,
) -> Review:
    """Load both sides, evaluate them and classify every change (see the module docstring)."""
    tree = GitTree(ref, cwd or Path.cwd())
    review = Review(ref, deployment)
    candidates = _candidate_paths(tree, paths)
    if not candidates:
        raise ReviewError(f"no spec files under {', '.join(paths or [str(SPEC_DIR)])}")
    old_sides, new_sides = [], []
    for path in candidates:
        display = path.as_posix()
        log.debug("reading %s (at %s and in the working tree)", display, ref)
        raw = tree.read(path)
        if raw is not None and (side := _load(f"{ref}:{display}", display, raw, review)):
            old_sides.append(side)
        if path.is_file() and (side := _load(display, display, path.read_bytes(), review)):
            new_sides.append(side)
    old = _by_family(old_sides, review, f"{ref}:")
    new = _by_family(new_sides, review, "")
    if has_errors(review.diagnostics):
        review.diagnostics.sort()
        return review
    renamed = _pair_renames(old, new)
    names = [n for n in sorted(set(old) | set(new)) if n not in renamed.values()]
    for i, name in enumerate(names, 1):
        log.info("[%d/%d] evaluating family %s", i, len(names), name)
        _review_family(name, old, new, renamed, tree, out_dir, review)
    return review


def _review_family(
    name: str,
    old: dict[str, Side],
    new: dict[str, Side],
    renamed: dict[str, str],
    tree: GitTree,
    out_dir: Path,
    review: Review,
) -> None:
    if name not in new:
        review.families[name] = "removed"
        review.changes.append(Change(name, ANY, ANY, ANY, API, "family removed"))
        return
    after = new[name]
    review.spec_paths[name] = after.path
    changes: list[Change] = []
    before = old.get(renamed.get(name, name))
    if before is None:
        review.families[name] = "added"
        changes.append(Change(name, ANY, ANY, ANY, ADDED, "family added"))
    else:
        _committed_module(before, tree, out_dir)
        _render_module(after, "new")
        log.debug("%s: old side from %s", name, before.origin)
        if name in renamed:
            detail = f"family renamed from {renamed[name]}"
            changes.append(Change(name, ANY, ANY, ANY, API, detail))
        try:
            changes += compare_family(name, before, after, deployment=review.deployment)
        except (TypeError, AttributeError) as exc:
            # A module committed by an older generator may predate today's sizing API.
            log.warning(
                "%s does not answer today's API (%s); rendering the spec", before.origin, exc
            )
            _render_module(before, "old")
            changes += compare_family(name, before, after, deployment=review.deployment)
        review.families[name] = _status(changes, before, after)
    acks = after.family.acknowledge
    review.changes += [
        replace(c, acknowledged=_acknowledged(acks, c)) if c.kind in BLOCKING else c
        for c in changes
    ]
