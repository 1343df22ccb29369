"""CPU stand-in for cuda-python's ``cuda.bindings`` (see ../../README.md)."""
