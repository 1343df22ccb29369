"""What vLLM, SGLang and TensorRT-LLM allocate for a spec (``capacity``, with one module per
engine), TensorRT-LLM's budgets and pool groups, and one deployment's plan from a generated
module (``planner``, its records in ``plans``).
"""
