"""The sizing interpreter as source (``kvgen.sizing.sizing_core``) and as generation binds it.

Here the interpreter is bound in memory to the tables of tests/fixtures/sizing_core_example.yaml
(``kvgen._generate.sizing_context.bound_module``), as every generated module binds its copy in the
output folder to its own. Numbers are derived by hand from docs/cost-model.md (b = bytes per
token of one layer, tpb = 16, pages(w, H) = ceil((w + H - 2) / tpb) + 1 + ceil(sinks / tpb)).
Example family: ``hybrid`` = 6 layers of [local, ssm, global, mlp]; local: sliding w=64 with 4
sinks, 2 heads x 8 bf16 -> b = 2*2*8*2 = 64; global: full, 4 heads x 8 fp8 -> b = 64; ssm:
1000 B of state per request; mlp: no cache. ``latent``: 3 MLA layers of (64+16)*2 + 8 = 168 B.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from kvgen._generate.render import HEADER, ROOT_HEADER, SpecInput, _environment, family_context
from kvgen._generate.sizing_context import bound_module, sizing_context
from kvgen._spec.loader import load_bytes, load_family
from kvgen._util.suggest import did_you_mean
from kvgen.sizing import (
    engines_core,
    engines_rows,
    engines_sglang,
    engines_trtllm,
    engines_vllm,
    facts,
    sizing_core,
    sizing_kinds,
    sizing_options,
    sizing_quota,
    sizing_split,
    sizing_terms,
)

from tests.sizing_support import import_generated, many_kinds_spec

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


core = bound_module(load_family(EXAMPLE))
GENERATED = REPO / "generated"
RUNTIME = GENERATED / "_kvgen_runtime"


# --------------------------------------------------------------------------- one source


@pytest.mark.parametrize("path", sorted(GENERATED.glob("*/sizing.py")), ids=str)
def test_every_generated_module_is_tables_and_a_binding_with_no_code_of_its_own(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    imported = {n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.level == 2}
    assert imported == {
        "_kvgen_runtime",
        "_kvgen_runtime.sizing_kinds",  # the row types the tables are written in
        "_kvgen_runtime.engines_rows",  # the engine row types
    }
    calls = [ast.unparse(n) for n in tree.body if isinstance(n, ast.Expr)][-2:]
    assert calls == ["_sizing.bind(globals())", "_engines.bind(globals())"]


SIZING_MODULES = [facts, sizing_kinds, sizing_options, sizing_split, sizing_terms, sizing_quota]


@pytest.mark.parametrize(
    "module",
    [
        *SIZING_MODULES,
        sizing_core,
        engines_rows,
        engines_vllm,
        engines_sglang,
        engines_trtllm,
        engines_core,
    ],
    ids=lambda m: m.__name__,
)
def test_the_output_folder_holds_the_runtime_verbatim_under_the_generated_header(module):
    short = module.__name__.rsplit(".", 1)[1]
    source = Path(module.__file__).read_text(encoding="utf-8")
    assert (RUNTIME / f"{short}.py").read_text(encoding="utf-8") == f"{ROOT_HEADER}\n{source}"


def test_a_core_change_shows_once_in_the_output_folder():
    # Each runtime function is written in one generated file (was: in every sizing module).
    for marker in ("def _compute(", "def vllm_plan(", "DTYPE_BYTES = {"):
        holders = [p for p in GENERATED.rglob("*.py") if marker in p.read_text(encoding="utf-8")]
        assert len(holders) == 1, (marker, holders)


def test_the_generated_tree_stays_under_its_line_budget_and_names_runtime_exports_once():
    # Issue 19: `cat generated/*/*.py generated/*.py | wc -l` below 10,000 for its 22 families
    # and the runtime (53,607 lines when every sizing module carried the interpreter; 10,177
    # before the allocators appended the runtime's names from one list; 9,907 with the runtime
    # in ten modules, the TensorRT-LLM split and SGLang's hybrid rules; 9,871 with the engine
    # policies in five modules and a draft several models share written once; 9,957 after
    # this wave's engine modes, a model's empty extra layers left at their default; 10,378 with
    # the engine registry, one value per engine and release, in the runtime: 10,500; 10,531
    # with every public argument checked (engines_options, issue 29) and each release's
    # start-up minimums (issue 32): 10,800; 11,944 with TensorRT-LLM 38198e34's splits vendored
    # so that the default release answers in the runtime, issue 31: 12,000; 12,209 with vLLM
    # 0.34.0 a release value beside 0.33.0 (its refusals and launch notes in the registry,
    # issue 30), the dtype each release serves a float32 checkpoint in (issue 32) and strict
    # types (issue 28): 12,400; 12,920 with 38198e34's split frame, the part of its split no
    # budget or batch changes built once per model, profile, length and tp, so that a new
    # question is its arithmetic (issue 28's speed: 69-101 us to 7-11 us): 13,000; 13,004
    # with the answers of plain engine_capacity calls looked up before any check, one copy
    # of its checks for the spec path too (capacity_front), the refusals read by position
    # (ASKED) and a recurrent model's terms rebatched (issue 28's speed): 13,100). Families
    # shipped since (falcon_h1 with four models, kimi_linear, ling_linear) bring their own
    # tables and a binding only: under 450 lines each, so a family costs its tables, not a
    # runtime copy.
    def count(files: list[Path]) -> int:
        return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files)

    later = {"falcon_h1", "kimi_linear", "ling_linear"}
    files = [*GENERATED.glob("*/*.py"), *GENERATED.glob("*.py")]
    assert len(list(GENERATED.glob("*/sizing.py"))) == 22 + len(later)
    lines = count([p for p in files if p.parent.name not in later])
    assert lines < 13_100, lines
    for name in later:
        own = count(list((GENERATED / name).glob("*.py")))
        assert own < 450, (name, own)
    # A runtime name an allocator re-exports is listed in kvgen.allocator_api alone.
    holders = [p for p in GENERATED.rglob("allocator.py") if '"OutOfPagesError"' in p.read_text()]
    assert holders == []


def test_every_cache_kind_of_the_spec_has_one_class_on_each_static_side():
    import typing

    from kvgen._model import cache_kinds
    from kvgen._spec.models import LayerKind

    attentions = set(typing.get_args(LayerKind.model_fields["attention"].annotation))
    assert set(sizing_kinds._KIND_CLASSES) == attentions
    assert set(cache_kinds.SPEC_KINDS) == attentions
    # A reader (KV sharing) has no cache of its own in the interpreter, whatever its attention.
    reader = sizing_kinds.Kind("sliding", layers=1, window=8, kv_heads=1, head_dim=1, reads=0)
    assert sizing_kinds._kind_class(reader) is sizing_kinds._SharedReader
    assert sizing_kinds._SharedReader.rows is None and sizing_kinds._CacheLess.rows is None


def test_life_cycle_classes_count_pages_by_hand():
    # Sliding, w = 4096, H = 1, tpb = 32: history plus headroom span w + H - 1 = 4096 tokens,
    # which straddle at most ceil((w + H - 2)/tpb) + 1 = 128 + 1 pages: live = 128.
    assert sizing_kinds._Sliding.live_pages(4096, 1, 32) == 128
    # Chunked, C = 8192, H = 1, tpb = 32: gcd(C, tpb) = 32, so pages(C, H) =
    # ceil((C + H - 1 + tpb - 32)/tpb) = 256 = live + 1: live = 255.
    assert sizing_kinds._Chunked.live_pages(8192, 1, 32) == 255
    # Block reuse extends a window by the backoff D, never a chunk (§5).
    assert sizing_kinds._Sliding.retention(4096, 3) == 4099
    assert sizing_kinds._Chunked.retention(8192, 3) == 8192
    assert sizing_kinds._Sliding.scratch_reuse and not sizing_kinds._Chunked.scratch_reuse


def test_kvgen_s_own_interpreter_unbound_sizes_no_model():
    # The source holds an empty family's tables: nothing is sized until a family binds it.
    assert sizing_kinds.MODELS == () and not sizing_kinds._MODELS
    with pytest.raises(ValueError, match="model must be one of ; got 'hybrid'"):
        sizing_options._options("hybrid", "none", 1, 1, 1)


def test_a_bound_family_leaves_the_source_and_other_families_untouched():
    other = bound_module(load_family(REPO / "schema" / "families" / "llama3.yaml"))
    assert core.MODELS == ("hybrid", "latent") and other.FAMILY == "llama3"
    assert core.cache_costs.__globals__ is vars(core)
    assert other.cache_costs.__globals__ is vars(other)
    assert core.cache_costs.__code__ is sizing_core.cache_costs.__code__  # one implementation
    assert core._ANSWERS is not other._ANSWERS  # caches are per family
    assert sizing_kinds.MODELS == ()


def test_a_runtime_accepts_the_gencode_of_its_window_and_refuses_the_rest():
    # Protobuf's rule: a runtime at least as new as the gencode, down to the oldest gencode
    # it still runs (MIN_GENCODE_VERSION: 2, the first with TABLES); both refusals name the fix.
    current, oldest = sizing_core.RUNTIME_VERSION, sizing_core.MIN_GENCODE_VERSION
    assert (current, oldest) == (2, 2)
    for version in range(oldest, current + 1):
        sizing_core.require_version(version, "m.py")
    for version in (oldest - 1, current + 1):
        refusal = (
            rf"m.py was generated for kvgen sizing runtime {version}; .* is 2 "
            r"\(it runs modules of 2 to 2\): run `kvgen generate`"
        )
        with pytest.raises(ImportError, match=refusal):
            sizing_core.require_version(version, "m.py")


def test_templates_hold_no_generic_logic():
    # The template is the docstring, the imports, the tables and the binding: no code.
    template = (REPO / "templates" / "sizing.py.j2").read_text()
    assert "{% raw" not in template
    assert not re.findall(r"^(?:def|class|for|return) ", template, re.M)


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
    modules = sorted(str(p) for p in GENERATED.glob("*/sizing.py"))
    modules += sorted(str(p) for p in RUNTIME.glob("*.py"))
    check = subprocess.run(
        [ruff(), "check", "--isolated", *modules], capture_output=True, text=True, cwd=REPO
    )
    assert check.returncode == 0, check.stdout
    pytest.importorskip("mypy")
    typed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *modules],
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
    # shape is one more engine row (~230 B, kvgen.sizing.engines_core): < 600 B per kind.
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


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_rank_counts_from_running_counts_equal_a_walk_over_the_layers(path):
    # The oracle is the definition (§1): layer i has kind pattern[i % period], and rank r of
    # pp holds layers [start, start + n) with n = count // pp (+1 on the first count % pp).
    module = bound_module(load_family(path))
    prefix_counts, count_in = vars(module)["_prefix_counts"], vars(module)["_count_in"]
    rank_window = vars(module)["_rank_window"]

    def rank_counts(stack, pp, rank):
        window = rank_window(stack, pp, rank)
        return {name: count_in(before, window) for name, before in prefix_counts(stack).items()}

    for model in vars(module)["_MODELS"].values():
        stack = model.layers
        for pp in sorted({1, 2, 3, 5, 7, stack.layer_count}):
            start = 0
            for rank in range(pp):
                n = stack.layer_count // pp + (rank < stack.layer_count % pp)
                walked = dict.fromkeys(stack.kinds, 0)
                for layer in range(start, start + n):
                    walked[stack.pattern[layer % len(stack.pattern)]] += 1
                assert rank_counts(stack, pp, rank) == walked, (path.stem, pp, rank)
                start += n


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
    # A call at the defaults (the same objects) is looked up by its five required arguments,
    # any other by all seventeen as given (issue 28: a warm call looks up before it
    # validates); equal options given as other objects (numpy ints, rebuilt strings) answer
    # the same, and both paths refuse alike, warm or not.
    plain = core.cache_costs("hybrid", speculative="pard2", **KW)
    explicit = core.cache_costs(
        "hybrid", speculative="pard2", tp_size=np.int64(1), pp_size=1, pp_rank=0,
        max_util_for_resume=float("0.95"), semantics="trtllm-" + "v2", dcp_size=np.int32(1),
        mamba_state_update="def" + "ault", **KW,
    )  # fmt: skip
    assert plain == explicit
    assert len(core._PLAIN) >= 1 and len(core._ANSWERS) >= 1
    for bad in (True, 4.0):  # warm caches on both paths still refuse a bool or a float
        with pytest.raises(ValueError, match="max_batch_size"):
            core.cache_costs("hybrid", **{**KW, "max_batch_size": bad})
        with pytest.raises(ValueError, match="max_batch_size"):
            core.cache_costs("hybrid", tp_size=2, **{**KW, "max_batch_size": bad})
    with pytest.raises(ValueError, match="max_batch_size"):
        core.cache_costs("hybrid", **{**KW, "max_batch_size": [4]})  # unhashable: named


def test_equal_options_share_one_answer_keyed_by_the_validated_options():
    # Each option is checked once, into a plain value, and the checked options are the cache
    # key: an int and a numpy int of the same size are one answer (typed keys of the raw
    # arguments kept three here), a bool or a float none.
    module = bound_module(load_family(EXAMPLE))
    module._ANSWERS.clear()
    plain = module.cache_costs("hybrid", **KW)
    numpy_batch = module.cache_costs("hybrid", **{**KW, "max_batch_size": np.int64(4)})
    numpy_tp = module.cache_costs("hybrid", tp_size=np.int32(1), **KW)
    assert plain == numpy_batch == numpy_tp
    assert len(module._ANSWERS) == 1  # one validated key for the three calls
    options = module._options("hybrid", "none", np.int64(4), 64, 1024, tp_size=np.int32(1))
    assert options == module._options("hybrid", "none", 4, 64, 1024)
    assert [type(value) for value in options[2:6]] == [int, int, int, int]
    with pytest.raises(ValueError, match="max_batch_size"):
        module.cache_costs("hybrid", **{**KW, "max_batch_size": True})
    assert len(module._ANSWERS) == 1


def test_the_answers_caches_are_bounded_and_answer_alike_after_they_let_go():
    # The answers cache by validated options (cost_terms' here) and cache_costs' cache of its
    # usual call by its arguments as given are plain dicts of at most _ANSWERS_HELD (4,096)
    # answers, emptied when full; the typed cache of every other call's arguments holds as
    # many, the least recently used let go. 4,097 distinct batch sizes leave one answer in
    # each dict and 4,096 in the other, and the first batch size's answer, computed again, is
    # the one it had.
    module = bound_module(load_family(EXAMPLE))
    held = module._ANSWERS_HELD
    first = module.cost_terms("hybrid", **{**KW, "max_batch_size": 1})
    plain = module.cache_costs("hybrid", **{**KW, "max_batch_size": 1})
    for batch in range(2, held + 2):
        module.cost_terms("hybrid", **{**KW, "max_batch_size": batch})
        module.cache_costs("hybrid", **{**KW, "max_batch_size": batch})
        assert len(module._ANSWERS) <= held and len(module._PLAIN) <= held
    assert len(module._ANSWERS) == len(module._PLAIN) == 1
    assert module._GIVEN.cache_info().currsize == held
    assert module.cost_terms("hybrid", **{**KW, "max_batch_size": 1}) == first
    assert module.cache_costs("hybrid", **{**KW, "max_batch_size": 1}) == plain


def test_quota_for_requests_names_seq_len_when_it_exceeds_the_models_context():
    # Reproducer (b490c43): seq_len is quota_for_requests' own name for the context, but a
    # seq_len past the model's native 4096 tokens (hybrid's max_seq_len in the example spec)
    # was reported as "max_seq_len must be <= 4096 for hybrid", naming an argument the
    # function does not take. Each argument is now checked under the name the caller used.
    kw = {"requests": 2, "max_num_tokens": 64}
    with pytest.raises(ValueError, match=r"^seq_len must be <= 4096 for hybrid, got 4097$"):
        core.quota_for_requests("hybrid", seq_len=4097, **kw)
    with pytest.raises(ValueError, match=r"^requests must be a positive int, got 0$"):
        core.quota_for_requests("hybrid", requests=0, seq_len=8, max_num_tokens=64)
    # A valid call is unchanged: the same answer as seq_len given as a numpy int.
    assert core.quota_for_requests("hybrid", seq_len=4096, **kw) == core.quota_for_requests(
        "hybrid", seq_len=np.int64(4096), **kw
    )


@pytest.mark.parametrize(
    ("overlap_slack", "block_reuse", "expected"),
    [
        # eagle1 (EAGLE3, K = 1): E = K - 1 = 0, a step of 1 + K = 2 tokens (G), D = 1 (§2,
        # §5), so H = E + G = 2. local: w = 64 with 4 sinks, tpb = 16, so
        # pages(w, H) = ceil((w + H - 2)/16) + 1 + ceil(4/16).
        (False, False, {"w64s4": 4 + 1 + 1}),  # ceil(64/16) = 4
        (False, True, {"w65s4": 5 + 1 + 1}),  # block reuse keeps w + D = 65: ceil(65/16) = 5
        (True, False, {"w64s4": 5 + 1 + 1}),  # the overlap slack adds K: H = 3, ceil(65/16) = 5
        (True, True, {"w65s4": 5 + 1 + 1}),  # both: w = 65, H = 3: ceil(66/16) = 5
    ],
)
def test_each_headroom_a_life_cycle_precomputes_is_the_one_the_options_pick(
    overlap_slack, block_reuse, expected
):
    # sizing_split._cycle keeps a life cycle's pages under all four headrooms the options can
    # pick (overlap_slack x block_reuse) once per (model, profile); a call indexes them.
    pages = core.pages_per_request(
        "hybrid",
        speculative="eagle1",
        max_seq_len=1024,
        overlap_slack=overlap_slack,
        block_reuse=block_reuse,
    )
    assert pages == {"target": expected}


def test_a_draft_several_models_share_is_written_once_and_reads_as_the_specs_rows():
    # qwen2_5's seven models share two engine rows per profile (0.5B-3B: vocab 151,936 like
    # the 0.5B draft, so vLLM runs it; 7B-72B: 152,064, the vocabulary refusal): each row
    # is written once as a module constant and named in every model's drafts, and the
    # generated table equals the rows kvgen builds in memory from the spec.
    from kvgen._generate.sizing_context import shared_drafts
    from kvgen._model.engine_rows import engine_tables, sizing_tables

    family = load_family(REPO / "schema" / "families" / "qwen2_5.yaml")
    tables = sizing_tables(family)
    names = shared_drafts(tables)
    assert sorted(names.values()) == [
        "_DRAFT_DRAFT_0_5B", "_DRAFT_DRAFT_0_5B_2", "_DRAFT_PARD4", "_DRAFT_PARD4_2",
    ]  # fmt: skip
    source = (GENERATED / "qwen2_5" / "sizing.py").read_text(encoding="utf-8")
    assert source.count("EngineDraft(") == 4  # one per shared row, none inline
    module = import_generated(GENERATED / "qwen2_5" / "sizing.py", "_qwen2_5_shared")
    assert repr(module.ENGINE_MODELS) == repr(engine_tables(family))  # rows of its own runtime
    small, large = module.ENGINE_MODELS["qwen2_5_0_5b"], module.ENGINE_MODELS["qwen2_5_72b"]
    assert small.drafts["pard4"] is module.ENGINE_MODELS["qwen2_5_3b"].drafts["pard4"]
    assert large.drafts["draft_0_5b"].unmodelled == "vllm_draft_vocab"
    # A draft no other model shares stays inline: one model alone names nothing.
    alone = tables._replace(models={"qwen2_5_0_5b": tables.models["qwen2_5_0_5b"]})
    assert shared_drafts(alone) == {}


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.cache_costs("hybrid", **KW),
        lambda m: m.cache_costs("hybrid", tp_size=2, **KW),
        lambda m: m.cost_terms("hybrid", **KW),
        lambda m: m.quota_from_max_tokens("hybrid", 4096, **KW),
        lambda m: m.split_budget("hybrid", 1 << 30, **KW),
        lambda m: m.engine_capacity(
            "hybrid", 1 << 30, engine="trtllm-v2", max_seq_len=1024, max_num_tokens=64
        ),
    ],
    ids=["cache_costs", "cache_costs-tp2", "cost_terms", "quota", "split_budget", "trtllm-v2"],
)
def test_a_warm_call_looks_up_its_answer_before_it_validates(call):
    # Issue 28: a repeated call finds its answer by its arguments as given and neither
    # validates (``_options``) nor computes (``_compute``) anything (at c2a37ec every call
    # ran the validation of all 17 options first: 1.5x the time of 54a882f's warm call); a
    # miss validates, with the same errors as ever.
    module = bound_module(load_family(EXAMPLE))
    ran: list[str] = []

    def counted(name: str, check: Callable[..., object]) -> Callable[..., object]:
        def counting(*args: object, **kwargs: object) -> object:
            ran.append(name)
            return check(*args, **kwargs)

        return counting

    for name in ("_options", "_compute"):
        module.__dict__[name] = counted(name, vars(module)[name])
    first = call(module)
    assert "_compute" in ran  # the first call computes its answer
    before = len(ran)
    assert call(module) == first
    assert len(ran) == before  # the repeat validates and computes nothing
    for bad in (True, 4.0, [4]):  # and a bad value is refused, warm or not
        with pytest.raises(ValueError, match="max_batch_size"):
            module.cache_costs("hybrid", **{**KW, "max_batch_size": bad})
