"""CPU stand-in for the engine's C++ batched copies (``kv_cache_manager_v2_utils``).

Each copy is synchronous and returns 0 (CUDA_SUCCESS). Device addresses live in the driver
stand-in's integer address space, host addresses are real process memory (the engine's own
``aligned_alloc``), disk addresses are the engine's own temporary-file descriptors.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from typing import Any, NamedTuple

from cuda.bindings.driver import DEVICE


class DiskAddress(NamedTuple):
    fd: int
    pos: int


class MemToMemTask(NamedTuple):
    dst: int
    src: int


class DiskToDiskTask(NamedTuple):
    dst: DiskAddress
    src: DiskAddress


class DiskToHostTask(NamedTuple):
    dst: int
    src: DiskAddress


class HostToDiskTask(NamedTuple):
    dst: DiskAddress
    src: int


def _host_read(address: int, size: int) -> bytes:
    return ctypes.string_at(address, size)


def _host_write(address: int, payload: bytes) -> None:
    ctypes.memmove(address, payload, len(payload))


def _disk_read(address: DiskAddress, size: int) -> bytes:
    return os.pread(address.fd, size, address.pos)


def _disk_write(address: DiskAddress, payload: bytes) -> None:
    os.pwrite(address.fd, payload, address.pos)


def _device_read(address: int, size: int) -> bytes:
    return DEVICE.read(int(address), size)


def _device_write(address: int, payload: bytes) -> None:
    DEVICE.write(int(address), payload)


def _copy(tasks: Sequence[Any], size: int, read: Any, write: Any) -> int:
    for task in tasks:
        write(task.dst, read(task.src, size))
    return 0


def copy_device_to_device(tasks: Sequence[MemToMemTask], size: int, stream: Any) -> int:
    return _copy(tasks, size, _device_read, _device_write)


def copy_device_to_host(tasks: Sequence[MemToMemTask], size: int, stream: Any) -> int:
    return _copy(tasks, size, _device_read, _host_write)


def copy_host_to_device(tasks: Sequence[MemToMemTask], size: int, stream: Any) -> int:
    return _copy(tasks, size, _host_read, _device_write)


def copy_host_to_host(tasks: Sequence[MemToMemTask], size: int, stream: Any) -> int:
    return _copy(tasks, size, _host_read, _host_write)


def copy_disk_to_disk(tasks: Sequence[DiskToDiskTask], size: int, stream: Any) -> int:
    return _copy(tasks, size, _disk_read, _disk_write)


def copy_disk_to_host(tasks: Sequence[DiskToHostTask], size: int, stream: Any) -> int:
    return _copy(tasks, size, _disk_read, _host_write)


def copy_host_to_disk(tasks: Sequence[HostToDiskTask], size: int, stream: Any) -> int:
    return _copy(tasks, size, _host_read, _disk_write)
