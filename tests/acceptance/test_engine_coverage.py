"""docs/engine-coverage.md is what ``python -m tests.engine_coverage`` writes from the shipped
generated modules (issue 22: a coverage table per architecture and engine, checked by a test),
and every refusal in it names its reason."""

from __future__ import annotations

import re

from tests.engine_coverage import DOC, render


def test_the_engine_coverage_document_is_current():
    assert DOC.read_text(encoding="utf-8") == render(), "run `python -m tests.engine_coverage`"


def test_every_refused_cell_names_a_listed_reason():
    text = DOC.read_text(encoding="utf-8")
    cells = re.findall(r"refused: ([^|]*?) \|", text)
    assert cells, "the shipped families hold refused rows (e.g. vLLM's Mllama)"
    listed = set(re.findall(r"^- `([a-z0-9_]+)`: ", text, re.M))
    for cell in cells:
        key = re.fullmatch(r"`([a-z0-9_]+)`", cell)
        assert key is not None and key.group(1) in listed, cell
    # Issue 22's rows that were refused on 54a882f and are answered now, engine by engine.
    for row, expected in (
        ("| llama4_scout | llama4_scout_17b_16e |", ("modelled", "modelled", "modelled")),
        ("| gemma3n | gemma3n_e2b |", ("modelled", "modelled", "modelled")),
        ("| llama3_2_vision | llama3_2_11b_vision |", (None, None, "modelled")),
    ):
        line = next(line for line in text.splitlines() if line.startswith(row))
        got = [cell.strip() for cell in line.split("|")[3:6]]
        for want, cell in zip(expected, got, strict=True):
            if want is not None:
                assert cell == want, line
