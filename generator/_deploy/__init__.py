"""From the hardware to the launch settings: ``kvgen plan --gpu ... --emit ENGINE``.

- ``kvgen._deploy.gpus``: GPU memory by name (reported or nominal, labelled) or as a size.
- ``kvgen._deploy.budget``: each engine's memory fraction (defaults read from the engines'
  config classes) and the arithmetic GPU memory, fraction, weights per rank, reserve -> the KV
  budget per rank.
- ``kvgen._deploy.emit``: the settings that make vLLM, SGLang or TensorRT-LLM allocate exactly
  the capacity of the generated module's ``engine_capacity``, in the engines' field names.
- ``kvgen._deploy.rank``: one model on one engine (``plan_rank``); ``kvgen._deploy.deployment``:
  several models on one node from a TOML file; ``kvgen._deploy.report``: their text and JSON.
  The ``kvgen plan`` flags are the command's (``kvgen._cli.commands._hardware``), which hands these
  modules one frozen ``Deployment`` per model, never the parsed arguments.

docs/deploy.md describes the arithmetic, the settings and their sources.
"""
