"""A speculative profile that names a model the family does not have.

## What it does
Reports an entry of a profile's `models` list that is not the `name` of a model of the family.

## Why it matters
EAGLE3 heads and draft models are released per target model, so a profile may list the models
it applies to; the generated modules refuse the profile for every other model. A misspelt or
removed model name silently leaves the profile usable with fewer models than intended (or
with none at all).

## Example
```yaml
models:
  - name: llama3_1_8b
    ...
speculative:
  - name: eagle3
    mode: eagle3
    max_draft_len: 3
    models: [llama3_8b]
```

## Fix
Name one of the family's models (`models: [llama3_1_8b]`), or drop `models` to apply the
profile to every model.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV224"
NAME = "unknown-profile-model"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    known = [model.name for model in ctx.family.models]
    for i, profile in enumerate(ctx.family.speculative):
        for j, name in enumerate(profile.models or ()):
            if name not in known:
                yield Finding(
                    ("speculative", i, "models", j),
                    f"profile '{profile.name}' names unknown model '{name}'",
                    f"use one of: {', '.join(sorted(known))}",
                )
