"""The one CUDA runtime call the engine makes: ``cudaFree(0)`` to create the context."""

import enum


class cudaError_t(enum.IntEnum):
    cudaSuccess = 0


def cudaFree(ptr: int) -> tuple[cudaError_t]:
    return (cudaError_t.cudaSuccess,)
