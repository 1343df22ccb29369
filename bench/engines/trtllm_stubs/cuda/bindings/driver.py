"""CPU stand-in for the CUDA driver calls of TensorRT-LLM's KV cache manager V2 storage layer.

Every call returns what cuda-python returns (a tuple headed by a ``CUresult``), so the engine's
own ``_unwrap`` handling runs unchanged. Work is synchronous: streams and events are complete
as soon as they exist. Device memory is modelled, not allocated: ``cuMemAddressReserve`` hands
out integer ranges above 2**48, ``cuMemCreate`` makes a chunk id, ``cuMemMap`` binds a chunk to
an address, and a chunk gets a host ``bytearray`` only when something is written into it.
"""

from __future__ import annotations

import bisect
import ctypes
import enum
import itertools
from types import SimpleNamespace
from typing import Any

import numpy as np


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_NOT_READY = 600
    CUDA_ERROR_LAUNCH_FAILED = 719
    CUDA_ERROR_NOT_PERMITTED = 800
    CUDA_ERROR_NOT_SUPPORTED = 801


OK = CUresult.CUDA_SUCCESS


# Handle types: plain ints, as cuda-python's handles convert with int().
class CUdeviceptr(int):
    pass


class CUmemGenericAllocationHandle(int):
    pass


class CUevent(int):
    pass


class CUstream(int):
    pass


class CUdevice(int):
    pass


class CUmemAllocationType(enum.IntEnum):
    CU_MEM_ALLOCATION_TYPE_PINNED = 1


class CUmemLocationType(enum.IntEnum):
    CU_MEM_LOCATION_TYPE_DEVICE = 1


class CUmemAllocationHandleType(enum.IntEnum):
    CU_MEM_HANDLE_TYPE_NONE = 0
    CU_MEM_HANDLE_TYPE_FABRIC = 8


class CUmemAccess_flags(enum.IntEnum):
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3


class CUevent_flags(enum.IntEnum):
    CU_EVENT_DISABLE_TIMING = 2


class CUstream_flags(enum.IntEnum):
    CU_STREAM_NON_BLOCKING = 1


CU_MEMHOSTREGISTER_PORTABLE = 1
CU_MEMHOSTREGISTER_DEVICEMAP = 2
CU_STREAM_WAIT_VALUE_COMPLETED = 1


class CUmemAllocationProp:
    def __init__(self) -> None:
        self.type = 0
        self.location = SimpleNamespace(type=0, id=0)
        self.allocFlags = SimpleNamespace(gpuDirectRDMACapable=0)
        self.requestedHandleTypes = CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_NONE


class CUmemAccessDesc:
    def __init__(self) -> None:
        self.location = SimpleNamespace(type=0, id=0)
        self.flags = 0


TOTAL_MEMORY = 80 << 30
_ADDRESS_BASE = 1 << 48
_ALIGN = 2 << 20


