"""Render small specs into a temporary package and import their generated sizing module.

Both the generated module and the generic cost model are exercised by the sizing tests
through ``Implementation``, so every hand-derived number checks both.
"""

from __future__ import annotations

import textwrap
from functools import cache
from pathlib import Path
from types import ModuleType

from kvgen._generate import vendored
from kvgen._generate.render import SpecInput, render
from kvgen._generate.sizing_context import bound_module
from kvgen._spec.loader import load_bytes, load_family
from kvgen._spec.models import Family

from tests.reference import costmodel

_counter = 0
REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "tests" / "fixtures" / "sizing_core_example.yaml"


@cache
def example_module() -> ModuleType:
    """The sizing interpreter and engine policies bound in memory to the example family's
    tables (tests/fixtures/sizing_core_example.yaml), as a generated module binds them."""
    return bound_module(load_family(EXAMPLE))


def family_from_text(text: str) -> Family:
    loaded = load_bytes("test.yaml", textwrap.dedent(text).encode())
    assert loaded.family is not None, [d.render() for d in loaded.diagnostics]
    return loaded.family


def import_generated(path: Path, name: str) -> ModuleType:
    """``<out>/<family>/sizing.py`` (or allocator.py) imported with its output folder ``out``
    as package ``name``, so that it finds the runtime rendered beside it."""
    return vendored.import_generated(path, name)


def render_sizing(text: str, tmp_dir: Path) -> ModuleType:
    """Render ``text`` (a spec) and import its sizing module under a unique name."""
    global _counter
    raw = textwrap.dedent(text).encode()
    family = family_from_text(text)
    rendered = render([SpecInput(f"schema/families/{family.family}.yaml", raw, family)])
    out = tmp_dir / f"gen{_counter}"
    for rel, body in rendered.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    _counter += 1
    return import_generated(out / family.family / "sizing.py", f"_kvgen_test_sizing_{_counter}")


class Implementation:
    """``terms(...)`` as the generated module answers it, or as the generic model does."""

    def __init__(self, kind: str, text: str, tmp_dir: Path):
        self.kind = kind
        self.family = family_from_text(text)
        self.module = render_sizing(text, tmp_dir) if kind == "generated" else None

    def terms(self, model: str, **kw) -> dict[str, dict[str, int]]:
        if self.module is not None:
            return self.module.cost_terms(model, **kw)
        speculative = kw.pop("speculative", "none")
        params = costmodel.RuntimeParams(**kw)
        out = {}
        for name, cost in costmodel.cache_costs(self.family, model, speculative, params).items():
            terms = {
                "slope": cost.slope,
                "per_request": cost.per_request,
                "ctx_swa": cost.ctx_swa,
                **cost.exact_terms,
                "intercept": cost.intercept,
            }
            if cost.pool_page_rounding is not None:
                terms["pool_page_rounding"] = cost.pool_page_rounding
            if cost.resume_rounded_intercept is not None:
                base = cost.base_intercept + sum(cost.exact_terms.values())
                terms["resume_rounding"] = cost.resume_rounded_intercept - base
            out[name] = terms
        return out

    def costs(self, model: str, **kw) -> dict[str, tuple[int, int]]:
        return {m: (t["slope"], t["intercept"]) for m, t in self.terms(model, **kw).items()}


def many_kinds_spec(kinds: int) -> str:
    """A lint-clean spec with ``kinds`` distinct sliding kinds in one pattern (issue 9,
    item 6: the per-kind prefix tables of the old sizing template made generation quadratic)."""
    rows = [
        f"      k{i}: {{attention: sliding, window: {64 + i}, kv_heads: 1, head_dim: 8}}"
        for i in range(kinds)
    ]
    pattern = ", ".join(f"k{i}" for i in range(kinds))
    return "\n".join(
        [
            "schema_version: 1",
            "family: many",
            "tokens_per_block: 16",
            "kv_cache_dtype: bf16",
            "models:",
            "  - name: m",
            "    max_seq_len: 65536",
            "    layer_kinds:",
            *rows,
            f"    layers: {{count: {kinds}, pattern: [{pattern}]}}",
            "",
        ]
    )
