"""An upper bound on what generating a family writes, computed from the spec before rendering.

Generation writes tables whose size grows with the spec: per model, per profile, per layer
pattern entry and layer kind, and per (model, profile) pair the profile applies to: every pair
lists the profile in the model's tables, and a profile with ``extra_layers`` repeats that stack
for every model it applies to. A few hundred lines of spec (1,000 models x 1,000 profiles that
apply to all of them) would render a million pairs: minutes and gigabytes, and modules that
``kvgen generate --check`` then refuses to read back (over ``MAX_GENERATED_BYTES``, KV024).

``bound(family)`` adds an upper bound of every piece's rendered bytes in a single pass over the
spec (linear in its models, profiles, patterns and ``models:`` lists, never in the pairs), so
the loader refuses such a family (KV016) before lint's rules or the renderer iterate the pairs.
Rendering time and memory are linear in the bytes rendered, so this bounds them too. The
constants below over-estimate the templates' output (``tests/unit/test_output_size.py`` checks
the bound against rendered families, from the shipped ones to thousands of pairs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # at run time this module imports nothing: kvgen._generate.writer takes the bound
    from kvgen._spec.models import Family, LayerStack

__all__ = ["MAX_GENERATED_BYTES", "Crossing", "bound", "crossing"]

# The largest generated module kvgen writes and reads back (``generate --check``, ``plan``),
# defined with the file-access rules.
from kvgen._util.files import MAX_GENERATED_BYTES

# Bytes of one rendered piece in the larger of the two modules (sizing.py, allocator.py), laid
# out one value per line at the deepest indentation the templates use, with every optional
# field present. A name's own length is added where the name is written (NAME_COPIES times for
# the places that list every model or profile).
BASE = 8_000  # imports, docstrings, the functions' headers, the spec path twice
PER_MODEL = 800  # Model(...), EngineModel(...), ModelTable(...), the literal types
PER_PROFILE = 800  # Profile(...), SpeculativeProfile(...), a shared EngineDraft
PER_PAIR = 600  # a profile in a model's tuples and PROFILES, or an inline EngineDraft
PER_STACK = 300  # Stack(...) / LayerStack(...) around its pattern and kinds
PER_ENTRY = 32  # one pattern entry: indentation, quotes, comma, newline
PER_KIND = 900  # Kind(...) with its fields, its engine rows (state rows too)
NAME_COPIES = 8  # a model's or profile's name: in each module's tables, literals, docstring
PAIR_NAME_COPIES = 4  # a profile's name in a model's tuples, PROFILES, drafts; the model's


def _stack(stack: LayerStack | None) -> int:
    if stack is None:
        return 0
    pattern = sum(len(entry) + PER_ENTRY for entry in stack.layers.pattern)
    kinds = sum(3 * len(name) + PER_KIND for name in stack.layer_kinds)
    return PER_STACK + pattern + kinds


@dataclass(frozen=True)
class Crossing:
    """Where the running bound first passes the limit: ``loc`` (a path into the spec), the
    bound there, and the family's counts for the message."""

    loc: tuple[str | int, ...]
    bytes: int
    models: int
    profiles: int
    pairs: int


def bound(family: Family) -> int:
    """An upper bound on the bytes of the family's largest generated module."""
    found = crossing(family, limit=None)
    assert found is not None
    return found.bytes


def crossing(family: Family, limit: int | None = MAX_GENERATED_BYTES) -> Crossing | None:
    """The first spec entry at which the running bound exceeds ``limit`` (profiles first, then
    each model with the pairs it makes), else None; with ``limit=None``, the whole family."""
    total = BASE + NAME_COPIES * len(family.family)
    profiles = family.speculative
    universal = 0  # the pair cost of every profile that applies to all models
    listed: dict[str, int] = {}  # model name -> the pair cost of the profiles that name it
    listed_count: dict[str, int] = {}
    universal_count = 1  # "none" applies to every model
    universal += PER_PAIR + PAIR_NAME_COPIES * len("none")
    for i, profile in enumerate(profiles):
        extra = _stack(profile.extra_layers)
        draft = _stack(profile.draft)
        total += PER_PROFILE + NAME_COPIES * len(profile.name) + extra + draft
        if limit is not None and total > limit:
            return Crossing(("speculative", i, "name"), total, len(family.models), len(profiles), 0)
        pair = PER_PAIR + PAIR_NAME_COPIES * len(profile.name) + 2 * (extra + draft)
        if profile.models is None:
            universal += pair
            universal_count += 1
        else:
            for name in set(profile.models):
                listed[name] = listed.get(name, 0) + pair
                listed_count[name] = listed_count.get(name, 0) + 1
    pairs = 0
    for i, model in enumerate(family.models):
        total += PER_MODEL + NAME_COPIES * len(model.name) + _stack(model)
        total += universal + listed.get(model.name, 0)
        total += (
            PAIR_NAME_COPIES * len(model.name) * (universal_count + listed_count.get(model.name, 0))
        )
        pairs += universal_count + listed_count.get(model.name, 0)
        if limit is not None and total > limit:
            models = len(family.models)
            return Crossing(("models", i, "name"), total, models, len(profiles), pairs)
    if limit is not None:
        return None
    return Crossing((), total, len(family.models), len(profiles), pairs)
