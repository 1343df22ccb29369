"""Loading both sides of a review: the specs, and the sizing module that answers for each."""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kvgen._review._evaluate as evaluator
from kvgen._generate.vendored import SIZING_MODULES, SIZING_PACKAGE
from kvgen._lint.linter import duplicate_family
from kvgen._review._git import GitTree
from kvgen._review._types import Capacity, ReferenceDeployment, Review, ReviewError
from kvgen._spec.loader import load_bytes
from kvgen._spec.models import Family
from kvgen._util.diagnostics import has_errors

__all__ = [
    "Side",
    "by_family",
    "committed_module",
    "load_side",
    "render_module",
]

log = logging.getLogger("kvgen")

EVALUATOR = Path(evaluator.__file__)
EVALUATE_TIMEOUT_S = 60
COMMITTED_PACKAGE = "kvgen_committed"  # the output folder of the ref, in the child process


@dataclass(frozen=True)
class Evaluation:
    """A sizing module's answers at the reference deployment (plain data, no code)."""

    models: tuple[str, ...]
    speculative: tuple[str, ...]
    capacities: dict[tuple[str, str], dict[str, Capacity]]
    spec_sha256: str | None = None
    api_version: int = 1  # the generated sizing API (``API_VERSION``; 1 before it existed)
    # (model, profile, engine) -> (kv_tokens, max_concurrency), or the engine's reason
    engines: dict[tuple[str, str, str], tuple[int, float] | str] = field(default_factory=dict)


@dataclass
class Side:
    """One family on one side: its spec and what its sizing module answers."""

    path: str
    raw: bytes
    family: Family
    evaluation: Evaluation | None = None
    module_text: str = ""
    lines: dict[str, int] = field(default_factory=dict)  # see ``Review.spec_lines``
    origin: str = ""


def load_side(label: str, display: str, raw: bytes, review: Review) -> Side | None:
    from kvgen._lint.linter import lint_loaded
    from kvgen._spec.loader import display_path, path_problem
    from kvgen._util.codes import reader as codes

    problem = path_problem(display)
    if problem is not None:  # shown escaped: one line, and never named in generated code
        where = display_path(label)
        review.diagnostics.append(codes.CONTROL_CHARACTER_IN_PATH.at(where, (1, 1), problem))
        return None
    loaded = load_bytes(label, raw)
    diagnostics = lint_loaded(loaded)
    if loaded.family is None or has_errors(diagnostics):
        review.diagnostics += diagnostics
        return None
    family = loaded.family
    lines = {"family": loaded.source.value(("family",))[0]}
    for i, model in enumerate(family.models):
        lines[f"model:{model.name}"] = loaded.source.value(("models", i, "name"))[0]
    for i, profile in enumerate(family.speculative):
        lines[f"profile:{profile.name}"] = loaded.source.value(("speculative", i, "name"))[0]
    return Side(display, raw, family, lines=lines)


def by_family(sides: list[Side], review: Review, label: str) -> dict[str, Side]:
    out: dict[str, Side] = {}
    for side in sides:
        name = side.family.family
        if name in out:
            review.diagnostics.append(
                duplicate_family(f"{label}{side.path}", (1, 1), name, out[name].path)
            )
            continue
        out[name] = side
    return out


