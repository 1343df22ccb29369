"""GPU memory sizes by name (``--gpu H100-80GB``) or as a size (``--gpu 80GiB``).

A size is the memory the device reports as its total, which is what the engines multiply by
their memory fraction. Where the reported figure could be sourced it is used and labelled
"reported": the ``memory.total`` that ``nvidia-smi`` prints in MiB (SGLang reads exactly that
figure, ``sglang.srt.utils.common.get_nvgpu_memory_capacity``), taken from public nvidia-smi
output of that board. CUDA's ``torch.cuda.get_device_properties(0).total_memory`` counts the
same memory; where a board's driver keeps a little back the two can differ by a few MiB, so on
a real node pass ``--gpu <total_memory>B`` for the exact figure. Every other entry is the
vendor's nominal capacity, labelled "nominal".
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GPUS", "Gpu", "GpuError", "resolve"]

MiB = 1 << 20
GiB = 1 << 30


class GpuError(ValueError):
    """An unknown GPU name or an unreadable size; the message says what is accepted."""


@dataclass(frozen=True)
class Gpu:
    name: str
    total_bytes: int
    source: str  # "reported (...)", "nominal (...)" or "given"

    @property
    def nominal(self) -> bool:
        return self.source.startswith("nominal")


def _reported(name: str, mib: int, board: str) -> Gpu:
    return Gpu(name, mib * MiB, f"reported: nvidia-smi memory.total {mib} MiB ({board})")


def _nominal(name: str, gib: int) -> Gpu:
    return Gpu(name, gib * GiB, f"nominal: the vendor's {gib} GB, read as {gib} GiB")


GPUS: dict[str, Gpu] = {
    gpu.name: gpu
    for gpu in (
        _reported("H100-80GB", 81559, "NVIDIA H100 80GB HBM3"),
        _reported("H200", 143771, "NVIDIA H200"),
        _reported("A100-80GB", 81920, "NVIDIA A100-SXM4-80GB"),
        _reported("B200", 183359, "NVIDIA B200"),
        _reported("L40S", 46068, "NVIDIA L40S"),
        _nominal("A100-40GB", 40),
        _nominal("H100-NVL", 94),
        _nominal("H20", 96),
        _nominal("L4", 24),
        _nominal("A10", 24),
        _nominal("MI300X", 192),
    )
}
ALIASES = {"H100": "H100-80GB", "A100": "A100-80GB", "H200-141GB": "H200", "B200-180GB": "B200"}


def resolve(text: str) -> Gpu:
    """The GPU named by ``text`` (case-insensitive), or a size with a unit."""
    from kvgen._util.units import parse_size

    folded = {name.lower(): name for name in [*GPUS, *ALIASES]}
    name = folded.get(text.strip().lower())
    if name is not None:
        return GPUS[ALIASES.get(name, name)]
    if text[:1].isdigit():
        if text.strip().isdigit():
            raise GpuError(f"--gpu {text}: a size needs a unit (80GiB, 80GB, {text}B for bytes)")
        try:
            return Gpu(text, parse_size(text), "given")
        except ValueError as exc:
            raise GpuError(f"--gpu: {exc}") from None
    from kvgen._util.suggest import did_you_mean

    hint = did_you_mean(text, list(folded.values()))
    raise GpuError(
        f"--gpu {text!r} is not a known GPU{hint}; known: {', '.join(GPUS)}, or give the "
        "memory the device reports as a size (80GiB, 85520809984B)"
    )
