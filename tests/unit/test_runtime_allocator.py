"""kvgen.runtime.allocator driven directly with the hand-built tables of runtime_tables.py.

Sizes are derived in the module docstring there: a page row of a 64-bytes-per-token life
cycle is 16 * 64 = 1024 bytes; T = 256 tokens, batch 2, chunks of 64 tokens.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
import torch
from kvgen.runtime import RUNTIME_VERSION, require_version
from kvgen.runtime import allocator as rt

from tests.runtime_tables import PAGE, TINY, shim


def test_pools_follow_the_page_model():
    s = shim()
    pools = s.managers["target"].pools
    # full: ceil(256 / 16) = 16 pages. w32: batch 2 * peak 3 pages (window 32 + 1 token spans
    # 3 pages) + ceil(min(256, 64) / 16) = 4 pages of one chunk = 10 pages.
    assert {name: pool.pages for name, pool in pools.items()} == {"full": 16, "w32": 10}
    assert s.quota_bytes() == {"target": 26 * PAGE}


def test_quota_converts_back_to_the_same_tokens():
    # 26 pages hold T = 256 (17 full pages would be needed for T = 257).
    s = shim(max_tokens=None, quota_bytes=26 * PAGE, device="meta")
    assert s.planned_tokens == {"target": 256}
    assert s.max_tokens() == {"target": 256}


def test_typed_views_alias_the_pool():
    s = shim("hybrid")
    k = s.layer_views(0)["k"]
    assert (k.shape, k.dtype) == ((16, 16, 2, 8), torch.float16)
    assert k.untyped_storage().data_ptr() == s.pool("full").tensor.untyped_storage().data_ptr()
    latent = s.layer_views(2)["latent"]  # MLA: kv_lora_rank 48 + rope 16, bf16
    assert (latent.shape, latent.dtype) == ((16, 16, 64), torch.bfloat16)
    views = s.layer_views(3)  # NVFP4: head_dim 32 packs in 16 bytes, one FP8 scale per 16
    assert views["k"].shape == (16, 16, 2, 16) and views["k"].dtype == torch.uint8
    assert views["k_scale"].shape == (16, 16, 2, 2)
    # one slot per request and the CUDA-graph padding slot (docs/cost-model.md §8)
    assert s.layer_views(1)["state"].shape == (2 + 1, 4096)


def test_recurrent_state_takes_one_slot_per_request():
    s = shim("hybrid")
    s.add_request("a")
    s.add_request("b")
    assert sorted(s.block_tables(["a", "b"], "state").tolist()) == [0, 1]
    assert s.bytes_in_use() == {"target": 2 * 4096}


def test_context_chunk_then_stale_swa_pages_go_back():
    s = shim()
    s.add_request(1)
    s.context_chunk(1, 40)  # capacity 40: 3 pages in each pool, nothing stale yet
    assert s.bytes_in_use() == {"target": 6 * PAGE}
    s.begin_context(1, 30)  # capacity 70: 5 pages each while the chunk runs
    assert s.bytes_in_use() == {"target": 10 * PAGE}
    s.end_context(1)  # history 70: pages [0, 2) of w32 are stale
    assert s.bytes_in_use() == {"target": 8 * PAGE}
    assert s.peak_bytes() == {"target": 10 * PAGE}
    assert s.block_table(1, "w32").tolist()[:5] == [rt.NO_PAGE, rt.NO_PAGE, 2, 3, 4]


def test_sink_pages_stay():
    s = shim("sinks")
    s.add_request(1)
    s.context_chunk(1, 64)
    s.context_chunk(1, 6)  # history 70: page 0 holds sinks, page 1 is stale
    table = s.block_table(1, "w32s16").tolist()
    assert table[0] != rt.NO_PAGE and table[1] == rt.NO_PAGE


def test_mtp_step_grows_by_one_plus_k_and_keeps_e():
    s = shim(speculative="mtp4")  # E = 3, 4 draft slots: a step adds 5 tokens
    s.add_request(1)
    s.context_chunk(1, 10)
    assert s.request_state(1) == (10, 13)
    s.begin_generation([1])
    assert s.request_state(1) == (10, 18)
    s.end_generation([1], accepted=4)  # history 15, capacity 15 + E = 18
    assert s.request_state(1) == (15, 18)


def test_pard_pads_k_drafts_to_2k_minus_1_slots():
    s = shim(speculative="pard2")  # K = 2: E = 1, 3 slots, a step takes 2K = 4 tokens
    assert (s.extra_tokens, s.draft_slots, s.step_tokens) == (1, 3, 4)
    s.add_request(1)
    s.context_chunk(1, 10)
    s.generation_step([1], accepted=3)
    assert s.request_state(1) == (14, 15)
    with pytest.raises(rt.InvalidStepError, match=r"accepted must be in \[0, 3\]"):
        s.generation_step([1], accepted=4)


def test_scratch_pool_holds_a_chunks_transient_swa_pages():
    s = shim(scratch_reuse=True)
    assert set(s.managers["target"].pools) == {"full", "w32", "w32/scratch"}
    s.add_request(1)
    s.begin_context(1, 64)  # pages [0, (65-32)//16) = [0, 2) are stale once the chunk ends
    assert s.pool_bytes_in_use()["w32/scratch"] == 2 * PAGE
    s.end_context(1)
    assert s.pool_bytes_in_use()["w32/scratch"] == 0


def test_suspend_resume_under_the_float32_watermark():
    s = shim(max_tokens=64, max_util_for_resume=0.5)  # full pool: 4 pages
    s.add_request(1)
    s.context_chunk(1, 32)  # 2 of 4 full pages: utilisation 0.5 is allowed back
    s.suspend(1)
    assert s.bytes_in_use() == {"target": 0}
    s.resume(1)
    assert s.bytes_in_use() == {"target": 4 * PAGE}
    s.context_chunk(1, 1)  # 3 of 4 pages: 0.75 > 0.5 after a suspend
    s.suspend(1)
    with pytest.raises(rt.ResumeRefusedError):
        s.resume(1)


def test_out_of_pages_is_typed():
    s = shim(max_tokens=32)  # full: 2 pages
    s.add_request(1)
    with pytest.raises(rt.OutOfPagesError) as info:
        s.context_chunk(1, 40)
    assert (info.value.pool, info.value.needed, info.value.free) == ("full", 3, 2)


def test_meta_device_builds_no_storage():
    s = shim(max_tokens=1 << 30, device="meta")
    assert s.pool("full").tensor.is_meta
    assert s.quota_bytes()["target"] > 1 << 35


def test_cuda_falls_back_to_cpu_with_a_warning(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.warns(RuntimeWarning, match="CUDA is not available"):
        assert shim(device="cuda").device.type == "cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rt.select_device(None).type == "cpu"


def test_tables_are_checked():
    stack = rt.LayerStack(1, ("x",), {"g": rt.LayerKind("full")})
    with pytest.raises(ValueError, match="unknown layer kind 'x'"):
        rt.FamilyTables(family="bad", tokens_per_block=16, models={"m": rt.ModelTable(64, stack)})
    with pytest.raises(ValueError, match="power of two"):
        rt.FamilyTables(family="bad", tokens_per_block=24, models=TINY.models)


def test_the_none_profile_always_exists():
    assert TINY.profile_names[0] == "none"


def test_require_version_names_the_fix():
    require_version(RUNTIME_VERSION)
    require_version(RUNTIME_VERSION - 1)  # a runtime at least as new as the gencode: accepted
    with pytest.raises(ImportError) as info:
        require_version(RUNTIME_VERSION + 1, "generated/llama3/allocator.py")
    assert str(info.value) == (
        f"generated/llama3/allocator.py was generated for kvgen runtime {RUNTIME_VERSION + 1}; "
        f"installed kvgen provides {RUNTIME_VERSION}: run `kvgen generate`"
    )


def test_a_module_generated_for_another_runtime_fails_at_import(tmp_path):
    module = tmp_path / "old_allocator.py"
    module.write_text(
        "from kvgen.runtime import allocator as _rt\n"
        f"_rt.require_version({RUNTIME_VERSION + 1}, 'generated/x/allocator.py')\n"
    )
    code = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import old_allocator"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 1
    assert "ImportError: generated/x/allocator.py was generated for kvgen runtime" in out.stderr


def test_public_surface():
    assert sorted(rt.__all__) == sorted(
        [
            "NO_PAGE",
            "RUNTIME_VERSION",
            "SEMANTICS",
            "AllocatorError",
            "CacheManager",
            "DoubleFreeError",
            "DuplicateRequestError",
            "FamilyTables",
            "InvalidRequestIdError",
            "InvalidStepError",
            "KVCacheShim",
            "Layer",
            "LayerKind",
            "LayerStack",
            "ModelTable",
            "OutOfPagesError",
            "Pool",
            "PoolAllocationError",
            "QuotaTooSmallError",
            "RequestError",
            "ResumeRefusedError",
            "SpeculativeProfile",
            "UnknownNameError",
            "UnknownRequestError",
            "live_pages",
            "peak_live_pages",
            "require_version",
            "select_device",
        ]
    )
    assert all(hasattr(rt, name) for name in rt.__all__)


def test_runtime_never_imports_the_cost_model():
    # The diff suite compares the two; the runtime must not borrow the static formulas. It
    # reads the layout facts (dtype widths, scale blocks, the headroom table) like the static
    # side does: inputs, not derivations.
    code = (
        "import sys, kvgen.runtime.allocator; "
        "print(sorted(m for m in sys.modules if m.startswith('kvgen') and "
        "not m.startswith('kvgen.runtime')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['kvgen', 'kvgen.sizing', 'kvgen.sizing.facts']"


def test_usage_block_of_the_runtime_docstring_runs():
    usage = rt.__doc__.split("::")[1].split("Every size")[0]
    code = "\n".join(line[4:] for line in usage.splitlines() if line.startswith("    "))
    namespace: dict[str, object] = {}
    exec(code, namespace)
    # 2048 tokens / 16 = 128 pages of 16 tokens * 32 layers * 2 (K, V) * 8 heads * 128 * 2 B.
    assert namespace["shim"].quota_bytes() == {"target": 128 * 16 * 32 * 2 * 8 * 128 * 2}
