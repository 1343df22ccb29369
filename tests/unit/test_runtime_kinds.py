"""Cache kinds as values in the shim runtime (``kvgen.runtime._kinds``): one layer rule per spec
attention and one class per life cycle, each answering by hand-derived numbers; no runtime
module branches on a kind's name, and no engine-row builder on a spec attention."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
from kvgen._model import cache_kinds
from kvgen._spec.models import LayerKind as SpecLayerKind
from kvgen.runtime import _kinds
from kvgen.runtime._kinds import LAYER_RULES, Chunked, Cross, Full, Sliding, State
from kvgen.runtime._tables import ATTENTIONS, LayerKind
from kvgen.sizing import facts

REPO = Path(__file__).resolve().parents[2]
RUNTIME = REPO / "generator" / "runtime"
# The engine policies' modules (kvgen.sizing.engines_core and the parts it binds).
ENGINE_POLICIES = sorted((REPO / "generator" / "sizing").glob("engines_*.py"))
# "none" is also a speculative mode (compared as such): attention "none" is caught by the
# kind-field pattern.
KIND_NAMES = "full|swa|sliding|chunked|cross|state|recurrent|scratch"
# A comparison with a kind's name, either way round, a membership test in a literal tuple of
# names, or a kind field compared or tested against literals: what a branch on a kind string
# looks like.
BRANCHES = {
    "compared": rf'(?:==|!=)\s*"(?:{KIND_NAMES})"|"(?:{KIND_NAMES})"\s*(?:==|!=)',
    "tuple of kinds": rf'\bin\s*[(\[{{]\s*"(?:{KIND_NAMES}|none)"',
    "a kind field": r"\.(?:kind|attention)\s*(?:==|!=|(?:not\s+)?in\s*[(\[{])",
    "a pool-name suffix": r'\.endswith\(\s*"/?(?:state|scratch)"',
}


def _spec_attentions() -> set[str]:
    return set(typing.get_args(SpecLayerKind.model_fields["attention"].annotation))


def test_every_spec_attention_has_one_rule_in_the_runtime():
    assert set(LAYER_RULES) == _spec_attentions()
    assert set(ATTENTIONS) == _spec_attentions()
    assert set(cache_kinds.SPEC_KINDS) == _spec_attentions()
    # Each rule is named by its own attention; every life cycle a rule picks is a class here.
    assert all(rule.attention == name for name, rule in LAYER_RULES.items())
    labels = [life.label for life in _kinds.LIFE_CYCLES]
    assert labels == ["full", "swa", "swa", "state", "cross"]  # chunked pages go stale too


@pytest.mark.parametrize("branch", BRANCHES)
def test_no_runtime_module_branches_on_a_kind_name(branch):
    pattern = re.compile(BRANCHES[branch])
    found = {
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted(RUNTIME.glob("*.py"))
        if path.name != "_kinds.py"  # the kind -> class maps themselves
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if not line.lstrip().startswith("#") and pattern.search(line)
    }
    assert found == set()


def test_no_engine_row_builder_branches_on_a_spec_attention():
    pattern = re.compile(BRANCHES["a kind field"])
    builders = [
        "_engines/_layers.py",
        "_model/engine_rows.py",
        "_engines/_trtllm.py",
        "_generate/sizing_context.py",
        "_generate/allocator_context.py",
        "_model/cache_kinds.py",
    ]
    found = [
        name
        for name in builders
        if pattern.search((REPO / "generator" / name).read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_kv_sharing_rank_refusal_is_worded_once():
    # Both sides import kvgen.sizing.facts.kv_sharing_rank; the sentence is written nowhere else.
    phrase = "held by an earlier"
    found = {
        path.relative_to(REPO).as_posix()
        for path in sorted((REPO / "generator").rglob("*.py"))
        if phrase in path.read_text(encoding="utf-8")
    }
    assert found == {"generator/sizing/facts.py"}
    assert facts.kv_sharing_rank(4, 3, 6, 4).startswith(
        "pp_size 4: layer 6 (pipeline rank 3) reads the cache of layer 4, held by an earlier rank"
    )


# --------------------------------------------------------------------------- layer rules


def test_layer_rules_resolve_windows_and_chunks_by_hand():
    sliding = LAYER_RULES["sliding"]
    # Retention window w + D = 100 + 3 = 103 < max_seq_len 1000: a sliding life cycle.
    assert sliding.window(LayerKind("sliding", window=100), 1000, 3) == (103, 0)
    # 998 + 3 = 1001 reaches max_seq_len 1000: every token is kept (full attention).
    assert sliding.window(LayerKind("sliding", window=998), 1000, 3) == (None, 0)
    chunked = LAYER_RULES["chunked"]
    assert chunked.window(LayerKind("chunked", chunk=256), 1000, 3) == (256, 256)  # no D
    assert chunked.window(LayerKind("chunked", chunk=1000), 1000, 3) == (None, 0)
    cross = LAYER_RULES["cross"]
    assert cross.encoder_tokens(LayerKind("cross", encoder_tokens=1500), None) == 1500
    assert cross.encoder_tokens(LayerKind("cross", encoder_tokens=1500), 600) == 600
    assert LAYER_RULES["full"].encoder_tokens(LayerKind("full"), 600) == 0
    # Only full and sliding caches can be read by a KV-sharing layer; DCP keeps the fact.
    assert {n for n, rule in LAYER_RULES.items() if rule.readable} == {"full", "sliding"}
    allowed = {n for n, rule in LAYER_RULES.items() if rule.dcp_allowed()}
    assert allowed == set(facts.DCP_ATTENTION) == {"full", "recurrent", "none"}
    assert {n for n, rule in LAYER_RULES.items() if not rule.holds_cache} == {"none"}


# --------------------------------------------------------------------------- life cycles


class _Planner(typing.NamedTuple):
    # The fields of runtime._kinds.PagePlanner a life cycle reads.
    tokens_per_block: int = 16
    max_batch_size: int = 2
    max_num_tokens: int = 32
    exact: bool = False
    headroom: int = 1
    extra_tokens: int = 0
    dcp_size: int = 1


class _Cycle(typing.NamedTuple):
    name: str
    window: int | None = None
    sink_tokens: int = 0
    encoder_tokens: int = 0
    chunk: int = 0
    token_bytes: int = 0
    state_bytes: int = 0


def test_full_pages_are_whole_pages_of_t():
    cycle = _Cycle("full", token_bytes=64)
    # T = 100, tpb 16: ceil(100/16) = 7 pages; "exact" adds B * (tpb - 1) = 30 tokens:
    # ceil(130/16) = 9; DCP 2 pages span 32 tokens: ceil(100/32) = 4.
    assert Full.pages(_Planner(), cycle, 100, 32, False) == {"full": 7}
    assert Full.pages(_Planner(exact=True), cycle, 100, 32, False) == {"full": 9}
    assert Full.pages(_Planner(dcp_size=2), cycle, 100, 32, False) == {"full": 4}
    assert Full.pool_bytes(cycle, 7, 16) == 7 * 16 * 64
    assert Full.grows and Full.paged and not Full.windowed


def test_sliding_pages_are_b_peaks_and_one_chunk():
    cycle = _Cycle("w64", window=64)
    # w 64, H 1, tpb 16: history + headroom span w + H - 1 = 64 tokens, which straddle at
    # most ceil((w + H - 2)/tpb) + 1 = 4 + 1 = 5 pages; B = 2 peaks and one context chunk of
    # 32 tokens, ceil(32/16) = 2 pages: 12; with scratch reuse the chunk's 2 pages apart.
    assert Sliding.pages(_Planner(), cycle, 10_000, 32, False) == {"w64": 12}
    assert Sliding.pages(_Planner(), cycle, 10_000, 32, True) == {"w64": 10, "w64/scratch": 2}
    assert Sliding.name((64, 0, 0)) == "w64" and Sliding.name((64, 4, 0)) == "w64s4"


def test_chunked_pages_peak_at_the_end_of_a_chunk():
    cycle = _Cycle("c64", window=64, chunk=64)
    # C 64, H 1, tpb 16: at history qC + C - 1 a request holds ceil((qC + C)/16) pages less
    # the floor(qC/16) before its chunk: 4 for every q; 2 * 4 + 2 context pages = 10, and no
    # scratch pages (a chunk boundary makes a whole chunk stale at once).
    assert Chunked.pages(_Planner(), cycle, 10_000, 32, True) == {"c64": 10}
    assert Chunked.name((64, 0, 64)) == "c64"
    assert not Chunked.scratch and not Chunked.pool_group and Chunked.windowed


def test_state_and_cross_are_held_per_request_from_admission():
    state = _Cycle("state", state_bytes=1000)
    assert State.pages(_Planner(), state, 10_000, 32, False) == {"state": 2}  # B slots
    assert State.pool_bytes(state, 3, 16) == 3000  # slots x state bytes, no tpb
    assert State.slots and not State.paged
    cross = _Cycle("cross", encoder_tokens=100, token_bytes=64)
    # ceil(100/16) = 7 pages a request, taken at admission: B = 2 -> 14, whatever T.
    assert Cross.pages(_Planner(), cross, 0, 0, False) == {"cross": 14}
    assert Cross.admission_pages(cross, 16) == 7
    assert not Cross.paged and not Cross.slots and not Cross.grows


def test_the_shim_is_parts_over_one_state_not_a_chain():
    from kvgen.runtime._state import ShimState
    from kvgen.runtime.allocator import KVCacheShim

    assert len(KVCacheShim.__bases__) == 3
    assert all(part.__bases__ == (ShimState,) for part in KVCacheShim.__bases__)


def test_every_engine_row_kind_is_a_value_of_the_engine_policies():
    import importlib

    from kvgen.sizing import engines_rows

    # Every row the shipped families' tables hold names a row kind the policies know, and
    # the policies read a row's kind only through that table (no chain on its label).
    seen = set()
    for path in sorted((REPO / "generated").glob("*/sizing.py")):
        if path.parent.name.startswith("_"):
            continue
        module = importlib.import_module(f"generated.{path.parent.name}.sizing")
        for entry in module.ENGINE_MODELS.values():
            drafts = [lay for draft in entry.drafts.values() for lay in draft.layers]
            seen |= {lay.attention for lay in (*entry.layers, *drafts)}
    assert seen <= set(engines_rows._ROW_KINDS)
    assert {"full", "sliding", "chunked", "mla", "recurrent"} <= seen
    source = "".join(path.read_text(encoding="utf-8") for path in ENGINE_POLICIES)
    assert not re.search(r"\blay(?:er)?\.attention\s*(?:==|!=|(?:not\s+)?in\s*[(\[{])", source)


def test_the_engine_policies_read_a_recurrent_mixer_only_through_its_table():
    import ast
    import importlib

    from kvgen.sizing import engines_rows

    # Every mixer the shipped families' rows name is a row of the one mixer table.
    seen = set()
    for path in sorted((REPO / "generated").glob("*/sizing.py")):
        if not path.parent.name.startswith("_"):
            module = importlib.import_module(f"generated.{path.parent.name}.sizing")
            for entry in module.ENGINE_MODELS.values():
                drafts = [lay for draft in entry.drafts.values() for lay in draft.layers]
                seen |= {lay.mixer for lay in (*entry.layers, *drafts, *entry.sglang_layers)}
    assert seen <= set(engines_rows._MIXERS)
    assert {"", "mamba2", "gdn", "kda", "mamba1", "linear"} <= seen
    # A mixer's name is written in its table row alone (no ``mixer == "mamba2"`` branch, no
    # set of names), and a row's mixer is read only as a key of that table (no truth test).
    names = set(engines_rows._MIXERS) - {""}
    for path in ENGINE_POLICIES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        table = [
            node
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "_MIXERS" for t in node.targets)
        ]
        inside = {id(n) for node in table for n in ast.walk(node)}
        keys = {
            id(n.slice)
            for n in ast.walk(tree)
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
            if n.value.id == "_MIXERS"
        }
        named = [
            f"{path.name}:{n.lineno}"
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and n.value in names and id(n) not in inside
        ]
        read = [
            f"{path.name}:{n.lineno}"
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and n.attr == "mixer" and isinstance(n.ctx, ast.Load)
            if id(n) not in keys
        ]
        assert named == read == []


def test_a_layer_may_join_two_life_cycles_each_counting_its_own_share():
    # The extension point for a kind that keeps tokens and a state in one layer (a parallel
    # hybrid): the layer sits in the full and the state life cycle, the full pages counting
    # its bytes per token, the state slot its state bytes.
    from kvgen.runtime._layers import Layer, cycles

    hybrid = Layer("layers.0", "h", None, 0, (), 512, 3000, lives=(Full, State))
    plain = Layer("layers.1", "g", None, 0, (), 256, 0)
    full, state = cycles([hybrid, plain])
    assert (full.name, full.life, state.name, state.life) == ("full", Full, "state", State)
    assert full.layers == (hybrid, plain) and state.layers == (hybrid,)
    # 2 full pages of tpb 16 hold (512 + 256) bytes a token: 2 * 16 * 768 = 24,576; 4 state
    # slots hold the hybrid's 3000 bytes each: 12,000.
    assert full.life.pool_bytes(full, 2, 16) == 24_576
    assert state.life.pool_bytes(state, 4, 16) == 12_000
