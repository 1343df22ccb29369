"""The sizing interpreter as source (``kvgen.sizing_core``) and as generation inlines it.

The source holds the tables of tests/fixtures/sizing_core_example.yaml, so its functions are
exercised directly here. Numbers are derived by hand from docs/cost-model.md (b = bytes per
token of one layer, tpb = 16, pages(w, H) = ceil((w + H - 2) / tpb) + 1 + ceil(sinks / tpb)).
Example family: ``hybrid`` = 6 layers of [local, ssm, global, mlp]; local: sliding w=64 with 4
sinks, 2 heads x 8 bf16 -> b = 2*2*8*2 = 64; global: full, 4 heads x 8 fp8 -> b = 64; ssm:
1000 B of state per request; mlp: no cache. ``latent``: 3 MLA layers of (64+16)*2 + 8 = 168 B.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from kvgen import sizing_core as core
from kvgen.loader import load_bytes, load_family
from kvgen.render import HEADER, SpecInput, _environment, family_context
from kvgen.sizing_context import (
    ENGINE_POLICIES_MARK,
    ENGINE_ROWS_MARK,
    ENGINE_TABLES_MARK,
    INTERPRETER_MARK,
    TABLES_MARK,
    core_parts,
    engine_parts,
    sizing_context,
)
from kvgen.suggest import did_you_mean

from tests.sizing_support import many_kinds_spec

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "tests" / "fixtures" / "sizing_core_example.yaml"
SHIPPED = sorted((REPO / "schema" / "families").glob("*.yaml"))
FIXTURES = sorted((REPO / "tests" / "fixtures" / "specs").glob("*.yaml"))
KW = {"max_batch_size": 4, "max_num_tokens": 64, "max_seq_len": 1024}
RUFF_FORMAT = ["format", "--isolated", "--line-length", "100", "--target-version", "py310", "-"]


def raw_render(spec: SpecInput) -> str:
    """The sizing template's own output, before any formatter could touch it."""
    family = spec.family
    return (
        _environment()
        .get_template("sizing.py.j2")
        .render(
            header=HEADER.format(source=spec.source),
            spec_sha256=spec.sha256,
            family=family,
            **family_context(family),
            **sizing_context(spec),
        )
    )


def spec_input(path: Path) -> SpecInput:
    return SpecInput(path.relative_to(REPO).as_posix(), path.read_bytes(), load_family(path))


def ruff() -> str:
    return shutil.which("ruff") or "ruff"


# --------------------------------------------------------------------------- one source


@pytest.mark.parametrize("path", sorted((REPO / "generated").glob("*/sizing.py")), ids=str)
def test_every_generated_module_inlines_the_interpreter_verbatim(path):
    parts = core_parts()
    text = path.read_text(encoding="utf-8")
    before, tables = text.split(TABLES_MARK)
    assert before.endswith(parts.prelude.removesuffix(TABLES_MARK))
    sizing, engines = tables.split(ENGINE_ROWS_MARK)
    # Two blank lines between the two cores, as ruff lays out top-level statements.
    assert sizing[sizing.index(INTERPRETER_MARK) :] == parts.interpreter + "\n\n"
    # Then kvgen.engines_core verbatim, its example rows replaced by the family's.
    rows, policies = engine_parts().rows, engine_parts().policies
    assert (ENGINE_ROWS_MARK + engines).startswith(rows)
    assert engines.endswith(policies)
    assert engines.count(ENGINE_TABLES_MARK) == engines.count(ENGINE_POLICIES_MARK) == 1


def test_the_source_tables_are_what_kvgen_renders_for_the_example_spec():
    text = raw_render(spec_input(EXAMPLE))
    tables = text[text.index(TABLES_MARK) + len(TABLES_MARK) : text.index(INTERPRETER_MARK)]
    assert tables == core_parts().tables
    # And the rest of the source is the rest of that module: only the docstring differs.
    source = Path(core.__file__).read_text(encoding="utf-8")
    sizing = text[: text.index(ENGINE_ROWS_MARK)]
    assert sizing.endswith(source.removeprefix(core_parts().docstring) + "\n\n")
    # kvgen.engines_core likewise: after its docstring and imports, the module is its text,
    # example engine rows included.
    engines = engine_parts()
    assert text.endswith(engines.rows + engines.tables + engines.policies)
    assert (
        engines.tables
        == text[
            text.index(ENGINE_TABLES_MARK) + len(ENGINE_TABLES_MARK) : text.index(
                ENGINE_POLICIES_MARK
            )
        ]
    )


