"""kvgen's CPU stand-ins for the CUDA driver that TensorRT-LLM's V2 manager runs under
(``bench/engines/trtllm_stubs/``): the behaviour the engine's storage layer relies on."""

from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")

STUBS = Path(__file__).resolve().parents[2] / "bench" / "engines" / "trtllm_stubs"


def load(relative: str, name: str):
    spec = importlib.util.spec_from_file_location(name, STUBS / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def drv():
    return load("cuda/bindings/driver.py", "kvgen_test_trtllm_driver")


def test_fabric_handles_are_refused_so_the_engine_falls_back(drv):
    prop = drv.CUmemAllocationProp()
    prop.requestedHandleTypes = drv.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_FABRIC
    err, _handle = drv.cuMemCreate(2 << 20, prop, 0)
    assert err == drv.CUresult.CUDA_ERROR_NOT_SUPPORTED
    prop.requestedHandleTypes = drv.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_NONE
    err, handle = drv.cuMemCreate(2 << 20, prop, 0)
    assert err == drv.CUresult.CUDA_SUCCESS and int(handle) > 0


def test_a_chunk_gets_memory_only_when_written_and_keeps_it_across_mappings(drv):
    size = 2 << 20
    _err, base = drv.cuMemAddressReserve(4 * size, 0, 0, 0)
    assert int(base) >= 1 << 48
    _err, chunk = drv.cuMemCreate(size, drv.CUmemAllocationProp(), 0)
    drv.cuMemMap(base, size, 0, chunk, 0)
    assert drv.DEVICE.read(int(base) + 100, 4) == bytes(4)  # unwritten: zeros, nothing held
    assert int(chunk) not in drv.DEVICE.chunk_data
    drv.DEVICE.write(int(base) + 100, b"kvgn")
    drv.cuMemUnmap(base, size)
    drv.cuMemMap(int(base) + size, size, 0, chunk, 0)  # the same chunk, elsewhere
    assert drv.DEVICE.read(int(base) + size + 100, 4) == b"kvgn"


def test_events_complete_at_once_and_memory_reports_80_gib(drv):
    _err, event = drv.cuEventCreate(0)
    assert drv.cuEventQuery(event) == (drv.CUresult.CUDA_SUCCESS,)
    assert drv.cuMemGetInfo() == (drv.CUresult.CUDA_SUCCESS, 80 << 30, 80 << 30)


def test_the_unit_tests_kernels_fill_and_check_values(drv):
    core = load("cuda/core/__init__.py", "kvgen_test_trtllm_core")
    program = core.Program("", "c++", core.ProgramOptions())
    module = program.compile("cubin", name_expressions=("fillValues", "checkValues"))
    size = 2 << 20
    _err, base = drv.cuMemAddressReserve(size, 0, 0, 0)
    _err, chunk = drv.cuMemCreate(size, drv.CUmemAllocationProp(), 0)
    drv.cuMemMap(base, size, 0, chunk, 0)

    class Tokens(ctypes.Structure):
        _fields_ = [("tokens", ctypes.c_uint32 * 4)]

    args = (int(base), 2, 7, 1, 0, Tokens((ctypes.c_uint32 * 4)(5, 6, 0, 0)), 2)
    launch = (1, 1, 1, 256, 1, 1, 0, 0, (args, None), 0)
    ok = (drv.CUresult.CUDA_SUCCESS,)
    assert drv.cuLaunchKernel(module.get_kernel("fillValues")._handle, *launch) == ok
    # 2 tokens x 2 values of (token, layer, buf_id, beam) as uint32: 64 bytes.
    words = np.frombuffer(drv.DEVICE.read(int(base), 64), dtype="<u4").tolist()
    assert words == [5, 7, 1, 0] * 2 + [6, 7, 1, 0] * 2
    assert drv.cuLaunchKernel(module.get_kernel("checkValues")._handle, *launch) == ok
    drv.DEVICE.write(int(base), b"\xff")
    assert drv.cuLaunchKernel(module.get_kernel("checkValues")._handle, *launch)[0] != 0
