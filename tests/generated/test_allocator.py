"""The generated allocator shim: pools, views, block tables, errors, devices, generated code."""

from __future__ import annotations

import ast
import subprocess
import sys
import warnings

import pytest
import torch

from tests.workloads import ROOT, check_invariants, snapshot_state

GiB = 1 << 30


@pytest.fixture(scope="module")
def mixed(rendered_families):
    return rendered_families("fx_mixed_t32")


def make(rendered, model="three", **kw):
    params = {
        "max_batch_size": 4,
        "max_num_tokens": 64,
        "max_seq_len": 600,
        "max_tokens": 4096,
        "device": "cpu",
    }
    params.update(kw)
    return rendered.allocator.KVCacheShim(model, **params)


# --------------------------------------------------------------------------- pools and views


def test_one_pool_per_life_cycle_and_manager(mixed):
    shim = make(mixed, speculative="dflash", scratch_reuse=True)
    assert list(shim.managers["target"].pools) == [
        "full",
        "w100",
        "w100/scratch",
        "w257",
        "w257/scratch",
    ]
    assert list(shim.managers["draft"].pools) == ["full", "w48"]  # no scratch for drafts


def test_quota_is_the_bytes_of_the_pool_tensors(mixed):
    shim = make(mixed, speculative="pard")
    for name, manager in shim.managers.items():
        tensors = [pool.tensor for pool in manager.distinct_pools()]
        assert all(t.dtype == torch.uint8 and t.device.type == "cpu" for t in tensors)
        assert shim.quota_bytes()[name] == sum(t.numel() * t.element_size() for t in tensors)


def test_standard_attention_views_are_typed_and_alias_pool_memory(mixed):
    shim = make(mixed)
    pool = shim.pool("w100")
    views = shim.layer_views("layers.0")
    assert set(views) == {"k", "v"}
    assert views["k"].shape == (pool.pages, 32, 2, 16)
    assert views["k"].dtype == torch.bfloat16
    views["v"][3].fill_(1.0)
    # V of layer 0 starts after its K (32 tokens * 2 heads * 16 dims * 2 bytes) in page 3.
    assert pool.tensor[3, 32 * 2 * 16 * 2 : 2 * 32 * 2 * 16 * 2].view(torch.bfloat16).eq(1).all()
    assert views["k"].data_ptr() == pool.tensor.data_ptr()


def test_views_tile_every_page_exactly(rendered_families):
    for name in ("fx_mixed_t32", "fx_nvfp4_t32", "fx_mla_t32", "fx_sinks_t32"):
        rendered = rendered_families(name)
        model = rendered.sizing.MODELS[0]
        shim = make(rendered, model=model, scratch_reuse=True)
        for pool in shim.managers["target"].pools.values():
            if pool.kind == "scratch":
                continue
            per_page = sum(
                v[0].numel() * v.element_size()
                for views in pool.views.values()
                for v in views.values()
            )
            assert per_page == pool.page_bytes, (name, pool.name)


def test_fp8_mla_latent_view(rendered_families):
    shim = make(rendered_families("fx_mla_t32"), model="latent")
    latent = shim.layer_views("layers.1")["latent"]  # kind mla: 64 + 16, fp8
    assert latent.dtype == torch.float8_e4m3fn
    assert latent.shape[1:] == (32, 80)
    local = shim.layer_views("layers.0")["latent"]  # bf16 override: 32 + 16
    assert local.dtype == torch.bfloat16 and local.shape[1:] == (32, 48)


def test_nvfp4_packed_data_and_separate_fp8_scales(rendered_families):
    shim = make(rendered_families("fx_nvfp4_t32"), model="packed", speculative="pard2")
    views = shim.layer_views("layers.0")  # 2 heads x 32 dims nvfp4, 8 extra bytes
    assert set(views) == {"k", "k_scale", "v", "v_scale", "extra"}
    assert views["k"].dtype == torch.uint8 and views["k"].shape[1:] == (32, 2, 16)
    assert views["k_scale"].dtype == torch.float8_e4m3fn
    assert views["k_scale"].shape[1:] == (32, 2, 2)
    assert views["extra"].dtype == torch.uint8 and views["extra"].shape[1:] == (32, 8)
    fp8 = shim.layer_views("layers.2")["k"]
    assert fp8.dtype == torch.float8_e4m3fn and fp8.shape[1:] == (32, 2, 16)
    draft = shim.layer_views("draft.0", manager="draft")  # bf16 draft beside nvfp4
    assert draft["k"].dtype == torch.bfloat16


