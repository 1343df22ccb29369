"""Models of one family whose `architecture`s the engines treat differently.

## What it does
Reports a model whose `architecture` (config.json `architectures[0]`) an engine runs
differently from the family's first model naming one: another support verdict, cache layout
or recurrent mixer (SGLang's hybrid-SWA architectures, vLLM's Gated DeltaNet and Kimi Delta
Attention mixers, the architectures vLLM or SGLang cannot load).

## Why it matters
vLLM and SGLang choose a model class by the architecture, and with it whether they run the
model at all, whether SGLang keeps sliding layers in a pool of their own and how vLLM shapes a
recurrent state. kvgen writes those choices once per family (its generated tables), so
models the engines treat differently cannot share one family: one of them would be planned
as the other.

## Example
```yaml
models:
  - name: a
    architecture: GptOssForCausalLM  # SGLang: hybrid SWA
  - name: b
    architecture: LlamaForCausalLM  # SGLang: one token pool
```

## Fix
Put the model in a family of its own (`kvgen import-hf --family NAME`), or correct its
`architecture` from its config.json.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext
from kvgen._model.engine_rows import architecture_arch

CODE = "KV247"
NAME = "architectures-disagree"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    first = None
    for i, model in enumerate(ctx.family.models):
        if model.architecture is None:
            continue
        if first is None:
            first = model
            continue
        if architecture_arch(model.architecture) != architecture_arch(first.architecture):
            yield Finding(
                ("models", i, "architecture"),
                f"architecture {model.architecture} of model '{model.name}' is run by the "
                f"engines unlike {first.architecture} of model '{first.name}' (support, "
                "cache pools or recurrent mixer), and a family has one engine behaviour",
                "put the model in a family of its own, or correct its architecture from "
                "its config.json",
            )