def _evaluation(data: Any, label: str) -> Evaluation:
    """Check the shape of an evaluation (it may come from another process) and type it."""

    def names(value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{label}: expected a list of names, got {value!r:.80}")
        return tuple(value)

    def count(value: Any, optional: bool = False) -> int | None:
        if value is None and optional:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{label}: expected an integer, got {value!r:.80}")
        return value

    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise ValueError(f"{label}: not an evaluation")
    table: dict[tuple[str, str], dict[str, Capacity]] = {}
    for row in data["rows"]:
        if not isinstance(row, list) or len(row) != 7:
            raise ValueError(f"{label}: bad row {row!r:.80}")
        model, profile, manager = names(row[:3])
        slope, intercept = count(row[3]), count(row[4])
        assert slope is not None and intercept is not None
        share, tokens = count(row[5], optional=True), count(row[6], optional=True)
        table.setdefault((model, profile), {})[manager] = Capacity(slope, intercept, share, tokens)
    sha = data.get("spec_sha256")
    api = data.get("api_version", 1)
    return Evaluation(
        names(data.get("models")),
        names(data.get("speculative")),
        table,
        sha if isinstance(sha, str) else None,
        api if type(api) is int else 1,
        _engine_table(data.get("engine_rows", []), label, names),
    )


def _engine_table(rows: Any, label: str, names: Any) -> dict[tuple[str, str, str], Any]:
    """``engine_rows`` of an evaluation, checked (it may come from another process)."""
    if not isinstance(rows, list):
        raise ValueError(f"{label}: bad engine rows")
    table: dict[tuple[str, str, str], tuple[int, float] | str] = {}
    for row in rows:
        if not isinstance(row, list) or len(row) != 5:
            raise ValueError(f"{label}: bad engine row {row!r:.80}")
        model, profile, engine = names(row[:3])
        tokens, value = row[3], row[4]
        if tokens is None and isinstance(value, str):
            table[(model, profile, engine)] = value
        elif type(tokens) is int and type(value) in (int, float):
            table[(model, profile, engine)] = (tokens, float(value))
        else:
            raise ValueError(f"{label}: bad engine row {row!r:.80}")
    return table


def _native(side: Side) -> dict[str, int]:
    return {model.name: model.max_seq_len for model in side.family.models}


def render_module(side: Side, tag: str, deployment: ReferenceDeployment) -> None:
    """Evaluate ``side`` through the sizing module the running kvgen renders from its spec.

    The text is rendered here, from a spec that passed lint, and executed from memory: no
    file another process could swap, and nothing read from the ref but the spec.
    """
    from kvgen._generate.render import SpecInput, render
    from kvgen._generate.vendored import exec_sizing

    name = side.family.family
    family = _what_if(side, deployment)
    text = render([SpecInput(side.path, side.raw, family)])[f"{name}/sizing.py"]
    filename = f"<{tag}:{name}/sizing.py>"
    module = exec_sizing(text, filename, f"kvgen_review_{tag}", name)
    data = evaluator.evaluate(module, _request(deployment), _native(side))
    side.evaluation = _evaluation(data, filename)  # the module's __file__
    side.module_text = text


def _what_if(side: Side, deployment: ReferenceDeployment) -> Family:
    """The side's family with ``--kv-cache-dtype`` / ``--block-size`` / ``--rope-scaled``
    (every model's context raised to ``--max-seq-len``) applied (kvgen._engines.whatif), or as it
    is; a side the change makes invalid is a ``ReviewError`` naming the reason."""
    if not _has_what_ifs(deployment):
        return side.family
    from kvgen._engines.whatif import Overrides, whatif_data
    from kvgen._util.exits import UsageError

    overrides = Overrides(
        kv_cache_dtype=deployment.kv_cache_dtype,
        block_size=deployment.block_size,
        max_seq_len=("*", deployment.max_seq_len) if deployment.rope_scaled else None,
    )
    try:
        return whatif_data(side.path, side.raw, overrides)
    except UsageError as exc:
        raise ReviewError(str(exc)) from None


def _request(deployment: ReferenceDeployment) -> dict[str, object]:
    """The deployment as ``_evaluate`` reads it: its fields, and ``engine_dtype``, the model
    dtype the engines are launched in (``engine_capacity``'s ``dtype``): a ``--kv-cache-dtype``
    of a plain float, whose cache follows it; absent otherwise (each engine's "auto")."""
    from kvgen.sizing.engines_registry import MODEL_DTYPES

    data = dict(vars(deployment))
    if deployment.kv_cache_dtype in MODEL_DTYPES:
        data["engine_dtype"] = deployment.kv_cache_dtype
    return data


def _has_what_ifs(deployment: ReferenceDeployment) -> bool:
    return (
        deployment.kv_cache_dtype is not None
        or deployment.block_size is not None
        or deployment.rope_scaled
    )


def committed_module(
    side: Side, tree: GitTree, out_dir: Path, deployment: ReferenceDeployment
) -> bool:
    """``--trust-committed-modules``: evaluate ``generated/<family>/sizing.py`` at the ref.

    The module runs in a separate ``python -I`` process with a timeout, and only its
    evaluation (JSON) comes back. Used when it was generated from this spec; otherwise, or
    when it does not run or answer today's API, ``False`` (the caller renders the spec).
    """
    if _has_what_ifs(deployment):
        return False  # the committed module answers for the spec as written, not the what-if
    name = side.family.family
    path = out_dir / name / "sizing.py"
    raw = tree.read_file(path)  # a regular file at the ref; a link there is never read
    if raw is None:
        return False
    label = f"{tree.ref}:{path.as_posix()}"
    # The runtime the module imports lies beside it at the ref (older modules held their own).
    sizing_files = {
        rel: tree.read_file(out_dir / SIZING_PACKAGE / rel)
        for rel in ("__init__.py", *(f"{module}.py" for module in SIZING_MODULES))
    }
    files = {f"{name}/sizing.py": raw}
    files.update({f"{SIZING_PACKAGE}/{rel}": text for rel, text in sizing_files.items() if text})
    try:
        data = _run_isolated(files, f"{name}/sizing.py", deployment, _native(side), label)
        evaluation = _evaluation(data, label)
    except ValueError as exc:
        log.warning("%s does not answer today's API (%s); rendering the spec instead", label, exc)
        return False
    if evaluation.spec_sha256 != hashlib.sha256(side.raw).hexdigest():
        log.warning("%s was generated from another spec; rendering the spec instead", label)
        return False
    side.evaluation, side.module_text, side.origin = evaluation, raw.decode(errors="replace"), label
    return True


def _run_isolated(
    files: dict[str, bytes],
    sizing: str,
    deployment: ReferenceDeployment,
    native: dict[str, int],
    label: str,
) -> Any:
    """Run ``_evaluate.py`` as ``python -I`` on the module ``sizing`` of an output folder made
    of ``files`` (its runtime beside it); its JSON answer (``ValueError`` if it fails, times
    out or answers anything but JSON)."""
    with tempfile.TemporaryDirectory(prefix="kvgen-review-") as tmp:
        folder = Path(tmp) / COMMITTED_PACKAGE
        for rel, text in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(text)
        module = folder / sizing
        request = {
            "path": str(module),
            "root": tmp,
            "package": f"{COMMITTED_PACKAGE}.{module.parent.name}",
            "deployment": _request(deployment),
            "native": native,
        }
        try:
            result = subprocess.run(
                [sys.executable, "-I", "-S", "-c", EVALUATOR.read_text(encoding="utf-8")],
                input=json.dumps(request, allow_nan=False),
                capture_output=True,
                text=True,
                timeout=EVALUATE_TIMEOUT_S,
                cwd=tmp,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ValueError(f"no answer within {EVALUATE_TIMEOUT_S} s") from None
    lines = result.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict) or ("ok" not in answer and "error" not in answer):
        raise ValueError(f"exit {result.returncode}: {result.stderr.strip()[-200:]}")
    if "error" in answer:
        raise ValueError(str(answer["error"]))
    return answer["ok"]
