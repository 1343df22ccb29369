"""The semantic lint rules (one per module); the registry of every code is ``kvgen._util.codes``.

Each module in ``LINT_RULE_MODULES`` declares its KV2xx code once: ``CODE``, ``NAME``,
``SEVERITY`` and ``check(ctx)``; its docstring is the rule's documentation.
"""

from __future__ import annotations

import importlib
import inspect
from functools import cache

from kvgen._util.codes import RETIRED, declared
from kvgen._util.codes import Code as RuleInfo

__all__ = [
    "LINT_RULE_MODULES",
    "RETIRED",
    "RuleInfo",
    "all_codes",
    "find_code",
    "lint_rules",
    "unknown_code",
]

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
    "mamba_heads_not_grouped",  # KV226
    "chunk_not_page_aligned",  # KV227
    "chunk_covers_max_seq_len",  # KV228
    "chunk_on_non_chunked_kind",  # KV229
    "cross_kind_without_encoder_tokens",  # KV230
    "encoder_tokens_on_non_cross_kind",  # KV231
    "cross_kinds_disagree",  # KV232
    "shared_layer_out_of_range",  # KV233
    "shared_layer_not_earlier",  # KV234
    "shared_layer_reads_no_cache",  # KV235
    "shared_layer_shape_mismatch",  # KV236
    "scale_block_element_count",  # KV237
    "ds_mla_layout_without_mla",  # KV238
    "scaled_layout_on_recurrent_state",  # KV239
    "mamba1_inner_not_expanded",  # KV243
    "mixed_mamba_versions",  # KV244
    "linear_heads_not_query_heads",  # KV245
    "query_heads_not_grouped",  # KV246
    "architectures_disagree",  # KV247
)


@cache
def lint_rules() -> tuple[RuleInfo, ...]:
    """The semantic rules, sorted by code."""
    rules = []
    for module_name in LINT_RULE_MODULES:
        module = importlib.import_module(f"kvgen._lint.rules.{module_name}")
        doc = inspect.cleandoc(module.__doc__ or "")
        rules.append(RuleInfo(module.CODE, module.NAME, module.SEVERITY, doc, check=module.check))
    return tuple(sorted(rules, key=lambda rule: rule.code))


@cache
def all_codes() -> tuple[RuleInfo, ...]:
    """Every code (reader, schema, lint rules, import-hf), sorted by code."""
    return tuple(sorted([*declared(), *lint_rules()], key=lambda entry: entry.code))


def find_code(code_or_name: str) -> RuleInfo | None:
    """Look a code up by code (any case) or by kebab name."""
    wanted = code_or_name.strip()
    for entry in all_codes():
        if entry.code == wanted.upper() or entry.name == wanted.lower():
            return entry
    return None


def unknown_code(code_or_name: str) -> str:
    """The message for a code that is not declared, with the closest code or name."""
    from kvgen._util.suggest import did_you_mean  # difflib: only on this error path

    choices = [entry.code for entry in all_codes()] + [entry.name for entry in all_codes()]
    wanted = code_or_name.strip()
    hint = did_you_mean(wanted.upper() if wanted[:2].lower() == "kv" else wanted, choices)
    return f"unknown code {code_or_name!r}{hint}; see 'kvgen lint --list-rules'"
