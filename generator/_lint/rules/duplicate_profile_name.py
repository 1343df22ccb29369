"""Two speculative profiles with the same name.

## What it does
Reports a profile whose `name` was already used by an earlier profile.

## Why it matters
Profile names become names in the generated module (`SPECULATIVE`, the `speculative=`
argument); a duplicate would be unreachable or silently replace the first profile.

## Example
```yaml
speculative:
  - {name: mtp3, mode: mtp, max_draft_len: 3}
  - {name: mtp3, mode: mtp, max_draft_len: 4}
```

## Fix
Give every profile a distinct name, e.g. one that includes `max_draft_len`.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV214"
NAME = "duplicate-profile-name"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    seen: dict[str, int] = {}
    for i, profile in enumerate(ctx.family.speculative):
        if profile.name in seen:
            first = seen[profile.name]
            yield Finding(
                ("speculative", i, "name"),
                f"profile name '{profile.name}' is already used by speculative[{first}]",
                "give every profile a distinct name",
            )
        else:
            seen[profile.name] = i
