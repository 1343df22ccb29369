"""Generation is bounded from the spec (issue 29 D4): ``kvgen._spec.output_size.bound`` is an upper
bound on the family's largest generated module, computed before anything is rendered, and the
loader refuses a family whose bound passes the 32 MiB ``generate --check`` reads back (KV016),
so lint-clean == generate-accepted still holds and nothing iterates the model-profile pairs.

The review's reproducer: 1,000 models x 1,000 profiles that apply to all of them, a few
hundred KB of lint-clean spec, made ``generate`` run 242 s at 2.81 GB and write 92 MB of
Python that its own ``generate --check`` refused; lint itself spent 265 s in one rule.
"""

from __future__ import annotations

import copy
import importlib.util
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kvgen._generate.render import SpecInput, render
from kvgen._lint.linter import lint_loaded
from kvgen._spec.loader import load_bytes
from kvgen._spec.output_size import MAX_GENERATED_BYTES, bound

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "schema" / "families").glob("*.yaml"))
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "specs").glob("*.yaml"))


def family_spec(models: int, profiles: int, *, name_length: int = 0, mode: str = "ngram") -> str:
    """``models`` one-layer models and ``profiles`` profiles that apply to every model; names
    padded to ``name_length`` (identifiers allow 64)."""

    def name(prefix: str, i: int) -> str:
        return f"{prefix}{i}".ljust(name_length, "x")

    lines = ["schema_version: 1", "family: fam", "tokens_per_block: 64", "kv_cache_dtype: bf16"]
    lines.append("models:")
    for i in range(models):
        lines.append(
            f"  - {{name: {name('m', i)}, max_seq_len: 8192, layer_kinds: {{g: {{attention: "
            "full, kv_heads: 8, head_dim: 128}}, layers: {count: 1, pattern: [g]}}"
        )
    if profiles:
        lines.append("speculative:")
    for i in range(profiles):
        extra = (
            ", extra_layers: {layer_kinds: {e: {attention: full, kv_heads: 8, head_dim: 128}}, "
            "layers: {count: 1, pattern: [e]}}"
            if mode == "eagle3"
            else ""
        )
        lines.append(f"  - {{name: {name('p', i)}, mode: {mode}, max_draft_len: 3{extra}}}")
    return "\n".join(lines) + "\n"


def largest_module(raw: bytes, path: str = "s.yaml") -> tuple[int, int]:
    """(the bound, the larger of sizing.py and allocator.py as rendered) of a lint-clean spec."""
    loaded = load_bytes(path, raw)
    assert loaded.family is not None, [d.render() for d in loaded.diagnostics][:2]
    assert not [d for d in lint_loaded(loaded) if d.severity == "error"]
    out = render([SpecInput(path, raw, loaded.family)])
    name = loaded.family.family
    actual = max(len(out[f"{name}/{module}"].encode()) for module in ("sizing.py", "allocator.py"))
    return bound(loaded.family), actual


# ------------------------------------------------------------------ the reproducer


def test_a_thousand_models_by_a_thousand_profiles_is_refused_fast_at_a_position(tmp_path):
    spec = tmp_path / "big.yaml"
    spec.write_text(family_spec(1000, 1000), encoding="utf-8")
    program = (
        "import sys, time\nfrom kvgen._cli.main import main\nstarted = time.process_time()\n"
        f"code = main(['lint', {str(spec)!r}])\n"
        "print('CPU', time.process_time() - started, code)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("lint ran past 60 s") from None
    *out, last = done.stdout.splitlines()
    _, seconds, code = last.split()
    assert code == "Exit.FINDINGS" or code == "1"
    assert float(seconds) < 1.0
    (finding,) = out
    # By hand, with kvgen._spec.output_size's constants (names p0..p999: 10 x 2 + 90 x 3 + 900 x 4
    # = 3,890 characters; limit 32 MiB = 33,554,432):
    #   base 8,000 + 8 x len("fam") = 8,024; profiles 1,000 x 800 + 8 x 3,890 = 831,120;
    #   pairs of one model: "none" 600 + 4 x 4 = 616, plus 1,000 x 600 + 4 x 3,890 = 615,560:
    #   616,176 for 1,001 pairs; its stack 300 + (1 + 32) + (3 x 1 + 900) = 1,236;
    #   a model: 800 + 1,236 + 616,176 + (8 + 4 x 1,001) x len(name) = 618,212 + 4,012 x len:
    #   626,236 for m0..m9, 630,248 for m10..m99.
    # 8,024 + 831,120 + 10 x 626,236 = 7,101,504; + 41 x 630,248 = 32,941,672 (m50, under);
    # + 630,248 = 33,571,920 at m51, over: line 6 + 51 = 57, column 12 (`  - {name: `), after
    # 52 x 1,001 = 52,052 pairs.
    assert finding.startswith(f"{spec.as_posix()}:57:12: KV016 family 'fam' could generate more ")
    assert "1000 models, 1000 speculative profiles, 52,052 model-profile pairs so far" in finding


def test_generate_refuses_it_and_writes_nothing(tmp_path, monkeypatch, capsys):
    from kvgen._cli.main import main

    (tmp_path / "schema" / "families").mkdir(parents=True)
    (tmp_path / "schema" / "families" / "big.yaml").write_text(family_spec(300, 300))
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["generate"]) == 1
    assert "KV016" in capsys.readouterr().out
    assert not (tmp_path / "generated").exists()


