"""What moved between two releases of an engine, read from their committed fixtures.

Usage (repository root; no engine needed):
    python bench/engines/release_diff.py vllm 0.33.0 0.34.0

``refresh_goldens.py --engine NAME==RELEASE`` prints this after writing the release's
fixtures. It compares, case by case:
- the release facts (``tests/fixtures/engines/release_facts_<engine>.json``): each fact whose
  value or message differs, with the source line of the newer release;
- the goldens (``<engine>.json`` / ``<engine>-<release>.json``), matched on their inputs: each
  case whose engine output differs, and how many cases each output field moved in;
- the closed loop (``closed_loop_<engine>[-<release>].json``), matched on the case id: each
  case whose engine result differs (a refusal, a number, a resolved setting), how many cases
  each result field moved in, and apart from those the fields kvgen emitted that differ (the
  settings a launch passes), its exit and its refusal, the release it names left out.
A field one release has and the other lacks counts as moved ("absent" on that side).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "engines"
ABSENT = "absent"


def fixture_path(engine: str, release: str, kind: str, baseline: str) -> Path:
    """``kind`` "golden" or "closed_loop"; the baseline release keeps the bare name."""
    stem = engine if kind == "golden" else f"closed_loop_{engine}"
    return FIXTURES / (f"{stem}.json" if release == baseline else f"{stem}-{release}.json")


def facts_path(engine: str) -> Path:
    return FIXTURES / f"release_facts_{engine}.json"


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as dotted keys (``engine_settings.block_size``)."""
    if not isinstance(value, dict):
        return {prefix: value}
    out: dict[str, Any] = {}
    for key, item in value.items():
        out.update(flatten(item, f"{prefix}.{key}" if prefix else key))
    return out