def test_engines_core_imports_only_what_the_sizing_module_defines():
    # The prelude generation drops: stdlib imports the sizing core also makes, and names of
    # kvgen.sizing_core, which the sizing module defines itself.
    prelude = engine_parts().prelude
    imports = re.findall(r"^(from \S+ import|import) \(?([^)]*?)\)?$", prelude, re.M | re.S)
    assert imports
    sizing_source = Path(core.__file__).read_text(encoding="utf-8")
    for statement, names in imports:
        module = statement.split()[1]
        for name in re.findall(r"\w+", names):
            if module == "kvgen.sizing_core":
                assert hasattr(core, name), name
            else:
                assert f"from {module} import" in sizing_source and name in sizing_source, name


def test_templates_hold_no_generic_logic():
    # The template is the docstring, the tables and the core's parts: no statement of code.
    template = (REPO / "templates" / "sizing.py.j2").read_text()
    assert "{% raw" not in template
    assert not re.findall(r"^(?:def|class|import|from|for|if|return) ", template, re.M)


# --------------------------------------------------------------------------- canonical output


@pytest.mark.parametrize("path", [EXAMPLE, *SHIPPED, *FIXTURES], ids=lambda p: p.stem)
def test_raw_template_render_is_what_ruff_format_makes_of_it(path):
    text = raw_render(spec_input(path))
    result = subprocess.run(
        [ruff(), *RUFF_FORMAT], input=text, capture_output=True, text=True, check=True
    )
    assert result.stdout == text


def test_long_names_wrap_as_ruff_wraps_them():
    # 64-character names (the schema's limit) push rows past 100 columns at every depth.
    long = "k" * 64
    text = many_kinds_spec(3).replace("k0", long).replace("name: m", f"name: {'m' * 64}")
    raw = textwrap.dedent(text).encode()
    loaded = load_bytes("long.yaml", raw)
    assert loaded.family is not None
    out = raw_render(SpecInput("schema/families/long.yaml", raw, loaded.family))
    result = subprocess.run(
        [ruff(), *RUFF_FORMAT], input=out, capture_output=True, text=True, check=True
    )
    assert result.stdout == out
    assert max(len(line) for line in out.splitlines() if long in line) <= 100


@pytest.mark.slow
def test_generated_modules_pass_default_ruff_check_and_mypy_strict():
    modules = sorted(str(p) for p in (REPO / "generated").glob("*/sizing.py"))
    check = subprocess.run(
        [ruff(), "check", "--isolated", *modules], capture_output=True, text=True, cwd=REPO
    )
    assert check.returncode == 0, check.stdout
    pytest.importorskip("mypy")
    typed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *modules, core.__file__],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert typed.returncode == 0, typed.stdout


# --------------------------------------------------------------------------- generation cost


def test_generated_text_grows_linearly_with_the_number_of_kinds():
    """Issue 9, item 6: 2,048 distinct sliding kinds in one pattern wrote 98 MB (prefix tables
    of kinds x pattern). Now each kind is one row and each pattern entry one name: the bytes
    added per kind stay bounded (timing: ``python bench/bench_sizing.py --kinds 2048``)."""
    sizes = {}
    for kinds in (512, 2048):
        raw = many_kinds_spec(kinds).encode()
        loaded = load_bytes("many.yaml", raw)
        assert loaded.family is not None
        text = raw_render(SpecInput("schema/families/many.yaml", raw, loaded.family))
        sizes[kinds] = len(text.encode())
    # A row exploded one field per line is ~230 B, a pattern entry ~16 B, and each distinct
    # shape is one more engine row (~230 B, kvgen.engines_core): < 600 B per kind.
    assert (sizes[2048] - sizes[512]) / (2048 - 512) < 600
    assert sizes[2048] < 1_500_000


# --------------------------------------------------------------------------- the interpreter


