"""kvgen._generate.layout: the one canonical layout both table builders use. Each case is laid out
by kvgen and then by ``ruff format``; the two must agree byte for byte (ruff is the reference)."""

import shutil
import subprocess
from typing import NamedTuple

import pytest
from kvgen._generate.layout import Call, Dict, Seq, flat, literal, statement
from kvgen.sizing import sizing_kinds

RUFF_FORMAT = ["format", "--isolated", "--line-length", "100", "--target-version", "py310", "-"]


def ruff_formatted(text: str) -> str:
    ruff = shutil.which("ruff") or "ruff"
    done = subprocess.run([ruff, *RUFF_FORMAT], input=text, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


class Pair(NamedTuple):
    name: str
    size: int = 0


LONG = "x" * 40
CASES = {
    "fits": statement("A", literal((1, "two", None, 3.5))),
    "one_element_tuple": statement("B", literal((1,))),
    "empty_containers": statement("C", literal({"a": (), "b": {}})),
    # 3 x 40 characters do not fit on the line; each item does: one per line.
    "exploded_tuple": statement("D", literal((LONG, LONG, LONG))),
    # A call that does not fit but whose arguments fit on one indented line is hugged.
    "hugged_call": statement("E", Call("f" * 60, (("alpha", "1"), ("beta", literal(LONG))))),
    "explode_requested": statement("F", Dict(((literal("k"), "1"),), explode=True)),
    "nested": statement("G", literal({LONG: (LONG, {LONG: (1, 2, 3)}), "k": (LONG,) * 3})),
    "subscript": statement("H", Seq("Literal[", "]", tuple(literal(LONG) for _ in range(3)))),
}


@pytest.mark.parametrize("name", CASES)
def test_the_layout_is_what_ruff_writes(name):
    text = CASES[name] + "\n"
    assert ruff_formatted(text) == text


def test_rows_name_the_fields_off_their_defaults_and_may_lead_positionally():
    # A NamedTuple row and a sizing-core record read the same way: defaults left out.
    assert flat(literal(Pair("a"))) == "Pair(name='a')".replace("'", '"')
    assert flat(literal(Pair("a", 2), positional_first=(Pair,))) == 'Pair("a", size=2)'
    kind = sizing_kinds.Kind("sliding", layers=2, window=64)
    assert flat(literal(kind, (sizing_kinds.Kind,))) == 'Kind("sliding", layers=2, window=64)'
    # A record at every default but the required fields writes only those.
    assert flat(literal(sizing_kinds.Stack(1, ("a",), {}))) == (
        'Stack(layer_count=1, pattern=("a",), kinds={})'
    )