def moved_fields(old: dict[str, Any], new: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Dotted field -> (old, new) for each field whose value differs or one side lacks."""
    before, after = flatten(old), flatten(new)
    return {
        key: (before.get(key, ABSENT), after.get(key, ABSENT))
        for key in sorted(set(before) | set(after))
        if before.get(key, ABSENT) != after.get(key, ABSENT)
    }


def _short(value: Any, width: int = 110) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= width else text[: width - 3] + "..."


def golden_label(inputs: dict[str, Any]) -> str:
    """A golden case's name from its inputs (the goldens have no ids)."""
    parts = [
        inputs["family"],
        inputs["model"],
        f"b{inputs['block_size']}",
        f"s{inputs['max_model_len']}",
        f"tp{inputs.get('tp_size', 1)}",
        inputs.get("speculative", "none"),
    ]
    if inputs.get("heterogeneous_vocab"):
        parts.append("heterogeneous-vocab")
    if inputs.get("layers_from", "kvgen spec") != "kvgen spec":
        parts.append("config.json")
    if not inputs.get("async_scheduling", True):
        parts.append("sync")
    if inputs.get("enable_prefix_caching") is False:
        parts.append("prefix-caching-off")
    if inputs.get("budget_bytes", 40 << 30) != 40 << 30:
        parts.append(f"g{inputs['budget_bytes']}")
    return "/".join(str(part) for part in parts)


def _outcome(result: dict[str, Any]) -> str:
    if "refused" in result:
        return "refused: " + _short(result["refused"], 90)
    if result.get("error"):
        return "error: " + _short(result["error"], 90)
    return "ran"


def compare_cases(
    title: str,
    old_cases: dict[str, dict[str, Any]],
    new_cases: dict[str, dict[str, Any]],
    new_fields: frozenset[str] = frozenset(),
) -> tuple[list[str], int]:
    """Report lines for two case maps (label -> result) and the number of cases moved. A case
    whose outcome changed (ran, refused, or refused for another reason) is listed with its
    outcomes only; the others with each field that moved. ``new_fields``: fields only the
    newer release records (counted with their values, not listed per case)."""
    both = sorted(set(old_cases) & set(new_cases))
    only_old = sorted(set(old_cases) - set(new_cases))
    only_new = sorted(set(new_cases) - set(old_cases))
    per_field: dict[str, list[str]] = {}
    added: dict[str, list[str]] = {}
    outcomes: Counter[str] = Counter()
    case_lines = []
    for label in both:
        old, new = old_cases[label], new_cases[label]
        before, after = _outcome(old), _outcome(new)
        if before != after:
            outcomes[f"{before} -> {after}"] += 1
            case_lines.append(f"  {label}: {before} -> {after}")
            continue
        moved = moved_fields(old, new)
        for key, (a, b) in moved.items():
            shown = json.dumps(b) if a == ABSENT else f"{json.dumps(a)} -> {json.dumps(b)}"
            (added if key in new_fields else per_field).setdefault(key, []).append(shown)
        loud = {k: v for k, v in moved.items() if k not in new_fields}
        if loud:
            changes = "; ".join(
                f"{k} {_short(a, 40)} -> {_short(b, 40)}" for k, (a, b) in loud.items()
            )
            case_lines.append(f"  {label}: {changes}")
    lines = [
        f"{title}: {len(both)} cases in both, {len(case_lines)} moved "
        f"({sum(outcomes.values())} outcomes, {len(case_lines) - sum(outcomes.values())} values)"
        + (f", {len(only_old)} only in the older" if only_old else "")
        + (f", {len(only_new)} only in the newer" if only_new else "")
    ]
    for outcome, count in sorted(outcomes.items()):
        lines.append(f"  outcome {_short(outcome, 200)}: {count} cases")
    for group, name in ((per_field, "moved"), (added, "new in the newer release")):
        for field, values in sorted(group.items()):
            kinds = sorted(set(values))
            shown = _short(kinds[0], 60) if len(kinds) == 1 else f"{len(kinds)} distinct"
            lines.append(f"  field {field} ({name}): {len(values)} cases ({shown})")
    lines += case_lines
    lines += [f"  only in the older: {label}" for label in only_old]
    lines += [f"  only in the newer: {label}" for label in only_new]
    return lines, len(case_lines)


def shipped_sliding_mla() -> list[str]:
    """Shipped models with a sliding-window MLA layer (the MLA fallback's only reach)."""
    from kvgen._spec.loader import load_path

    found = []
    for path in sorted((ROOT / "schema" / "families").glob("*.yaml")):
        family = load_path(path).family
        for model in family.models if family is not None else ():
            kinds = model.layer_kinds.values()
            if any(k.kv_lora_rank and k.attention in ("sliding", "chunked") for k in kinds):
                found.append(model.name)
    return found


def shipped_effect(fact: str, before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """For a policy that moves only some models: which shipped models it moves."""
    if fact == "sliding_window_mla_fallback":
        models = shipped_sliding_mla()
        if models:
            return f"moves {', '.join(models)}"
        return "moves no shipped model (none has a sliding-window MLA layer)"
    if fact == "mamba_state_alignment":
        if before.get("value") == after.get("value"):
            return (
                "moves no shipped model: a default launch aligns Mamba states to "
                f"{after.get('value')} byte(s) in both"
            )
        return "moves every shipped Mamba hybrid's state page"
    return None


def compare_facts(engine: str, old: str, new: str) -> list[str]:
    path = facts_path(engine)
    if not path.exists():
        return [f"facts: no {path.relative_to(ROOT)}"]
    releases = _load(path)["releases"]
    if old not in releases or new not in releases:
        missing = [r for r in (old, new) if r not in releases]
        return [f"facts: {path.relative_to(ROOT)} has no facts of {', '.join(missing)}"]
    before, after = releases[old]["facts"], releases[new]["facts"]
    lines = [f"facts ({path.relative_to(ROOT)}):"]
    for fact in sorted(set(before) | set(after)):
        a, b = before.get(fact, {}), after.get(fact, {})
        changed = {
            k: (a.get(k, ABSENT), b.get(k, ABSENT))
            for k in sorted(set(a) | set(b))
            if k not in ("source", "note") and a.get(k, ABSENT) != b.get(k, ABSENT)
        }
        if not changed:
            lines.append(f"  {fact}: unchanged ({_short(b.get('value'), 60)})")
            continue
        if set(changed) == {"value"} and isinstance(b.get("value"), dict):
            inner = moved_fields(a.get("value") or {}, b["value"])
            same = sorted(set(b["value"]) - set(inner))
            lines.append(f"  {fact}: moved for {len(inner)} of {len(b['value'])} "
                         f"[{b.get('source', '')}]")  # fmt: skip
            lines += [f"    {k}: {_short(x, 60)} -> {_short(y, 60)}" for k, (x, y) in inner.items()]
            if same:
                lines.append(f"    unchanged: {', '.join(same)}")
            continue
        shown = "; ".join(
            f"{k} {_short(x, 60)} -> {_short(y, 160)}" for k, (x, y) in changed.items()
        )
        effect = shipped_effect(fact, a, b)
        lines.append(
            f"  {fact}: {shown} [{b.get('source', '')}]" + (f"; {effect}" if effect else "")
        )
    return lines


def _unnamed(text: Any, version: str) -> Any:
    """``text`` with the release ``version`` it names replaced by ``<release>``."""
    return text.replace(f" {version} ", " <release> ") if isinstance(text, str) else text


def report(engine: str, old: str, new: str, baseline: str) -> list[str]:
    lines = [f"{engine} {old} -> {new}"]
    lines += compare_facts(engine, old, new)
    paths = [fixture_path(engine, r, "golden", baseline) for r in (old, new)]
    if all(p.exists() for p in paths):
        maps = [
            {json.dumps(c["inputs"], sort_keys=True): c["engine_output"] for c in _load(p)["cases"]}
            for p in paths
        ]
        labelled = [{golden_label(json.loads(k)): v for k, v in m.items()} for m in maps]
        if all(len(a) == len(b) for a, b in zip(maps, labelled, strict=True)):
            maps = labelled  # labels are unique: print them
        lines += compare_cases(f"goldens ({paths[0].name} -> {paths[1].name})", maps[0], maps[1])[0]
    paths = [fixture_path(engine, r, "closed_loop", baseline) for r in (old, new)]
    if all(p.exists() for p in paths):
        cases = [{c["id"]: c for c in _load(p)["cases"]} for p in paths]
        engine_maps = [
            {i: c.get("engine", {"engine_skip": c.get("engine_skip")}) for i, c in m.items()}
            for m in cases
        ]
        keys = [{key for result in m.values() for key in flatten(result)} for m in engine_maps]
        new_only = keys[1] - keys[0]  # a result field new in the newer release: counted
        lines += compare_cases(
            f"closed loop ({paths[0].name} -> {paths[1].name}), the engine's results",
            engine_maps[0],
            engine_maps[1],
            frozenset(new_only),
        )[0]
        # kvgen's refusals name the release planned for ("vLLM 0.33.0 cannot run ..."): the
        # words are compared with the release left out, so that only what kvgen does moves.
        emitted = [
            {
                i: {
                    k: _unnamed(c.get(k), version) if k == "kvgen_refusal" else c.get(k)
                    for k in ("fields", "kvgen_exit", "kvgen_refusal")
                }
                for i, c in m.items()
            }
            for m, version in zip(cases, (old, new), strict=True)
        ]
        lines += compare_cases("closed loop, the settings kvgen emitted", emitted[0], emitted[1])[0]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("engine")
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--baseline", help="the release whose fixtures keep the bare name")
    args = parser.parse_args(argv)
    baseline = args.baseline
    if baseline is None:
        from refresh_goldens import RELEASES

        baseline = RELEASES[args.engine][0]
    print("\n".join(report(args.engine, args.old, args.new, baseline)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
