"""`draft` given for a mode without a separate draft pool.

## What it does
Reports `draft` on a profile whose mode is not `pard`, `dflash` or `draft_target`.

## Why it matters
Only one-model external drafters split the GPU budget with a separate draft pool
(docs/cost-model.md §6). For other modes the layers would be silently ignored (ngram has no
drafter KV; two-model modes size their drafter in another engine), or they belong under
`extra_layers` (eagle3, mtp, mtp_eagle keep draft layers in the target's own manager).

## Example
```yaml
- name: eagle
  mode: eagle3
  max_draft_len: 4
  draft:
    layer_kinds: {d: {attention: full, kv_heads: 8, head_dim: 128}}
    layers: {count: 1, pattern: [d]}
```

## Fix
Remove `draft`, or move it to `extra_layers` for eagle3, mtp and mtp_eagle.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext
from kvgen._spec.models import MODES_WITH_DRAFT_POOL, MODES_WITH_EXTRA_LAYERS

CODE = "KV208"
NAME = "unexpected-draft-pool"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for i, profile in enumerate(ctx.family.speculative):
        if profile.draft is None or profile.mode in MODES_WITH_DRAFT_POOL:
            continue
        fix = "remove 'draft'"
        if profile.mode in MODES_WITH_EXTRA_LAYERS:
            fix = "rename 'draft' to 'extra_layers'; this mode keeps draft layers in the target"
        yield Finding(
            ("speculative", i, "draft"),
            f"profile '{profile.name}': mode '{profile.mode}' has no separate draft pool",
            fix,
            at="key",
        )
