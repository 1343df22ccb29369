"""The central registry of diagnostic codes, and the semantic lint rules (one per module).

Codes are stable forever. A retired code stays in ``RETIRED`` and is never reused.

- ``KV0xx`` reading the file, ``KV1xx`` the schema: emitted by ``kvgen.loader``, documented
  in ``_reader_codes``.
- ``KV2xx`` semantic rules: each module in ``LINT_RULE_MODULES`` defines ``CODE``, ``NAME``,
  ``SEVERITY`` and ``check(ctx)``; its docstring is the rule's documentation.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache

from kvgen.diagnostics import Severity
from kvgen.rules._base import Finding, RuleContext
from kvgen.rules._import_codes import IMPORT_DOCS
from kvgen.rules._reader_codes import READER_CODES

__all__ = ["LINT_RULE_MODULES", "RETIRED", "RuleInfo", "all_rules", "find_rule", "lint_rules"]

# In code order. Adding a rule: a new module here with the next free KV2xx code.
LINT_RULE_MODULES: tuple[str, ...] = (
    "tokens_per_block_not_power_of_two",  # KV201
    "window_covers_max_seq_len",  # KV202
    "window_on_non_sliding_kind",  # KV203
    "sliding_kind_without_window",  # KV204
    "undefined_pattern_kind",  # KV205
    "unused_layer_kind",  # KV206
    "missing_draft_pool",  # KV207
    "unexpected_draft_pool",  # KV208
    "unexpected_extra_layers",  # KV209
    "unexpected_tree_draft_tokens",  # KV210
    "implicit_draft_dtype",  # KV211
    "nvfp4_element_count",  # KV212
    "duplicate_model_name",  # KV213
    "duplicate_profile_name",  # KV214
    "reserved_profile_name",  # KV215
    "window_below_block_size",  # KV216
    "underivable_head_dim",  # KV217
    "attention_kind_without_shape",  # KV218
    "recurrent_kind_without_state",  # KV219
    "unknown_acknowledgement_target",  # KV220
    "unplaced_pattern_entries",  # KV221
    "sink_tokens_without_window",  # KV222
    "tree_smaller_than_draft_len",  # KV223
    "unknown_profile_model",  # KV224
    "cacheless_kind_with_fields",  # KV225
)

# code -> why it was retired. Never reuse one of these codes.
RETIRED: dict[str, str] = {}

Check = Callable[[RuleContext], Iterable[Finding]]


@dataclass(frozen=True)
class RuleInfo:
    """One code: its kebab name, default severity and documentation."""

    code: str
    name: str
    severity: Severity
    doc: str
    check: Check | None = None  # None for codes the loader emits

    @property
    def summary(self) -> str:
        return self.doc.split("\n", 1)[0].strip()

    @property
    def origin(self) -> str:
        return {"KV0": "reader", "KV1": "schema", "KV3": "import-hf"}.get(self.code[:3], "lint")


@cache
def lint_rules() -> tuple[RuleInfo, ...]:
    """The semantic rules, sorted by code."""
    rules = []
    for module_name in LINT_RULE_MODULES:
        module = importlib.import_module(f"kvgen.rules.{module_name}")
        doc = inspect.cleandoc(module.__doc__ or "")
        rules.append(RuleInfo(module.CODE, module.NAME, module.SEVERITY, doc, module.check))
    return tuple(sorted(rules, key=lambda rule: rule.code))


@cache
def all_rules() -> tuple[RuleInfo, ...]:
    """Every documented code (reader, schema and lint), sorted by code."""
    reader = [
        RuleInfo(code, name, "error", inspect.cleandoc(doc)) for code, name, doc in READER_CODES
    ]
    imported = [
        RuleInfo(code, name, "error", inspect.cleandoc(doc)) for code, name, doc in IMPORT_DOCS
    ]
    return tuple(sorted([*reader, *lint_rules(), *imported], key=lambda rule: rule.code))


def find_rule(code_or_name: str) -> RuleInfo | None:
    """Look a rule up by code (any case) or by kebab name."""
    wanted = code_or_name.strip()
    for rule in all_rules():
        if rule.code == wanted.upper() or rule.name == wanted.lower():
            return rule
    return None
