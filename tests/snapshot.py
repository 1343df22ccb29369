"""Every figure kvgen prints, in one text: the before/after check of a refactoring.

Run ``python -m tests.snapshot > /tmp/before.txt`` on the starting commit and again after each
move, then ``diff`` the two: a move that changes no behaviour changes no byte. ``--quick``
leaves out the diff report (two minutes on an idle machine), which the full run prints first.

Printed, in order:

- ``python -m tests.diff_report`` (static vs runtime of every family, fixtures included);
- every engine golden case (tests/fixtures/engines/*.json) as ``kvgen._engines.capacity`` and the
  committed generated module answer it;
- the ``>>>`` sessions of README, CONTRIBUTING and docs/ (each example's output as the
  interpreter prints it) and the commands of their output regions (tests/doc_examples.py);
- ``kvgen plan`` and ``kvgen compare`` of every shipped family and model with a few settings;
- ``cost_terms`` of every committed sizing module over a small grid of options.
"""

from __future__ import annotations

import argparse
import contextlib
import doctest
import importlib
import io
import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `tests.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.doc_examples import DOCUMENTS, SESSION, regions

ROOT = Path(__file__).resolve().parent.parent
FAMILIES = ROOT / "schema" / "families"
GOLDENS = ROOT / "tests" / "fixtures" / "engines"


def _kvgen(*args: str) -> str:
    """What ``kvgen -q ARGS`` prints on stdout and its exit code, run in this process."""
    from kvgen._cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["-q", *args])
    return f"$ kvgen {' '.join(args)}  [exit {code}]\n{out.getvalue()}{err.getvalue()}"


def _answer(function: Callable[..., object], *args: object, **kwargs: object) -> str:
    try:
        return repr(function(*args, **kwargs))
    except ValueError as exc:
        return f"{type(exc).__name__}: {exc}"


def diff_report() -> str:
    from tests import diff_report

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        diff_report.main([])
    return out.getvalue()


def engine_goldens() -> str:
    from kvgen._engines.capacity import engine_capacity

    from tests.unit.test_engines import family as golden_family
    from tests.unit.test_engines import golden_kwargs

    lines = []
    for engine in ("vllm", "sglang"):
        cases = json.loads((GOLDENS / f"{engine}.json").read_text(encoding="utf-8"))["cases"]
        for case in cases:
            i = case["inputs"]
            family = golden_family(i["family"])
            kwargs = golden_kwargs(i, engine)
            key = f"{engine} {i['family']} {i['model']} {json.dumps(kwargs, sort_keys=True)}"
            got = _answer(engine_capacity, family, i["model"], i["budget_bytes"], **kwargs)
            lines.append(f"{key}\n  kvgen._engines: {got}")  # the snapshots' label since 5af0688
            if (ROOT / "generated" / i["family"] / "sizing.py").exists():
                module = importlib.import_module(f"generated.{i['family']}.sizing")
                got = _answer(module.engine_capacity, i["model"], i["budget_bytes"], **kwargs)
                lines.append(f"  generated:     {got}")
    return "\n".join(lines) + "\n"


def readme_examples() -> str:
    out = []
    for document in DOCUMENTS:
        sessions = SESSION.findall((ROOT / document).read_text(encoding="utf-8"))
        for number, session in enumerate(sessions):
            globs: dict[str, object] = {}
            for example in doctest.DocTestParser().get_examples(session):
                buffer = io.StringIO()
                with contextlib.redirect_stdout(buffer):
                    try:
                        exec(compile(example.source, f"{document}[{number}]", "single"), globs)
                    except Exception as exc:  # the snapshot records what happened
                        print(f"{type(exc).__name__}: {exc}")
                out.append(f">>> {example.source}{buffer.getvalue()}")
    for _, command, _ in regions():
        out.append(_kvgen(*shlex.split(command)[1:]))
    return "".join(out)


# Per model, then per speculative profile beyond "none": the arguments after FAMILY MODEL.
PER_MODEL = (
    ("plan", "--gpu-memory", "80GiB", "--max-batch-size", "1", "8", "64"),
    ("plan", "--gpu-memory", "80GiB", "--semantics", "exact", "--tp-size", "2"),
    ("plan", "--requests", "4", "--seq-len", "4096"),
    ("plan", "--gpu-memory", "40GiB", "--format", "json"),
    ("compare", "--gpu-memory", "40GiB"),
    ("compare", "--gpu-memory", "24GiB", "--block-size", "64", "--max-seq-len", "8192"),
)
PER_PROFILE = (
    ("plan", "--gpu-memory", "80GiB", "--speculative"),
    ("compare", "--gpu-memory", "40GiB", "--speculative"),
)


def plans_and_compares() -> str:
    from kvgen._spec.loader import load_family

    out = []
    for spec in sorted(FAMILIES.glob("*.yaml")):
        family = load_family(spec)
        for model in family.models:
            where = (family.family, model.name)
            for command, *rest in PER_MODEL:
                out.append(_kvgen(command, *where, *rest))
            for profile in family.profiles_for(model.name)[1:]:
                for command, *rest in PER_PROFILE:
                    out.append(_kvgen(command, *where, *rest, profile))
    return "".join(out)


GRID = (
    {},
    {"tp_size": 2},
    {"tp_size": 8, "pp_size": 2, "pp_rank": 1},
    {"semantics": "exact", "scratch_reuse": True, "block_reuse": True},
    {"semantics": "exact", "tp_size": 4, "overlap_slack": True, "engine_terms": True},
    {"attention_dp": True, "mamba_state_update": "replay", "semantics": "exact"},
    {"tp_size": 8, "dcp_size": 2},
)


def sizing_grid() -> str:
    out = []
    for sizing in sorted((ROOT / "generated").glob("*/sizing.py")):
        module = importlib.import_module(f"generated.{sizing.parent.name}.sizing")
        for model in module.MODELS:
            seq = min(module.MAX_SEQ_LEN[model], 8192)
            for profile in module.PROFILES[model]:
                base = {"speculative": profile, "max_batch_size": 8, "max_num_tokens": 4096}
                for options in GRID:
                    kw = {**base, "max_seq_len": seq, **options}
                    terms = _answer(module.cost_terms, model, **kw)
                    out.append(f"{module.FAMILY} {model} {sorted(kw.items())}\n  {terms}\n")
                kw = {**base, "max_seq_len": seq}
                quota = _answer(module.quota_from_max_tokens, model, 100000, **kw)
                pages = _answer(
                    module.pages_per_request, model, speculative=profile, max_seq_len=seq
                )
                requests = _answer(
                    module.quota_for_requests, model, requests=4, seq_len=seq,
                    speculative=profile, max_num_tokens=4096,
                )  # fmt: skip
                out.append(f"  quota: {quota}\n  pages: {pages}\n  requests: {requests}\n")
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="leave out the diff report")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    sections = [] if args.quick else [("diff report", diff_report)]
    sections += [
        ("engine goldens", engine_goldens),
        ("README examples", readme_examples),
        ("plan and compare", plans_and_compares),
        ("sizing grid", sizing_grid),
    ]
    for title, section in sections:
        sys.stdout.write(f"==== {title} ====\n{section()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