def test_example_family_costs_by_hand():
    # local: 2 layers (0, 4), pages(64, H=1, 4 sinks) = ceil(63/16) + 1 + 1 = 6;
    # per_request = 6*16*128 + 2 ssm layers * 1000 = 12288 + 2000 = 14288; ctx_swa = 128;
    # slope = global 64; the engine keeps one reserved state row (the CUDA-graph padding slot,
    # §8): 2 ssm layers * 1000 = 2000; intercept = 4*14288 + 64*128 + 2000 = 57152 + 8192 +
    # 2000 = 67344.
    assert core.cache_costs("hybrid", **KW) == {"target": (64, 67344)}
    # pard2 (K=2, E=1, G=4, H=5) adds a draft pool of 2 sliding w=32 layers of 2*1*8*2 = 32 B:
    # pages(32, 5) = ceil(35/16) + 1 = 4; per_request = 4*16*64 = 4096; ctx = 64;
    # intercept = 4*4096 + 64*64 = 20480 = 20 slots of 16*64 B; resume: ceil(20/0.95f) = 22
    # slots = 22528, resume_rounding 2048.
    terms = core.cost_terms("hybrid", speculative="pard2", **KW)
    assert terms["draft"] == {
        "slope": 0,
        "per_request": 4096,
        "ctx_swa": 64,
        "resume_rounding": 2048,
        "intercept": 22528,
    }
    assert core.pages_per_request("hybrid", speculative="pard2", max_seq_len=1024) == {
        "target": {"w64s4": 7},  # pages(64, 5) = ceil(67/16) + 1 + 1 sink page = 7
        "draft": {"w32": 4},
    }


def test_pipeline_ranks_count_kinds_from_the_pattern():
    # 6 layers over 4 ranks: 2, 2, 1, 1 -> [local, ssm], [global, mlp], [local], [ssm].
    per_rank = [
        core.cost_terms("hybrid", pp_size=4, pp_rank=rank, **KW)["target"] for rank in range(4)
    ]
    assert [(t["slope"], t["per_request"]) for t in per_rank] == [
        (0, 6 * 16 * 64 + 1000),  # one local layer: 6 pages of 64 B/token, one state
        (64, 0),
        (0, 6 * 16 * 64),
        (0, 1000),
    ]
    # latent: 3 layers over 2 ranks (2, 1); eagle1's extra layer (2*1*8*2 = 32 B) on the last.
    assert core.cache_costs("latent", pp_size=2, pp_rank=0, **KW) == {"target": (336, 0)}
    assert core.cache_costs("latent", speculative="eagle1", pp_size=2, pp_rank=1, **KW) == {
        "target": (168 + 32, 0)
    }


def test_quota_and_tokens_are_inverse_per_manager_dicts():
    kw = {"speculative": "pard2", **KW}
    quotas = core.quota_from_max_tokens("hybrid", 100, **kw)
    # target: 100*64 + 4*per_request(H=5: pages(64, 5) = 7 -> 7*16*128 + 2000) + 64*128
    # + the reserved state row 2000 (raw state_bytes: no intermediate states, §8).
    assert quotas == {"target": 6400 + 4 * (14336 + 2000) + 8192 + 2000, "draft": 22528}
    assert core.max_tokens_from_quota("hybrid", quotas, **kw) == {"target": 100, "draft": None}
    shares = core.split_budget("hybrid", 1 << 20, **kw)  # model first, like every function
    assert sum(shares.values()) == 1 << 20
    assert core.max_tokens_from_quota("hybrid", {"draft": shares["draft"]}, **kw) == {"draft": None}


