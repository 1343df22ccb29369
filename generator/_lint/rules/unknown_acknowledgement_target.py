"""An acknowledgement names a model or profile that does not exist.

## What it does
Reports an entry of `acknowledge` whose `model` is neither `*` nor a model of the family, or
whose `profile` is neither `*`, `none` nor a declared profile.

## Why it matters
Acknowledgements approve a reviewed capacity-reducing or API change. One that names nothing
approves nothing, while the reviewer believes the change was signed off; it is usually a typo
or a stale entry after a rename.

## Example
```yaml
acknowledge:
  - {change: capacity-reducing, model: gemma3_72b, reason: "window fix"}
```

## Fix
Use an existing name or `*`, or delete the stale entry.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV220"
NAME = "unknown-acknowledgement-target"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    family = ctx.family
    models = {model.name for model in family.models}
    profiles = set(family.profile_names)
    for i, ack in enumerate(family.acknowledge):
        if ack.model != "*" and ack.model not in models:
            yield Finding(
                ("acknowledge", i, "model"),
                f"acknowledgement names unknown model '{ack.model}'",
                f"use '*' or one of: {', '.join(sorted(models))}",
            )
        if ack.profile != "*" and ack.profile not in profiles:
            yield Finding(
                ("acknowledge", i, "profile"),
                f"acknowledgement names unknown profile '{ack.profile}'",
                f"use '*' or one of: {', '.join(sorted(profiles))}",
            )