def test_the_largest_shipped_family_is_far_below_the_bound():
    bounds = {path.stem: bound(load_bytes(path.name, path.read_bytes()).family) for path in SHIPPED}
    assert max(bounds.values()) < 100_000 < MAX_GENERATED_BYTES // 300


# ------------------------------------------------------------------ the bound is an upper bound


@pytest.mark.parametrize("path", SHIPPED + FIXTURES, ids=lambda p: p.stem)
def test_the_bound_holds_for_every_shipped_and_fixture_family(path):
    estimate, actual = largest_module(path.read_bytes(), path.as_posix())
    assert actual <= estimate


@pytest.mark.parametrize(
    ("models", "profiles", "name_length", "mode"),
    [
        (40, 0, 64, "ngram"),
        (1, 40, 64, "ngram"),
        (20, 20, 64, "ngram"),
        (20, 20, 64, "eagle3"),  # extra layers repeated for every model
        (60, 60, 0, "ngram"),
    ],
)
def test_the_bound_holds_as_pairs_grow(models, profiles, name_length, mode):
    estimate, actual = largest_module(family_spec(models, profiles, name_length=name_length,
                                                  mode=mode).encode())  # fmt: skip
    assert actual <= estimate <= 16 * actual  # an upper bound, and not a useless one


def _scaled(data: bytes, rng: random.Random) -> bytes:
    """A spec with its models and profiles repeated k times under 64-character names (the
    profiles' ``models:`` lists follow), so that the pairs grow by k**2."""
    spec = yaml.safe_load(data)
    k = rng.choice((2, 3, 5))

    def renamed(name: str, j: int) -> str:
        return f"{name}_{j}_".ljust(64, "x")[:64]

    spec["models"] = [
        {**copy.deepcopy(model), "name": renamed(model["name"], j)}
        for j in range(k)
        for model in spec.get("models") or []
    ]
    profiles = []
    for j in range(k):
        for profile in spec.get("speculative") or []:
            profile = {**copy.deepcopy(profile), "name": renamed(profile["name"], j)}
            if profile.get("models"):
                profile["models"] = [renamed(m, i) for m in profile["models"] for i in range(k)]
            profiles.append(profile)
    if profiles:
        spec["speculative"] = profiles
    spec.pop("acknowledge", None)
    return yaml.safe_dump(spec, sort_keys=False).encode()


def _fuzz_features():
    module = sys.modules.get("kvgen_bench_fuzz_features")
    if module is None:
        path = ROOT / "bench" / "fuzz_features.py"
        loader = importlib.util.spec_from_file_location("kvgen_bench_fuzz_features", path)
        assert loader is not None and loader.loader is not None
        module = importlib.util.module_from_spec(loader)
        sys.modules[loader.name] = module
        loader.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed", range(4))
def test_the_bound_holds_for_feature_mutants_and_their_scaled_copies(seed):
    # bench/fuzz_features.py's structural mutants (chunked, cross, reads, mamba, drafts, byte
    # shapes, ...) of every seed spec, and each scaled to k models x k profiles.
    rng = random.Random(seed)
    checked = 0
    for _ in range(15):
        name, data = _fuzz_features().mutant(rng)
        for variant in (data, _scaled(data, rng)):
            loaded = load_bytes(name, variant)
            if loaded.family is None or any(d.severity == "error" for d in lint_loaded(loaded)):
                continue
            estimate, actual = largest_module(variant, name)
            assert actual <= estimate, name
            checked += 1
    assert checked >= 5