def test_numpy_integers_are_accepted_and_answers_are_ints():
    costs = core.cache_costs(
        "hybrid", max_batch_size=np.int64(4), max_num_tokens=np.int32(64), max_seq_len=1024
    )
    assert costs == core.cache_costs("hybrid", **KW)
    assert type(costs["target"].intercept) is int
    quota = core.quota_from_max_tokens("hybrid", np.uint16(100), **KW)["target"]
    assert type(quota) is int
    assert core.max_tokens_from_quota("hybrid", {"target": np.int64(quota)}, **KW) == {
        "target": 100
    }
    # numpy floats for the resume watermark: the pard2 draft rounds 20 slots to ceil(20/0.95f).
    resume = core.cost_terms(
        "hybrid", speculative="pard2", max_util_for_resume=np.float32(0.95), **KW
    )
    assert resume["draft"]["intercept"] == 22528


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: core.cache_costs("hybird", **KW), "model must be one of hybrid, latent; got "
         "'hybird' (did you mean 'hybrid'?)"),
        (lambda: core.cache_costs(["hybrid"], **KW), "model must be one of hybrid, latent; "
         "got ['hybrid']"),
        (lambda: core.cache_costs("hybrid", speculative="pard3", **KW), "speculative must be "
         "one of none, pard2, eagle1; got 'pard3' (did you mean 'pard2'?)"),
        (lambda: core.cache_costs("latent", speculative="pard2", **KW), "speculative 'pard2' "
         "does not apply to model 'latent'; profiles for latent: none, eagle1"),
        (lambda: core.cache_costs("hybrid", semantics="exakt", **KW), "semantics must be one "
         "of trtllm-v2, exact; got 'exakt' (did you mean 'exact'?)"),
        (lambda: core.cache_costs("hybrid", **{**KW, "max_batch_size": True}),
         "max_batch_size must be a positive int, got True"),
        (lambda: core.cache_costs("hybrid", **{**KW, "max_num_tokens": 64.0}),
         "max_num_tokens must be a positive int, got 64.0"),
        (lambda: core.cache_costs("hybrid", **{**KW, "max_seq_len": 4097}),
         "max_seq_len must be <= 4096 for hybrid, got 4097"),
        (lambda: core.cache_costs("hybrid", tp_size=[2], **KW),
         "tp_size must be a positive int, got [2]"),
        (lambda: core.cache_costs("hybrid", pp_size=7, **KW), "pp_size must be <= 6 layers"),
        (lambda: core.cache_costs("hybrid", pp_size=2, pp_rank=2, **KW),
         "pp_rank must be in [0, 2), got 2"),
        (lambda: core.cache_costs("hybrid", scratch_reuse=1, **KW),
         "scratch_reuse must be True or False, got 1"),
        (lambda: core.cache_costs("hybrid", max_util_for_resume=0, **KW),
         "max_util_for_resume must be in (0, 1], got 0"),
        (lambda: core.cache_costs("hybrid", max_util_for_resume="0.9", **KW),
         "max_util_for_resume must be in (0, 1], got '0.9'"),
        (lambda: core.quota_from_max_tokens("hybrid", -1, **KW),
         "max_tokens must be a non-negative int, got -1"),
        (lambda: core.max_tokens_from_quota("hybrid", 1 << 20, **KW),
         "quota_bytes must map cache managers (target) to bytes"),
        (lambda: core.max_tokens_from_quota("hybrid", {"traget": 1}, **KW),
         "quota_bytes key must be one of target; got 'traget' (did you mean 'target'?)"),
        (lambda: core.split_budget("hybrid", 1 << 20, tier="hots", **KW),
         "tier must be one of gpu, host; got 'hots' (did you mean 'host'?)"),
        (lambda: core.split_budget("hybrid", 2.5, **KW), "budget_bytes must be a non-negative"),
        (lambda: core.headroom("eagle", overlap_slack=False),
         "speculative must be one of none, pard2, eagle1; got 'eagle' (did you mean 'eagle1'?)"),
    ],
)  # fmt: skip
def test_one_keyword_validation_names_the_argument(call, message):
    with pytest.raises(ValueError) as err:
        call()
    assert message in str(err.value)


def test_refused_bools_and_floats_never_reach_the_cache():
    # A cached answer for 4 must not answer True, 4.0 or 4 + 0j (typed cache keys).
    core.cache_costs("hybrid", **KW)
    for bad in (True, 4.0):
        with pytest.raises(ValueError, match="max_batch_size"):
            core.cache_costs("hybrid", **{**KW, "max_batch_size": bad})


def test_the_copied_suggestion_matches_kvgen_suggest():
    choices = ("gemma3_27b", "gemma3_1b", "trtllm-v2", "exact", "target", "draft")
    for word in ("gemma3_27", "Gemma3_1B", "exakt", "trtllm", "drafts", "zzz", ""):
        assert core._did_you_mean(word, choices) == did_you_mean(word, choices), word


def test_calls_at_the_defaults_and_explicit_equal_options_answer_alike():
    # cache_costs looks calls that leave every option at its default object up in a cache of
    # the five required arguments; equal options given explicitly (other objects) take the
    # general path. Both must answer the same, and both refuse what the other refuses.
    plain = core.cache_costs("hybrid", speculative="pard2", **KW)
    explicit = core.cache_costs(
        "hybrid", speculative="pard2", tp_size=np.int64(1), pp_size=1, pp_rank=0,
        max_util_for_resume=float("0.95"), semantics="trtllm-" + "v2", dcp_size=np.int32(1),
        mamba_state_update="def" + "ault", **KW,
    )  # fmt: skip
    assert plain == explicit
    assert core._answers_plain.cache_info().currsize >= 1
    assert core._answers.cache_info().currsize >= 1
    for bad in (True, 4.0):  # warm caches on both paths still refuse a bool or a float
        with pytest.raises(ValueError, match="max_batch_size"):
            core.cache_costs("hybrid", **{**KW, "max_batch_size": bad})
        with pytest.raises(ValueError, match="max_batch_size"):
            core.cache_costs("hybrid", tp_size=2, **{**KW, "max_batch_size": bad})
    with pytest.raises(ValueError, match="max_batch_size"):
        core.cache_costs("hybrid", **{**KW, "max_batch_size": [4]})  # unhashable: named
