"""Probe (not a golden): what SGLang 0.5.23's full ServerArgs resolution does to a recurrent
hybrid's state slots per running request. Runs inside SGLang's virtual environment:

    /work/engine_venvs/venv-sglang/bin/python bench/engines/sglang_mamba_resolution_probe.py

``closed_loop_sglang.py`` and ``sglang_runner.py`` now run ``resolve_once()`` for hybrids the
same way (the launcher runs it first: runtime_context.py ``_configure_context``); unresolved,
``mamba_radix_cache_strategy`` stays "auto" and ``_calculate_mamba_ratio`` is 3. Resolved,
every shipped hybrid gets "extra_buffer" (arg_groups/overrides.py
``_mamba_radix_cache_resolution``: overlap schedule on, linear_attn_backend triton), which adds
``get_mamba_tracking_slots`` (2 with overlap) to the ratio: 5. ``resolve_once`` needs an
accelerator; here it runs with device "cpu", the platform's Mamba-snapshot support
(mamba_hook.py ``_platform_supports_mamba_cache_extra_buffer``, true on CUDA) stubbed true, and
speculative_hook.py ``_disable_overlap_schedule_for_cpu`` a no-op: on the CPU it turns the
overlap scheduler off under speculative decoding (ratio 4), on CUDA it returns at once, so MTP
keeps ratio 5 there. Prints, per case, the resolved strategy and SGLang's pools.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import closed_loop_sglang as cl  # noqa: E402  (installs the torchvision stand-in first)
import sglang.srt.arg_groups.mamba_hook as mamba_hook  # noqa: E402
import sglang.srt.arg_groups.speculative_hook as speculative_hook  # noqa: E402
from sglang.srt.runtime_context import get_exec, get_schedule  # noqa: E402
from sglang.srt.server_args import ServerArgs  # noqa: E402

HF = HERE.parents[1] / "tests" / "fixtures" / "hf"
MTP2 = {"speculative_algorithm": "NEXTN", "speculative_num_steps": 2,
        "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 3}  # fmt: skip
CASES = (
    ("qwen3-next-80b-a3b.json", {}),
    ("nemotron-h-8b.json", {}),
    ("granite-4.0-h-tiny.json", {}),
    ("falcon-h1-0.5b-instruct.json", {}),
    ("qwen3-next-80b-a3b.json", MTP2),
)


def main() -> int:
    mamba_hook._platform_supports_mamba_cache_extra_buffer = lambda: True
    speculative_hook._disable_overlap_schedule_for_cpu = lambda server_args: None
    for fixture, extra in CASES:
        args = ServerArgs(
            model_path=cl.config_dir(str(HF / fixture)), skip_tokenizer_init=True,
            context_length=8192, max_running_requests=64, page_size=1,
            chunked_prefill_size=8192, device="cpu", **extra,
        )  # fmt: skip
        args.resolve_once()
        out = cl.pools(args, 40 << 30)
        out["extra_buffer"] = get_exec().mamba.enable_mamba_extra_buffer
        out["disable_overlap_schedule"] = get_schedule().disable_overlap_schedule
        print(fixture, json.dumps(extra), json.dumps(out), file=sys.__stdout__)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
