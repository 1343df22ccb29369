"""Template context of ``generated/<family>/allocator.py``: the family's layer shapes as data.

The runtime (``kvgen.runtime``) derives every size itself from these shapes (heads, head_dim,
dtype, window, ...). It deliberately receives no folded cost term, headroom or page count from
the generator: the diff suite compares the shim's runtime bytes against the static sizing
module, and that comparison only means something if the two are computed independently.

The tables are handed to the template as canonical source text (``kvgen._generate.layout``: what
``ruff format`` would write), so that rendering needs no formatter. No torch here.
"""

from __future__ import annotations

from typing import Any

from kvgen._generate.layout import Call, Code, Dict, Seq, literal, statement
from kvgen._generate.render_input import SpecInput, artifact
from kvgen._model.cache_kinds import spec_kind
from kvgen._model.geometry import kind_head_dim
from kvgen._model.recurrent import mamba_fields
from kvgen._spec.models import MODES_WITH_DRAFT_POOL, LayerKind, LayerStack
from kvgen.runtime import RUNTIME_VERSION  # the version module only: no torch here

# --------------------------------------------------------------------------- the tables


def layer_kind_fields(kind: LayerKind, dtype: str, shape_of: LayerStack) -> dict[str, Any]:
    """Keyword fields of ``LayerKind`` (absent shapes are 0, dtype resolved)."""
    cls = spec_kind(kind)
    standard = cls.cached_heads and kind.kv_heads is not None
    return {
        "attention": kind.attention,
        "window": cls.window(kind),
        "sink_tokens": cls.sink_tokens(kind),
        "kv_heads": kind.kv_heads if standard else 0,
        "head_dim": kind_head_dim(kind, shape_of) if standard else 0,
        "kv_lora_rank": kind.kv_lora_rank or 0,
        "qk_rope_head_dim": kind.qk_rope_head_dim or 0,
        "bytes_per_token": kind.bytes_per_token or 0,
        "extra_bytes_per_token": kind.extra_bytes_per_token,
        "state_bytes": kind.state_bytes or 0,
        "dtype": kind.dtype or dtype,
        **mamba_fields(kind, dtype),
        "index_head_dim": kind.index_head_dim or 0,
        "reads": kind.reads,
        **cls.encoder_fields(kind),
        "chunk": cls.chunk(kind),
        "v_head_dim": (kind.v_head_dim or 0) if standard else 0,  # 0: V's head size is K's
    }


def _kind_call(fields: dict[str, Any]) -> Call:
    # Fields at the runtime's defaults are left out: the table shows what the spec says.
    shown = [
        (key, literal(value))
        for key, value in fields.items()
        if key in ("attention", "dtype") or value not in (None, 0) or (key, value) == ("reads", 0)
    ]
    return Call("LayerKind", tuple(shown))


def stack_code(stack: LayerStack, family_dtype: str, shape_of: LayerStack) -> Call:
    """``LayerStack(count, cyclic pattern, kinds)``: the kinds it names, sorted, dtypes resolved."""
    dtype = stack.kv_cache_dtype or family_dtype
    names = sorted(set(stack.layers.pattern))
    kinds = Dict(
        tuple(
            (literal(name), _kind_call(layer_kind_fields(stack.layer_kinds[name], dtype, shape_of)))
            for name in names
        ),
        explode=True,
    )
    args = (
        ("count", literal(stack.layers.count)),
        ("pattern", literal(tuple(stack.layers.pattern))),
        ("kinds", kinds),
    )
    return Call("LayerStack", args, explode=True)


def _tables_code(spec: SpecInput) -> Call:
    family = spec.family
    dtype = family.kv_cache_dtype
    models = Dict(
        tuple(
            (
                literal(model.name),
                Call(
                    "_rt.ModelTable",
                    (
                        ("max_seq_len", literal(model.max_seq_len)),
                        ("stack", stack_code(model, dtype, model)),
                        ("profiles", literal(tuple(family.profiles_for(model.name)))),
                    ),
                    explode=True,
                ),
            )
            for model in family.models
        ),
        explode=True,
    )
    profiles: list[tuple[Code, Code]] = []
    drafts: list[tuple[Code, Code]] = []
    for profile in family.speculative:
        args: tuple[tuple[str, Code], ...] = (
            ("mode", literal(profile.mode)),
            ("max_draft_len", literal(profile.max_draft_len)),
        )
        if profile.tree_draft_tokens is not None:
            args += (("tree_draft_tokens", literal(profile.tree_draft_tokens)),)
        profiles.append((literal(profile.name), Call("_rt.SpeculativeProfile", args)))
        if profile.mode in MODES_WITH_DRAFT_POOL and profile.draft is not None:
            drafts.append((literal(profile.name), stack_code(profile.draft, dtype, profile.draft)))
    extra_layers = [
        (
            literal((model.name, profile.name)),
            stack_code(profile.extra_layers, dtype, model),
        )
        for model in family.models
        for profile in family.speculative
        if profile.extra_layers is not None and profile.applies_to(model.name)
    ]
    args = (
        ("family", literal(family.family)),
        ("tokens_per_block", literal(family.tokens_per_block)),
        ("models", models),
        ("profiles", Dict(tuple(profiles), explode=bool(profiles))),
        ("extra_layers", Dict(tuple(extra_layers), explode=bool(extra_layers))),
        ("drafts", Dict(tuple(drafts), explode=bool(drafts))),
    )
    return Call("_rt.FamilyTables", args, explode=True)


@artifact("allocator.py", "allocator.py.j2")
def allocator_context(spec: SpecInput) -> dict[str, Any]:
    family = spec.family
    model_names = tuple(m.name for m in family.models)
    profile_names = tuple(family.profile_names)
    profiles_by_model = {m.name: tuple(family.profiles_for(m.name)) for m in family.models}
    constants = (
        ("FAMILY", family.family),
        ("SPEC_SHA256", spec.sha256),
        ("TOKENS_PER_BLOCK", family.tokens_per_block),
        ("KV_CACHE_DTYPE", family.kv_cache_dtype),
    )
    module = literal(f"generated/{family.family}/allocator.py")
    assert isinstance(module, str)
    return {
        "version_check": f"_rt.require_version({RUNTIME_VERSION}, {module})",
        "constants_code": "\n".join(statement(name, literal(value)) for name, value in constants),
        "model_literal": statement("Model", _literal_type(model_names)),
        "profile_literal": statement("Profile", _literal_type(profile_names)),
        "models_code": statement("MODELS: tuple[Model, ...]", literal(model_names)),
        "speculative_code": statement("SPECULATIVE: tuple[Profile, ...]", literal(profile_names)),
        "profiles_code": statement(
            "PROFILES: dict[Model, tuple[Profile, ...]]", _exploded_dict(profiles_by_model)
        ),
        "tables_code": statement("TABLES", _tables_code(spec)),
        "usage_model": literal(model_names[0]),
    }


def _literal_type(names: tuple[str, ...]) -> Seq:
    """``Literal["a", "b", ...]``: the names a parameter accepts, for type checkers."""
    return Seq("Literal[", "]", tuple(literal(name) for name in names))


def _exploded_dict(value: dict[str, Any]) -> Dict:
    code = literal(value)
    assert isinstance(code, Dict)
    return code._replace(explode=True)
