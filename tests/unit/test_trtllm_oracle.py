"""``bench/engines/trtllm_oracle.py``: it cuts the named functions with ``ast``, refuses text
whose digest differs from the recorded one, and its golden file names what produced it.

The engine's source is not in the repository, so the cutting is tested on small texts written
here, and the golden's provenance on the recorded file."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "engines"
GOLDEN = ROOT / "tests" / "fixtures" / "engines" / "trtllm_static.json"


def _load(name: str):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


oracle = _load("trtllm_oracle")
source = oracle.source  # the table the oracle checks against

TEXT = """\
import math

LIMIT = 1


def first(x):
    return x + LIMIT


class Manager:
    other = 2

    @classmethod
    def method(cls, y):
        # a comment kept with the text
        return y * cls.other
"""


def test_cut_takes_a_function_a_constant_and_a_method_with_its_decorator():
    assert oracle.cut(TEXT, "first") == "def first(x):\n    return x + LIMIT\n"
    assert oracle.cut(TEXT, "LIMIT") == "LIMIT = 1\n"
    method = oracle.cut(TEXT, "Manager.method")
    assert method.startswith("@classmethod\ndef method(cls, y):\n")
    assert method.endswith("return y * cls.other\n")


def test_cut_refuses_a_name_the_text_does_not_define():
    with pytest.raises(LookupError, match=r"Manager\.missing"):
        oracle.cut(TEXT, "Manager.missing")


def test_a_changed_function_text_is_refused(tmp_path, monkeypatch):
    # One row whose recorded digest is that of the text above; the same function with one
    # character changed must stop the oracle before anything runs.
    path = "pkg/module.py"
    good = oracle.digest(oracle.cut(TEXT, "first"))
    monkeypatch.setattr(source, "FUNCTIONS", ((path, "c0ffee", "first", good),))
    (tmp_path / "pkg").mkdir()
    (tmp_path / path).write_text(TEXT)
    assert oracle.cut_all(tmp_path) == {"first": "def first(x):\n    return x + LIMIT\n"}
    (tmp_path / path).write_text(TEXT.replace("x + LIMIT", "x - LIMIT"))
    with pytest.raises(SystemExit, match="does not match the recorded text"):
        oracle.cut_all(tmp_path)


def test_every_recorded_digest_is_a_sha256_prefix_and_names_its_commit():
    names = [q for _p, _c, q, _d in source.FUNCTIONS]
    assert len(names) == len(set(names))
    for path, commit, _q, want in source.FUNCTIONS:
        assert path.startswith("tensorrt_llm/")
        assert len(want) == 16 and int(want, 16) >= 0
        assert commit == source.REVISION or commit.startswith(("0", "index version"))


def test_the_golden_names_the_engine_revision_and_every_function_it_ran():
    data = json.loads(GOLDEN.read_text())
    assert data["revision"] == source.REVISION == "38198e34582cf777ecc72062f477987284ba9999"
    ran = {(f["module"], f["commit"], f["function"], f["sha256"])
           for f in data["provenance"]["functions"]}  # fmt: skip
    assert ran == set(source.FUNCTIONS)
