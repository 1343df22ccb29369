"""A speculative mode that needs a separate draft pool has no `draft`.

## What it does
Reports a profile whose `mode` is `pard`, `dflash` or `draft_target` (one-model external
drafters) but which does not describe the drafter's layers under `draft`.

## Why it matters
These drafters keep their own KV cache pool inside the same GPU budget (docs/cost-model.md §6).
Without its shape the draft pool's cost cannot be computed, and deriving it as "total minus
target" is a known drift source (docs/cost-model.md §7, item 7).

## Example
```yaml
speculative:
  - {name: pard4, mode: pard, max_draft_len: 4}
```

## Fix
Describe the drafter's layers:
```yaml
  - name: pard4
    mode: pard
    max_draft_len: 4
    draft:
      layer_kinds: {d: {attention: full, kv_heads: 8, head_dim: 128}}
      layers: {count: 2, pattern: [d]}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext
from kvgen._spec.models import MODES_WITH_DRAFT_POOL

CODE = "KV207"
NAME = "missing-draft-pool"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for i, profile in enumerate(ctx.family.speculative):
        if profile.mode in MODES_WITH_DRAFT_POOL and profile.draft is None:
            yield Finding(
                ("speculative", i, "mode"),
                f"profile '{profile.name}': mode '{profile.mode}' keeps a separate draft pool, "
                "but no 'draft' is given",
                "add 'draft:' with the drafter's layer_kinds and layers",
            )