def test_raw_bytes_and_recurrent_state_views(rendered_families):
    raw = make(rendered_families("fx_sinks_t32"), model="sinky").layer_views("layers.2")
    assert raw["raw"].dtype == torch.uint8 and raw["raw"].shape[1:] == (32, 48)
    shim = make(rendered_families("fx_hybrid_t32"), model="mamba")
    state = shim.layer_views("layers.0")["state"]
    assert state.shape == (4 + 1, 4096)  # B = 4 slots + the CUDA-graph padding slot (§8)
    shim.add_request("a")
    assert shim.block_table("a", "state").item() == 0


def test_heads_are_replicated_when_fewer_than_tp_ranks(rendered_families):
    shim = make(rendered_families("fx_mqa_t32"), model="mqa", tp_size=8)
    assert shim.layer_views("layers.1")["k"].shape[2:] == (1, 64)


# --------------------------------------------------------------------------- page model


def test_block_tables_are_int32_of_max_blocks_per_seq(mixed):
    shim = make(mixed, speculative="eagle")
    sizing = mixed.sizing
    assert shim.max_blocks_per_seq == sizing.max_blocks_per_seq(
        "three", speculative="eagle", max_seq_len=600
    )
    shim.add_request(1)
    shim.context_chunk(1, 64)
    shim.context_chunk(1, 64)
    table = shim.block_table(1, "w100")
    assert table.dtype == torch.int32 and table.shape == (shim.max_blocks_per_seq,)
    history, capacity = shim.request_state(1)
    held = -(-capacity // 32)
    stale = (history + 1 - 100) // 32
    assert table[:stale].eq(-1).all()
    assert table[stale:held].ge(0).all() and table[held:].eq(-1).all()
    both = shim.block_tables([1, 1], "full")
    assert both.shape == (2, shim.max_blocks_per_seq)


def test_context_holds_capacity_plus_extra_tokens_then_releases_stale(mixed):
    # One pool per life cycle: w100's own page counts (fx_mixed's life cycles of equal slot
    # size would share one pool as the engine's pool group; tests/unit/test_pool_groups.py).
    shim = make(mixed, speculative="eagle", pool_groups="life_cycle")  # E = K-1 = 2
    shim.add_request(0)
    shim.begin_context(0, 64)
    assert shim.request_state(0) == (0, 66)
    assert shim.pool("w100").used == 3  # ceil(66 / 32), history still at 0
    shim.end_context(0)
    shim.begin_context(0, 64)
    assert shim.pool("w100").used == 5
    shim.end_context(0)  # history 128: pages [0, floor(29/32)) = none stale yet
    assert shim.pool("w100").used == 5
    check_invariants(shim)


def test_generation_step_grows_by_draft_slots_and_gives_back(mixed):
    shim = make(mixed, speculative="pard")  # K=2: E=1, a step adds 1 + 3 slots
    shim.add_request(0)
    shim.context_chunk(0, 10)
    assert shim.request_state(0) == (10, 11)
    shim.begin_generation([0])
    assert shim.request_state(0) == (10, 15)
    shim.end_generation([0], 3)
    assert shim.request_state(0) == (14, 15)
    with pytest.raises(Exception, match=r"accepted must be in \[0, 3\]"):
        shim.generation_step([0], 4)


def test_scratch_pages_live_only_during_the_chunk(mixed):
    shim = make(mixed, model="seven", scratch_reuse=True, max_num_tokens=512)
    shim.add_request(0)
    shim.begin_context(0, 512)
    scratch = shim.pool("w100/scratch")
    assert scratch.used == (512 + 1 - 100) // 32
    assert shim.pool("w100").used == -(-512 // 32) - scratch.used
    shim.end_context(0)
    assert scratch.used == 0
    check_invariants(shim)


def test_suspend_releases_and_resume_restores(mixed):
    shim = make(mixed, max_num_tokens=512)
    shim.add_request(0)
    shim.context_chunk(0, 300)
    before = shim.bytes_in_use()
    shim.suspend(0)
    assert shim.bytes_in_use() == {"target": 0} and shim.capacity_tokens == 0
    shim.resume(0)
    assert shim.bytes_in_use() == before
    check_invariants(shim)


# --------------------------------------------------------------------------- errors


def errors_of(shim):
    return sys.modules[type(shim).__module__]


def test_out_of_pages_is_typed_and_changes_nothing(mixed):
    shim = make(mixed, max_tokens=64, pool_groups="life_cycle")  # each pool on its own
    errors = errors_of(shim)
    shim.add_request(0)
    shim.add_request(1)
    shim.context_chunk(0, 64)
    snapshot = snapshot_state(shim)
    # Admission passes the resume watermark (TensorRT-LLM V2): a full pool refuses it.
    with pytest.raises(errors.ResumeRefusedError):
        shim.add_request(2)
    assert snapshot_state(shim) == snapshot
    with pytest.raises(errors.OutOfPagesError) as info:
        shim.begin_context(1, 64)
    assert (info.value.manager, info.value.pool) == ("target", "full")
    assert snapshot_state(shim) == snapshot
    with pytest.raises(errors.OutOfPagesError):
        for _ in range(200):
            shim.generation_step([0])
            snapshot = snapshot_state(shim)
    assert snapshot_state(shim) == snapshot
    check_invariants(shim)


def test_request_errors(mixed):
    shim = make(mixed)
    errors = errors_of(shim)
    shim.add_request("r")
    with pytest.raises(errors.DuplicateRequestError):
        shim.add_request("r")
    with pytest.raises(errors.UnknownRequestError):
        shim.free("nobody")
    shim.free("r")
    with pytest.raises(errors.DoubleFreeError):
        shim.free("r")
    assert issubclass(errors.DoubleFreeError, errors.AllocatorError)


def test_impossible_steps(mixed):
    shim = make(mixed, speculative="eagle", max_seq_len=40, max_batch_size=1)
    errors = errors_of(shim)
    shim.add_request(0)
    with pytest.raises(errors.InvalidStepError, match="no context"):
        shim.begin_generation([0])
    with pytest.raises(errors.InvalidStepError, match="max_num_tokens"):
        shim.begin_context(0, 65)
    with pytest.raises(errors.InvalidStepError, match="max_seq_len"):
        shim.begin_context(0, 41)
    with pytest.raises(errors.InvalidStepError, match="batch is full"):
        shim.add_request(1)
    shim.context_chunk(0, 38)
    snapshot = snapshot_state(shim)
    shim.begin_generation([0])
    with pytest.raises(errors.InvalidStepError, match="accepted must be"):
        shim.end_generation([0], 4)
    with pytest.raises(errors.InvalidStepError, match="exceeds max_seq_len"):
        shim.end_generation([0], 2)  # history 38 + 2 + 1 > 40
    shim.end_generation([0], 1)
    assert snapshot != snapshot_state(shim)
    with pytest.raises(errors.InvalidStepError, match="no generation step"):
        shim.end_generation([0], 0)
    with pytest.raises(errors.InvalidStepError, match="twice"):
        shim.begin_generation([0, 0])


def test_bad_arguments_name_the_argument(mixed):
    allocator = mixed.allocator
    base = {"max_batch_size": 1, "max_num_tokens": 1, "max_seq_len": 10, "max_tokens": 1}
    with pytest.raises(ValueError, match="model must be one of"):
        allocator.KVCacheShim("nope", **base)
    with pytest.raises(ValueError, match="speculative must be one of"):
        allocator.KVCacheShim("three", speculative="nope", **base)
    with pytest.raises(ValueError, match="max_seq_len must be <= 4096"):
        allocator.KVCacheShim("three", **{**base, "max_seq_len": 5000})
    with pytest.raises(ValueError, match="exactly one of max_tokens and quota_bytes"):
        allocator.KVCacheShim("three", quota_bytes=1 << 20, **base)
    with pytest.raises(ValueError, match="semantics"):
        allocator.KVCacheShim("three", semantics="v3", **base)


def test_quota_too_small(mixed):
    errors = mixed.allocator
    with pytest.raises(errors.QuotaTooSmallError):
        make(mixed, max_tokens=None, quota_bytes=100)


def test_pool_allocation_failure_is_typed(mixed, monkeypatch):
    allocator = mixed.allocator

    def refuse(*args, **kwargs):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(torch, "empty", refuse)
    with pytest.raises(allocator.PoolAllocationError, match="device='meta'"):
        make(mixed)


# --------------------------------------------------------------------------- quota and devices


def test_largest_tokens_for_a_quota(mixed):
    shim = make(mixed, max_tokens=None, quota_bytes=10_000_000, device="meta")
    tokens = shim.planned_tokens["target"]
    assert shim.quota_bytes()["target"] <= 10_000_000
    bigger = make(mixed, max_tokens=tokens + 32, device="meta")
    assert bigger.quota_bytes()["target"] > 10_000_000
    assert shim.max_tokens()["target"] >= tokens


def test_hundreds_of_gib_on_meta_without_allocating(mixed):
    shim = make(
        mixed,
        max_tokens=None,
        quota_bytes=400 * GiB,
        device="meta",
        max_batch_size=256,
        max_seq_len=4096,
        max_num_tokens=8192,
    )
    assert 399 * GiB < shim.quota_bytes()["target"] <= 400 * GiB
    assert all(p.tensor.is_meta for p in shim.managers["target"].pools.values())
    for rid in range(256):
        shim.add_request(rid)
    shim.context_chunk(0, 4096)
    for rid in range(1, 256):
        shim.context_chunk(rid, 1 + rid % 31)
    shim.generation_step(range(1, 256))
    assert shim.bytes_in_use()["target"] > 0


def test_device_selection_falls_back_to_cpu(mixed, monkeypatch):
    allocator = mixed.allocator
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert allocator.select_device(None).type == "cpu"
    assert allocator.select_device("meta").type == "meta"
    with pytest.warns(RuntimeWarning, match="CUDA is not available"):
        assert allocator.select_device("cuda").type == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert allocator.select_device(None).type == "cuda"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert allocator.select_device("cuda:0") == torch.device("cuda:0")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_pools(mixed):
    shim = make(mixed, device=None)
    assert shim.pool("full").tensor.is_cuda


# --------------------------------------------------------------------------- generated code


def test_generated_allocator_is_deterministic_and_imports_only_the_runtime(
    rendered_families, tmp_path
):
    from kvgen._generate.render import SpecInput, render
    from kvgen._spec.loader import load_family

    spec = ROOT / "tests" / "fixtures" / "specs" / "fx_mixed.yaml"
    first = render([SpecInput("x.yaml", spec.read_bytes(), load_family(spec))])
    second = render([SpecInput("x.yaml", spec.read_bytes(), load_family(spec))])
    text = first["fx_mixed/allocator.py"]
    assert text == second["fx_mixed/allocator.py"]
    tree = ast.parse(text)
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    # Generic logic lives in kvgen.runtime (issue 12): the module is tables over it.
    assert imported == {"__future__", "kvgen", "typing"}
    assert "from kvgen.runtime import allocator as _rt" in text
    module = rendered_families("fx_mixed_t32").allocator
    assert all(hasattr(module, name) for name in module.__all__)
    assert module.__doc__ and "Usage::" in module.__doc__
    path = tmp_path / "allocator.py"
    path.write_text(text)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--config",
            str(ROOT / "pyproject.toml"),
            str(path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout


def test_generator_never_imports_torch():
    source = (ROOT / "generator" / "_generate" / "allocator_context.py").read_text()
    assert "torch" not in {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    code = "import sys, kvgen._generate.render; print('torch' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "False"


def test_usage_block_of_the_docstring_runs(mixed):
    module = mixed.allocator
    usage = module.__doc__.split("Usage::")[1].split("Exceptions::")[0]
    code = "\n".join(line[4:] for line in usage.splitlines() if line.startswith("    "))
    code = code.replace("from generated.fx_mixed_t32 import allocator", "")
    namespace = {"allocator": module}
    exec(code, namespace)
    assert namespace["shim"].requests == ()


def test_layer_views_accept_the_model_layer_index(mixed):
    shim = make(mixed)
    by_index = shim.layer_views(0)
    by_name = shim.layer_views("layers.0")
    assert by_index.keys() == by_name.keys()
    for key in by_index:
        assert by_index[key].data_ptr() == by_name[key].data_ptr()
        assert by_index[key].shape == by_name[key].shape
    with pytest.raises(KeyError, match=r"holds no layer 'layers\.999'"):
        shim.layer_views(999)
