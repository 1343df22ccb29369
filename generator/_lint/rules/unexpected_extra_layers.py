"""`extra_layers` given for a mode that does not keep draft layers in the target.

## What it does
Reports `extra_layers` on a profile whose mode is not `eagle3`, `mtp` or `mtp_eagle`.

## Why it matters
Only one-model EAGLE3 and MTP drafters add their layers to the target's own cache manager. For
an external drafter those layers belong to the separate `draft` pool (sized from its own budget
share, docs/cost-model.md §6); elsewhere they would be charged to a manager that never holds
them.

## Example
```yaml
- name: pard4
  mode: pard
  max_draft_len: 4
  extra_layers:
    layer_kinds: {d: {attention: full, kv_heads: 8, head_dim: 128}}
    layers: {count: 1, pattern: [d]}
```

## Fix
Remove `extra_layers`, or move them to `draft` for pard, dflash and draft_target.
"""

from __future__ import annotations

from collections.abc import Iterator

from kvgen._lint.rules._base import Finding, RuleContext
from kvgen._spec.models import MODES_WITH_DRAFT_POOL, MODES_WITH_EXTRA_LAYERS

CODE = "KV209"
NAME = "unexpected-extra-layers"
SEVERITY = "error"


def check(ctx: RuleContext) -> Iterator[Finding]:
    for i, profile in enumerate(ctx.family.speculative):
        if profile.extra_layers is None or profile.mode in MODES_WITH_EXTRA_LAYERS:
            continue
        fix = "remove 'extra_layers'"
        if profile.mode in MODES_WITH_DRAFT_POOL:
            fix = "rename 'extra_layers' to 'draft'; this mode keeps a separate draft pool"
        yield Finding(
            ("speculative", i, "extra_layers"),
            f"profile '{profile.name}': mode '{profile.mode}' does not hold draft layers "
            "in the target's cache",
            fix,
            at="key",
        )
