"""The sizing runtime (stdlib only): what every generated sizing module runs on.

Generation copies this folder whole into every output folder as ``_kvgen_runtime`` (the modules
keep their names there: ``kvgen._generate.vendored.SIZING_MODULES``), so its modules import
each other relatively and nothing else of kvgen. kvgen binds the same modules in memory where
it needs a cost itself (``kvgen._generate.sizing_context.bound_module``).
"""
