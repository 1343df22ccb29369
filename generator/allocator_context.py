"""Template context of ``generated/<family>/allocator.py`` (placeholder until the shim lands)."""
