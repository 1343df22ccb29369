"""Leaf helpers under every other layer: byte sizes, exit codes, escaping, suggestions, colour,
progress, version; a finding (``diagnostics``) and the registry of its codes (``codes``); every
read and write of a working tree's files (``files``), the line rule and TOML reading. Nothing
here imports a spec model, a renderer or an engine.
"""
