"""Static vs runtime: the diff table of every generated family (fixtures and shipped).

Run ``python -m tests.diff_report`` (or ``python tests/diff_report.py``; ``--quick`` for one
parameter set and tokens_per_block 32 only). Columns, per cache manager:

- ``quota static/runtime``: ``quota_from_max_tokens(T)`` of the sizing module vs the bytes of
  the pools the shim built from the same T (semantics trtllm-v2, T and N page-aligned when
  the parameter set aligns them); ``q.slack`` = runtime - static (0 <= q.slack < one page
  per pool).
- ``static@peak``: the exact static cost ``slope*T(t) + intercept`` at the moment of the
  runtime peak; ``runtime peak``: the most bytes the shim held over the adversarial workloads;
  ``min slack exact`` / ``min slack v2``: the smallest ``static(T(t)) - bytes_in_use(t)`` over
  every step (never negative for exact; negative v2 slack is covered by the named terms in
  ``v2 excess explained by``).
- ``q.slack exact`` / ``t.slack exact``: under "exact", at T = 16*tpb + 5 (off a page edge),
  the runtime's quota bytes minus ``quota_from_max_tokens(T)``, and the tokens the shim plans
  for that quota less one byte minus ``max_tokens_from_quota``: 0 (page-exact, §4).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `tests.workloads` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.workloads import (
    Harness,
    Rendered,
    render_fixture_specs,
    run_adversarial,
    shipped_families,
)

# --------------------------------------------------------------------------- parameter grid


def _longest_window(rendered: Rendered, model: str) -> int:
    family = rendered.family
    stacks = [family.model(model)]
    for profile in family.speculative:
        if profile.applies_to(model):
            stacks += [s for s in (profile.draft, profile.extra_layers) if s is not None]
    windows = [
        (kind.window or 0) + kind.sink_tokens
        for stack in stacks
        for kind in stack.layer_kinds.values()
        if kind.attention == "sliding"
    ]
    return max(windows, default=0)


def _shortest_window(rendered: Rendered, model: str) -> int | None:
    kinds = rendered.family.model(model).layer_kinds.values()
    windows = [k.window for k in kinds if k.attention == "sliding" and k.window]
    return min(windows, default=None)


def param_sets(rendered: Rendered, model: str, profile: str) -> dict[str, dict]:
    """The runtime-parameter grid of one (family, model, profile)."""
    tpb = rendered.family.tokens_per_block
    native = rendered.family.model(model).max_seq_len
    layers = rendered.family.model(model).layers.count
    head = rendered.sizing.headroom(profile, overlap_slack=True)
    # Long enough for every window's stale boundary to pass every alignment; no longer.
    long = min(native, _longest_window(rendered, model) + head + 8 * tpb + 2 * head + 64)
    sets = {
        "base": {"max_batch_size": 4, "max_num_tokens": 2 * tpb, "max_seq_len": long},
        "scratch": {
            "max_batch_size": 3,
            "max_num_tokens": 3 * tpb + 5,
            "max_seq_len": long,
            "scratch_reuse": True,
            "block_reuse": True,
        },
        "wide": {
            "max_batch_size": 8,
            "max_num_tokens": 4 * tpb,
            "max_seq_len": long,
            "tp_size": 8,
            "pp_size": min(2, layers),
            "pp_rank": min(2, layers) - 1,
            "overlap_slack": True,
            "max_util_for_resume": 0.9,
        },
    }
    encoder = [
        kind.encoder_tokens
        for kind in rendered.family.model(model).layer_kinds.values()
        if kind.attention == "cross" and kind.encoder_tokens
    ]
    if encoder:
        # A runtime encoder_tokens below the spec's count (fewer image tiles): one page more
        # than the shortest, so the rounding still shows.
        sets["encoder"] = {
            "max_batch_size": 3,
            "max_num_tokens": 2 * tpb + 3,
            "max_seq_len": long,
            "encoder_tokens": min(min(encoder), tpb + 1),
        }
    shortest = _shortest_window(rendered, model)
    if shortest is not None and shortest > 8:
        # max_seq_len at the shortest window: that window resolves to full attention.
        sets["short"] = {
            "max_batch_size": 2,
            "max_num_tokens": max(1, tpb - 3),
            "max_seq_len": min(native, shortest),
            "pp_size": min(2, layers),
            "pp_rank": 0,
        }
    return sets


def workload_shim(rendered: Rendered, model: str, profile: str, params: dict, device="meta"):
    """A shim big enough that no adversarial workload runs out of pages."""
    head = rendered.sizing.headroom(profile, overlap_slack=True)
    tpb = rendered.family.tokens_per_block
    batch = params["max_batch_size"]
    tokens = batch * (params["max_seq_len"] + head + tpb)
    return rendered.allocator.KVCacheShim(
        model,
        speculative=profile,
        max_tokens=tokens,
        semantics="exact",
        device=device,
        reserve_pages=2 * batch + 2,
        **params,
    )


# --------------------------------------------------------------------------- rows


@dataclass
class Row:
    family: str
    model: str
    profile: str
    params: str
    manager: str
    static_quota: int
    runtime_quota: int
    static_at_peak: int
    runtime_peak: int
    min_slack_exact: int
    min_slack_v2: int
    explained: str
    exact_quota_slack: int = 0
    exact_tokens_slack: int = 0

    @property
    def quota_slack(self) -> int:
        return self.runtime_quota - self.static_quota


def quota_pair(rendered: Rendered, model: str, profile: str, params: dict, tokens: int):
    """(static quota, runtime quota) per manager under trtllm-v2 for T = ``tokens``."""
    static = rendered.sizing.quota_from_max_tokens(
        model, tokens, speculative=profile, semantics="trtllm-v2", **params
    )
    shim = rendered.allocator.KVCacheShim(
        model, speculative=profile, max_tokens=tokens, device="meta", **params
    )
    return static, shim.quota_bytes()


def exact_slack(rendered: Rendered, model: str, profile: str, params: dict, tokens: int):
    """Per manager under "exact", at an unaligned T: (runtime - static quota bytes for T,
    runtime - static tokens held by that quota minus one byte); both 0 when page-exact (§4)."""
    kw = dict(speculative=profile, semantics="exact", **params)
    static = rendered.sizing.quota_from_max_tokens(model, tokens, **kw)
    shim = rendered.allocator.KVCacheShim(model, max_tokens=tokens, device="meta", **kw)
    built = shim.quota_bytes()
    # One byte below the quota of T the pools shrink: the inverse is probed off a page edge.
    floor = rendered.sizing.quota_from_max_tokens(model, 0, **kw)
    quota = {m: max(q - 1, floor[m]) for m, q in static.items()}
    held = rendered.allocator.KVCacheShim(model, quota_bytes=quota, device="meta", **kw)
    static_held = rendered.sizing.max_tokens_from_quota(model, quota, **kw)
    out = {}
    for manager in static:
        runtime_t, static_t = held.max_tokens()[manager], static_held[manager]
        gap = 0 if runtime_t == static_t else (runtime_t or -1) - (static_t or -1)
        out[manager] = (built[manager] - static[manager], gap)
    return out


def run_case(
    rendered: Rendered, model: str, profile: str, name: str, params: dict, thorough: bool
) -> list[Row]:
    shim = workload_shim(rendered, model, profile, params)
    harness = Harness(shim, rendered.sizing, params)
    run_adversarial(harness, thorough=thorough)
    tpb = rendered.family.tokens_per_block
    static_quota, runtime_quota = quota_pair(rendered, model, profile, params, 16 * tpb)
    exact = exact_slack(rendered, model, profile, params, 16 * tpb + 5)
    rows = []
    for manager, stats in harness.stats.items():
        rows.append(
            Row(
                rendered.name,
                model,
                profile,
                name,
                manager,
                static_quota[manager],
                runtime_quota[manager],
                stats.static_at_peak.get("exact", 0),
                stats.peak,
                stats.min_slack.get("exact", 0),
                stats.min_slack.get("trtllm-v2", 0),
                ",".join(sorted(stats.explained_by)) or "-",
                *exact[manager],
            )
        )
    return rows


COLUMNS = (
    ("family", "family"),
    ("model", "model"),
    ("profile", "profile"),
    ("params", "params"),
    ("manager", "manager"),
    ("static_quota", "quota static"),
    ("runtime_quota", "quota runtime"),
    ("quota_slack", "q.slack"),
    ("exact_quota_slack", "q.slack exact"),
    ("exact_tokens_slack", "t.slack exact"),
    ("static_at_peak", "static@peak"),
    ("runtime_peak", "runtime peak"),
    ("min_slack_exact", "min slack exact"),
    ("min_slack_v2", "min slack v2"),
    ("explained", "v2 excess explained by"),
)


def format_table(rows: list[Row]) -> str:
    cells = [[title for _attr, title in COLUMNS]]
    cells += [[str(getattr(row, attr)) for attr, _title in COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    numeric = {
        i
        for i, (attr, _t) in enumerate(COLUMNS)
        if attr not in {"family", "model", "profile", "params", "manager", "explained"}
    }
    lines = []
    for n, line in enumerate(cells):
        parts = [
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
            for i, cell in enumerate(line)
        ]
        lines.append("  ".join(parts).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def cases(families: list[Rendered], quick: bool = False):
    for rendered in families:
        for model in rendered.sizing.MODELS:
            for profile in rendered.sizing.PROFILES[model]:
                sets = param_sets(rendered, model, profile)
                for name, params in sets.items():
                    if quick and name != "base":
                        continue
                    yield rendered, model, profile, name, params


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="base parameters, tpb 32 only")
    parser.add_argument("--thorough", action="store_true", help="every acceptance pattern")
    parser.add_argument("--no-fixtures", action="store_true", help="shipped families only")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        families = shipped_families(out / "shipped")
        if not args.no_fixtures:
            tpbs = (32,) if args.quick else (16, 32, 64)
            families += render_fixture_specs(out / "fixtures", tpbs)
        rows = []
        for rendered, model, profile, name, params in cases(families, args.quick):
            rows += run_case(rendered, model, profile, name, params, args.thorough)
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
