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


CPP = """\
// header
template <typename T>
[[nodiscard]] inline T divUp(T x, T y) noexcept
{
    return (x + y - 1) / y;
}

struct Box
{
    int size() const
    {
        return 1;
    }
};

using Alias = std::variant<Box>;

int Owner::twice(int x) const
{
    return 2 * x;
}

long Owner::twice(long x) const
{
    return 2 * x;
}

Owner::Owner(int quota)
{
    int before = 0;
    size_t const gpuQuota = cacheTierQuota(config.cacheTiers[kHotLevel]);
    int kept = 1;
    mLevels.emplace_back(lifeCycleGrouping(kHotLevel), kHotLevel);
}
"""


def test_cut_cpp_takes_templates_structs_aliases_overloads_and_the_constructor_run():
    assert oracle.cut_cpp(CPP, "divUp").startswith("template <typename T>\n[[nodiscard]]")
    assert oracle.cut_cpp(CPP, "divUp").endswith("    return (x + y - 1) / y;\n}\n")
    # A struct ends at its "};", not at a member's closing brace.
    assert oracle.cut_cpp(CPP, "Box").endswith("        return 1;\n    }\n};\n")
    assert oracle.cut_cpp(CPP, "Alias") == "using Alias = std::variant<Box>;\n"
    assert oracle.cut_cpp(CPP, "Owner::twice#1").startswith("int Owner::twice(int x)")
    assert oracle.cut_cpp(CPP, "Owner::twice#2").startswith("long Owner::twice(long x)")
    # The constructor's hot-tier lines: from the quota to the first cache level, excluded.
    assert oracle.cut_cpp(CPP, "StorageManager::StorageManager") == (
        "    size_t const gpuQuota = cacheTierQuota(config.cacheTiers[kHotLevel]);\n"
        "    int kept = 1;\n"
    )
    with pytest.raises(LookupError, match="missing"):
        oracle.cut_cpp(CPP, "Owner::missing")


def test_a_changed_cpp_text_is_refused(tmp_path, monkeypatch):
    path = "cpp/x.cpp"
    good = oracle.digest(oracle.cut_cpp(CPP, "Owner::twice#1"))
    monkeypatch.setattr(source, "CPP_FUNCTIONS", ((path, "index version 1", "Owner::twice#1",
                                                  good),))  # fmt: skip
    (tmp_path / "cpp").mkdir()
    (tmp_path / path).write_text(CPP)
    cut = oracle.cut_cpp(CPP, "Owner::twice#1")
    assert oracle.cut_all_cpp(tmp_path) == {"cpp/x.cpp": [cut]}
    (tmp_path / path).write_text(CPP.replace("return 2 * x;", "return 3 * x;", 1))
    with pytest.raises(SystemExit, match="does not match the recorded text"):
        oracle.cut_all_cpp(tmp_path)


def test_the_golden_names_every_cpp_definition_it_compiled():
    data = json.loads(GOLDEN.read_text())
    ran = {(f["module"], f["version"], f["function"], f["sha256"]) for f in data["cpp_functions"]}
    assert ran == set(source.CPP_FUNCTIONS) and len(ran) == len(source.CPP_FUNCTIONS)
    for path, version, _name, want in source.CPP_FUNCTIONS:
        assert path.startswith("cpp/tensorrt_llm/batch_manager/kv_cache_manager_v2/")
        assert version.startswith("index version") and len(want) == 16
    # Every marker the harness leaves for the engine's code has definitions to take.
    harness = (BENCH / "trtllm_pool_harness.cpp").read_text()
    for marker in {"utils/math.h", "lifeCycleRegistry.h", "storageManager.cpp",
                   "storage/core.cpp", "StorageManager::StorageManager"}:  # fmt: skip
        assert f"// @ENGINE {marker}@" in harness
