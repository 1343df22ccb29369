"""An EAGLE3 tree with fewer draft tokens than its depth.

## What it does
Warns when `tree_draft_tokens` (T, all tokens of the dynamic tree) is smaller than
`max_draft_len` (K, the tree's depth).

## Why it matters
A tree of depth K holds at least one token per level, so `T >= K`. With a smaller T the headroom
`K + T` (docs/cost-model.md §2) is under-sized, and the generated quota admits more tokens than
the runtime can hold. It usually means T was given per level instead of in total.

## Example
```yaml
- {name: eagle_tree, mode: eagle3, max_draft_len: 6, tree_draft_tokens: 4}
```

## Fix
Give the total number of draft tokens in the tree (at least `max_draft_len`).
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext

CODE = "KV223"
NAME = "tree-smaller-than-draft-len"
SEVERITY = "warning"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for i, profile in enumerate(ctx.family.speculative):
        tree = profile.tree_draft_tokens
        if tree is not None and tree < profile.max_draft_len:
            yield Finding(
                ("speculative", i, "tree_draft_tokens"),
                f"profile '{profile.name}': tree_draft_tokens {tree} is smaller than "
                f"max_draft_len {profile.max_draft_len}",
                "give the total number of tokens in the tree",
            )
