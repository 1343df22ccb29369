"""A speculative profile named "none".

## What it does
Reports a profile whose `name` is `none`.

## Why it matters
The profile `none` (no speculative decoding) always exists implicitly and is the default of
every generated function; a declared `none` would shadow it or collide with it.

## Example
```yaml
speculative:
  - {name: none, mode: ngram, max_draft_len: 4}
```

## Fix
Rename the profile (e.g. `ngram4`), or delete it if it meant "no speculation".
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV215"
NAME = "reserved-profile-name"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for i, profile in enumerate(ctx.family.speculative):
        if profile.name == "none":
            yield Finding(
                ("speculative", i, "name"),
                "profile name 'none' is reserved for the implicit no-speculation profile",
                f"rename it, e.g. '{profile.mode}{profile.max_draft_len}'",
            )
