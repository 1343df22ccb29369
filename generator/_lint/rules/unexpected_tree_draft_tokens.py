"""`tree_draft_tokens` on a mode other than eagle3.

## What it does
Reports `tree_draft_tokens` on a profile whose mode is not `eagle3`.

## Why it matters
Only the one-model EAGLE3 dynamic tree drafts `T` tokens per step; its headroom is `K + T`
instead of `2K` (docs/cost-model.md §2). On any other mode the value is ignored, so the spec
claims a headroom the generated code does not use.

## Example
```yaml
- {name: mtp3, mode: mtp, max_draft_len: 3, tree_draft_tokens: 10}
```

## Fix
Remove `tree_draft_tokens`, or use `mode: eagle3` if the drafter really is a dynamic tree.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV210"
NAME = "unexpected-tree-draft-tokens"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for i, profile in enumerate(ctx.family.speculative):
        if profile.tree_draft_tokens is not None and profile.mode != "eagle3":
            yield Finding(
                ("speculative", i, "tree_draft_tokens"),
                f"profile '{profile.name}': tree_draft_tokens only applies to mode 'eagle3', "
                f"not '{profile.mode}'",
                "remove tree_draft_tokens",
                at="key",
            )
