"""The rule registry, ``kvgen explain`` / ``--list-rules``, and rule robustness."""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import kvgen._lint.rules
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kvgen._cli.main import main
from kvgen._lint.linter import lint_family
from kvgen._lint.rules import LINT_RULE_MODULES, RETIRED, all_codes, find_code, lint_rules
from kvgen._spec.loader import SourceMap
from kvgen._spec.models import DTYPES, SPECULATIVE_MODES, Family
from pydantic import ValidationError

SECTIONS = ("## What it does", "## Why it matters", "## Example", "## Fix")


def test_every_rule_module_is_registered():
    modules = {
        info.name
        for info in pkgutil.iter_modules(kvgen._lint.rules.__path__)
        if not info.name.startswith("_")
    }
    assert modules == set(LINT_RULE_MODULES)


def test_codes_are_unique_sequential_and_never_retired():
    codes = [rule.code for rule in all_codes()]
    assert len(codes) == len(set(codes))
    assert not set(codes) & set(RETIRED)
    lint = [int(rule.code[2:]) for rule in lint_rules()]
    # In code order from KV201 with no gap but the one block handed out and left unused: wave 3
    # gave each new kind its own block, and decode context parallelism (KV240-KV242) has no
    # spec field to lint. Never a code reused or out of order.
    assert lint[0] == 201 and lint == sorted(lint)
    assert set(range(201, lint[-1] + 1)) - set(lint) == {240, 241, 242}


def test_names_are_unique_kebab_case():
    names = [rule.name for rule in all_codes()]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) for name in names)


def test_every_code_documents_what_why_example_fix():
    for rule in all_codes():
        positions = [rule.doc.find(section) for section in SECTIONS]
        assert -1 not in positions, rule.code
        assert positions == sorted(positions), rule.code
        assert rule.severity in ("error", "warning")


def test_explain_prints_the_rule_doc(capsys):
    assert main(["explain", "KV205"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("KV205 (undefined-pattern-kind) [error]\n\n")
    assert find_code("KV205").doc in out


def test_explain_knows_loader_codes_and_rule_names(capsys):
    assert main(["explain", "kv004"]) == 0
    assert capsys.readouterr().out.startswith("KV004 (duplicate-key) [error]")
    assert main(["explain", "unused-layer-kind"]) == 0
    assert capsys.readouterr().out.startswith("KV206 (unused-layer-kind) [warning]")


def test_explain_unknown_code_exits_2(capsys):
    assert main(["explain", "KV999"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "unknown code 'KV999'" in err


def test_list_rules_lists_every_code_once(capsys):
    assert main(["lint", "--list-rules"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [rule.code for rule in all_codes()]
    last = max((r for r in all_codes() if r.code.startswith("KV4")), key=lambda r: r.code)
    assert lines[-1].split()[:4] == [last.code, last.severity, "diff", last.name]
    kv3 = max((r for r in all_codes() if r.code.startswith("KV3")), key=lambda r: r.code)
    assert (
        f" {kv3.severity:<7}  import-hf  " in lines[[r.code for r in all_codes()].index(kv3.code)]
    )


def _heavy_modules_after(code: str) -> str:
    probe = code + "\nprint(sorted({'torch', 'jinja2', 'jsonschema'} & set(sys.modules)))\n"
    proc = subprocess.run(
        [sys.executable, "-c", "import sys\n" + probe],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()[-1]


def test_importing_the_lint_api_never_imports_torch_jinja2_or_jsonschema():
    code = (
        "import kvgen._lint.linter, kvgen._lint.reporters\nkvgen._lint.linter.lint_paths(['tests'])"
    )
    assert _heavy_modules_after(code) == "[]"


def test_kvgen_lint_never_imports_torch_jinja2_or_jsonschema():
    code = "from kvgen._cli.main import main\nmain(['-q', 'lint', '--format', 'sarif', 'tests'])"
    assert _heavy_modules_after(code) == "[]"


# -- robustness: rules never raise on any validated family -----------------------------------

names = st.sampled_from(["a", "b", "c", "none", "g"])
small = st.integers(min_value=1, max_value=300)
shape = st.one_of(
    st.just({}),
    st.fixed_dictionaries({"kv_heads": small}, optional={"head_dim": small}),
    st.fixed_dictionaries({"kv_lora_rank": small, "qk_rope_head_dim": st.integers(0, 64)}),
    st.fixed_dictionaries({"bytes_per_token": small}),
    st.fixed_dictionaries({"state_bytes": small}),
)
layer_kind = st.builds(
    lambda base, extra: {**base, **extra},
    st.fixed_dictionaries(
        {"attention": st.sampled_from(["full", "sliding", "recurrent", "none"])},
        optional={
            "window": small,
            "sink_tokens": st.integers(0, 8),
            "dtype": st.sampled_from(DTYPES),
        },
    ),
    shape,
)
stack = {
    "layer_kinds": st.dictionaries(names, layer_kind, min_size=1, max_size=3),
    "layers": st.fixed_dictionaries(
        {"count": st.integers(1, 8), "pattern": st.lists(names, min_size=1, max_size=6)}
    ),
}
stack_optional = {"kv_cache_dtype": st.sampled_from(DTYPES)}
model = st.fixed_dictionaries(
    {"name": names, "max_seq_len": st.integers(1, 5000), **stack},
    optional={**stack_optional, "hidden_size": small, "num_attention_heads": small},
)
profile = st.fixed_dictionaries(
    {"name": names, "mode": st.sampled_from(SPECULATIVE_MODES), "max_draft_len": st.integers(1, 8)},
    optional={
        "tree_draft_tokens": st.integers(1, 16),
        "draft": st.fixed_dictionaries(stack, optional=stack_optional),
        "extra_layers": st.fixed_dictionaries(stack, optional=stack_optional),
    },
)
family = st.fixed_dictionaries(
    {
        "schema_version": st.just(1),
        "family": st.just("fam"),
        "tokens_per_block": st.integers(1, 128),
        "kv_cache_dtype": st.sampled_from(DTYPES),
        "models": st.lists(model, min_size=1, max_size=3),
    },
    optional={
        "speculative": st.lists(profile, max_size=3),
        "acknowledge": st.lists(
            st.fixed_dictionaries(
                {"change": st.just("api"), "reason": st.just("r")},
                optional={"model": names, "profile": names},
            ),
            max_size=2,
        ),
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(family)
def test_rules_never_raise_on_a_validated_family(data):
    try:
        validated = Family.model_validate(data)
    except ValidationError:
        return
    for diagnostic in lint_family("x.yaml", validated, SourceMap()):
        assert diagnostic.line >= 1 and diagnostic.col >= 1
