"""A layer-by-layer reference of the static cost model, for the tests only (see costmodel)."""