class _DeviceMemory:
    """Integer address ranges, chunk ids and the mappings between them."""

    def __init__(self) -> None:
        self.next_address = _ADDRESS_BASE
        self.chunk_ids = itertools.count(1)
        self.chunk_size: dict[int, int] = {}
        self.chunk_data: dict[int, bytearray] = {}
        self.map_starts: list[int] = []  # sorted mapped addresses
        self.map_chunks: dict[int, int] = {}  # mapped address -> chunk id

    def reserve(self, size: int) -> int:
        address = self.next_address
        self.next_address += -(-size // _ALIGN) * _ALIGN + _ALIGN
        return address

    def _locate(self, address: int) -> tuple[int, int, int]:
        """(chunk id, offset in chunk, bytes left in chunk) of a mapped address."""
        i = bisect.bisect_right(self.map_starts, address) - 1
        if i < 0:
            raise ValueError(f"device address {address:#x} is not mapped")
        start = self.map_starts[i]
        chunk = self.map_chunks[start]
        offset = address - start
        size = self.chunk_size[chunk]
        if offset >= size:
            raise ValueError(f"device address {address:#x} is not mapped")
        return chunk, offset, size - offset

    def read(self, address: int, size: int) -> bytes:
        out = bytearray()
        while size > 0:
            chunk, offset, left = self._locate(address)
            n = min(size, left)
            data = self.chunk_data.get(chunk)
            out += bytes(n) if data is None else data[offset : offset + n]
            address, size = address + n, size - n
        return bytes(out)

    def write(self, address: int, payload: bytes) -> None:
        view = memoryview(payload)
        while view:
            chunk, offset, left = self._locate(address)
            n = min(len(view), left)
            data = self.chunk_data.get(chunk)
            if data is None:
                data = self.chunk_data[chunk] = bytearray(self.chunk_size[chunk])
            data[offset : offset + n] = view[:n]
            address, view = address + n, view[n:]


DEVICE = _DeviceMemory()
_handles = itertools.count(1)


def cuGetErrorString(error: Any) -> tuple[CUresult, str]:
    return OK, CUresult(int(error)).name


def cuCtxGetDevice() -> tuple[CUresult, CUdevice]:
    return OK, CUdevice(0)


def cuMemGetInfo() -> tuple[CUresult, int, int]:
    return OK, TOTAL_MEMORY, TOTAL_MEMORY


def cuMemCreate(size: int, prop: CUmemAllocationProp, flags: int) -> tuple[CUresult, Any]:
    if prop.requestedHandleTypes == CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_FABRIC:
        return CUresult.CUDA_ERROR_NOT_SUPPORTED, CUmemGenericAllocationHandle(0)
    chunk = next(DEVICE.chunk_ids)
    DEVICE.chunk_size[chunk] = size
    return OK, CUmemGenericAllocationHandle(chunk)


def cuMemRelease(handle: Any) -> tuple[CUresult]:
    DEVICE.chunk_size.pop(int(handle), None)
    DEVICE.chunk_data.pop(int(handle), None)
    return (OK,)


def cuMemAddressReserve(size: int, alignment: int, addr: int, flags: int) -> tuple[CUresult, Any]:
    return OK, CUdeviceptr(DEVICE.reserve(size))


def cuMemAddressFree(ptr: Any, size: int) -> tuple[CUresult]:
    return (OK,)


def cuMemMap(ptr: Any, size: int, offset: int, handle: Any, flags: int) -> tuple[CUresult]:
    address = int(ptr)
    bisect.insort(DEVICE.map_starts, address)
    DEVICE.map_chunks[address] = int(handle)
    return (OK,)


def cuMemUnmap(ptr: Any, size: int) -> tuple[CUresult]:
    address = int(ptr)
    DEVICE.map_starts.remove(address)
    del DEVICE.map_chunks[address]
    return (OK,)


def cuMemSetAccess(ptr: Any, size: int, descs: Any, count: int) -> tuple[CUresult]:
    return (OK,)


def cuMemHostRegister(ptr: int, size: int, flags: int) -> tuple[CUresult]:
    return (OK,)


def cuMemHostUnregister(ptr: int) -> tuple[CUresult]:
    return (OK,)


def cuEventCreate(flags: int) -> tuple[CUresult, CUevent]:
    return OK, CUevent(next(_handles))


def cuEventDestroy(event: Any) -> tuple[CUresult]:
    return (OK,)


def cuEventRecord(event: Any, stream: Any) -> tuple[CUresult]:
    return (OK,)


def cuEventQuery(event: Any) -> tuple[CUresult]:
    return (OK,)


def cuEventSynchronize(event: Any) -> tuple[CUresult]:
    return (OK,)


def cuStreamCreate(flags: int) -> tuple[CUresult, CUstream]:
    return OK, CUstream(next(_handles))


def cuStreamDestroy(stream: Any) -> tuple[CUresult]:
    return (OK,)


def cuStreamWaitEvent(stream: Any, event: Any, flags: int) -> tuple[CUresult]:
    return (OK,)


def cuStreamSynchronize(stream: Any) -> tuple[CUresult]:
    return (OK,)


def cuMemcpyDtoHAsync(dst: int, src: int, size: int, stream: Any) -> tuple[CUresult]:
    ctypes.memmove(dst, DEVICE.read(int(src), size), size)
    return (OK,)


_VALUE = np.dtype([("token", "<u4"), ("layer", "<u4"), ("buf_id", "<u4"), ("beam", "<u4")])


def cuLaunchKernel(kernel: Any, *launch: Any) -> tuple[CUresult]:
    """The unit tests' ``fillValues`` / ``checkValues``: one 16-byte value per thread, each token
    repeated ``values_per_token`` times (kernels.py)."""
    args, _types = launch[8]
    address, per_token, layer, buf_id, beam, tokens, num_tokens = args
    ids = np.frombuffer(bytes(tokens), dtype="<u4")[:num_tokens]
    values = np.zeros((num_tokens, per_token), dtype=_VALUE)
    values["token"] = ids[:, None]
    values["layer"], values["buf_id"], values["beam"] = layer, buf_id, beam
    expected = values.tobytes()
    if kernel.name == "fillValues":
        DEVICE.write(int(address), expected)
        return (OK,)
    if DEVICE.read(int(address), len(expected)) != expected:
        return (CUresult.CUDA_ERROR_LAUNCH_FAILED,)
    return (OK,)
