"""Two models with the same name.

## What it does
Reports a model whose `name` was already used by an earlier model of the family.

## Why it matters
Model names become names in the generated module (`MODELS`, the `model=` argument of
`cache_costs`); a second model with the same name would be unreachable or overwrite the first.

## Example
```yaml
models:
  - name: gemma3_27b
    ...
  - name: gemma3_27b
    ...
```

## Fix
Give every model a distinct name.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV213"
NAME = "duplicate-model-name"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    seen: dict[str, int] = {}
    for i, model in enumerate(ctx.family.models):
        if model.name in seen:
            yield Finding(
                ("models", i, "name"),
                f"model name '{model.name}' is already used by models[{seen[model.name]}]",
                "give every model a distinct name",
            )
        else:
            seen[model.name] = i
