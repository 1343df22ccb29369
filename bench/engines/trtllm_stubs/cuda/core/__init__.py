"""CPU stand-in for ``cuda.core``'s NVRTC front end: compiling yields named kernels, which the
driver stand-in's ``cuLaunchKernel`` runs with numpy."""

from __future__ import annotations

from typing import Any


class ProgramOptions:
    def __init__(self, **options: Any) -> None:
        self.__dict__.update(options)


class Kernel:
    def __init__(self, name: str) -> None:
        self.name = name
        self._handle = self


class ObjectCode:
    def __init__(self, names: tuple[str, ...]) -> None:
        self._names = names

    def get_kernel(self, name: str) -> Kernel:
        if name not in self._names:
            raise KeyError(name)
        return Kernel(name)


class Program:
    def __init__(self, code: str, code_type: str, options: ProgramOptions | None = None) -> None:
        self.code = code

    def compile(self, target: str, name_expressions: tuple[str, ...] = ()) -> ObjectCode:
        return ObjectCode(tuple(name_expressions))
