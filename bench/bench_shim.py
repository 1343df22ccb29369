"""Benchmark the allocator shim: generation steps per second for a batch of 256 requests
(the best of 5 runs of 200 steps, process time),
and how the cost of the diff suite's workloads grows with batch size and sequence length.

    python bench/bench_shim.py              # fixture family fx_mixed (tokens_per_block 32)
    python bench/bench_shim.py --family gemma3 --model gemma3_27b

Prints figures only; nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvgen._spec.loader import load_family  # noqa: E402

from tests.workloads import (  # noqa: E402
    FIXTURE_SPECS,
    Harness,
    generate,
    prefill,
    render_family,
    with_tokens_per_block,
)

STEPS = 200
REPEATS = 5


def load(family: str, out: Path):
    fixture = FIXTURE_SPECS / f"{family}.yaml"
    if fixture.exists():
        spec = with_tokens_per_block(load_family(fixture), 32)
        return render_family(spec, fixture.read_bytes(), out, fixture.name)
    path = ROOT / "schema" / "families" / f"{family}.yaml"
    return render_family(load_family(path), path.read_bytes(), out, f"schema/families/{path.name}")


def steps_per_second(rendered, model, profile, batch, seq_len, device) -> tuple[float, float]:
    """The best of ``REPEATS`` runs of 200 steps, each on a fresh shim, in process time (on
    a shared machine wall-clock time also counts other processes' time slices)."""
    best = float("inf")
    for _ in range(REPEATS):
        shim = rendered.allocator.KVCacheShim(
            model,
            speculative=profile,
            max_batch_size=batch,
            max_num_tokens=8192,
            max_seq_len=seq_len,
            max_tokens=batch * (seq_len + 64),
            device=device,
            reserve_pages=batch,
        )
        rids = list(range(batch))
        for rid in rids:
            shim.add_request(rid)
            shim.context_chunk(rid, 100 + rid % 64)
        slots = shim.draft_slots
        accepts = [rid % (slots + 1) for rid in rids]
        start = time.process_time()
        for _step in range(STEPS):
            shim.generation_step(rids, accepts)
        best = min(best, time.process_time() - start)
    return STEPS / best, best / STEPS * 1e3


def diff_cost(rendered, model, profile, batch, seq_len) -> tuple[float, int]:
    params = {"max_batch_size": batch, "max_num_tokens": 256, "max_seq_len": seq_len}
    shim = rendered.allocator.KVCacheShim(
        model,
        speculative=profile,
        max_tokens=batch * (seq_len + 64),
        device="meta",
        semantics="exact",
        reserve_pages=2 * batch,
        **params,
    )
    harness = Harness(shim, rendered.sizing, params)
    start = time.perf_counter()
    # Every request from a one-token prompt to max_seq_len, checked after every operation.
    rids = list(range(batch))
    for rid in rids:
        harness.add(rid)
    prefill(harness, dict.fromkeys(rids, 1))
    generate(harness, rids, seq_len, lambda rid, step: rid + step)
    checks = sum(s.checks for s in harness.stats.values())
    return time.perf_counter() - start, checks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="fx_mixed")
    parser.add_argument("--model", default=None)
    parser.add_argument("--profile", default=None)
    parser.add_argument("--device", default="meta")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rendered = load(args.family, Path(tmp))
        model = args.model or rendered.sizing.MODELS[0]
        profiles = [args.profile] if args.profile else list(rendered.sizing.PROFILES[model])
        print(f"family {rendered.name}, model {model}, device {args.device}")
        print("generation step, batch 256 (200 steps):")
        for profile in profiles:
            rate, ms = steps_per_second(rendered, model, profile, 256, 4096, args.device)
            print(f"  {profile:>12}: {rate:8.0f} steps/s  {ms:6.3f} ms/step")
        profile = profiles[0]
        print(f"diff-suite cost ({profile}): B requests prompt 1 -> max_seq_len, checked each op")
        for batch in (1, 4, 16, 64):
            for seq_len in (512, 2048):
                seconds, checks = diff_cost(rendered, model, profile, batch, seq_len)
                print(
                    f"  batch {batch:3d} max_seq_len {seq_len:5d}: {seconds:7.3f} s "
                    f"{checks:7d} checks"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
