"""Exercise the allocator shim's CUDA path: pools on the GPU, views, a short workload.

Run on a machine with a GPU (prints "skipped" and exits 0 without one):

    python bench/cuda_smoke.py [--family gemma3] [--model gemma3_1b] [--speculative draft_1b]

Checks, printing each figure: the bytes the shim reports for its pools equal the growth of
``torch.cuda.memory_allocated()`` while building them; a K view written by a CUDA kernel reads
back through the pool tensor; a context chunk and generation steps run and free cleanly.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="gemma3")
    parser.add_argument("--model", default="gemma3_1b")
    parser.add_argument("--speculative", default="draft_1b")
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("skipped: torch.cuda.is_available() is False")
        return 0
    allocator = importlib.import_module(f"generated.{args.family}.allocator")
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    shim = allocator.KVCacheShim(
        args.model,
        speculative=args.speculative,
        max_batch_size=8,
        max_num_tokens=2048,
        max_seq_len=4096,
        max_tokens=65536,
    )
    torch.cuda.synchronize()
    grown = torch.cuda.memory_allocated() - before
    quota = sum(shim.quota_bytes().values())
    print(f"device {shim.device}; pools {quota} B; cuda memory_allocated grew {grown} B")
    failures = []
    if str(shim.device).split(":")[0] != "cuda":
        failures.append("the shim did not choose cuda")
    if grown < quota:
        failures.append("memory_allocated grew less than the pools the shim reports")
    shim.add_request(1)
    shim.context_chunk(1, 1000)
    for accepted in (0, 1, 2):
        shim.generation_step([1], accepted=accepted)
    views = shim.layer_views(0)
    key = views["k"] if "k" in views else next(iter(views.values()))
    key[0].fill_(1)
    torch.cuda.synchronize()
    if not bool(key[0].eq(1).all()):
        failures.append("a K view write did not read back")
    print(f"block table on {shim.block_table(1, next(iter(shim.managers['target'].pools))).device}")
    print(f"bytes in use {shim.bytes_in_use()}, peak {shim.peak_bytes()}")
    shim.free(1)
    if any(shim.bytes_in_use().values()):
        failures.append("bytes remain in use after free")
    for failure in failures:
        print(f"FAIL: {failure}")
    print("ok" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
