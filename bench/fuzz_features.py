"""Feature-aware fuzzing: structural spec mutants through lint and generated code, and hostile
shim call sequences.

    python bench/fuzz_features.py --minutes 10 --out fuzz-features-findings

Spec mutants: a lint-clean seed (shipped specs, fixture specs, the valid lint corpus) parsed,
then one to three structural edits of its newer features (chunked and cross kinds, byte shapes
on cross kinds, ``reads:``,
scaled dtypes, ``index_head_dim``, ``mamba`` / ``mamba1`` states, ``extra_layers`` and drafts,
``acknowledge``, counts and patterns, windows and sinks, page sizes, derived head dims, raw
byte shapes), dumped back to YAML. Each mutant is loaded and linted;
when lint is clean it is rendered, written to a temporary tree, its sizing module and
allocator imported, every public sizing function called for every model and profile (both
semantics; ``tp_size``, ``dcp_size``, ``attention_dp`` and ``encoder_tokens`` variants), every
engine asked, and a shim built on ``device="meta"`` and driven through a short workload.

Shim sequences: random calls with hostile arguments (None, bools, negative, 10**30, numpy
ints, strings, unknown pools) against shims of clean specs; every refused call must raise the
shim's ``AllocatorError`` and leave the shim exactly as it was.

Findings: ``traceback`` (an exception escaping load, lint or render), ``hang``,
``unpositioned`` (a diagnostic without file:line:col), ``generated`` (a lint-clean spec whose
generated code fails: import, a sizing function raising anything but ValueError or answering
a non-int, the shim failing to build or to run a plain workload), ``untyped`` (a shim call
refused with something other than AllocatorError) and ``state`` (a refused call that changed
the shim). Deterministic for a given ``--seed``; ``tests/acceptance/test_fuzz_features.py``
runs a bounded slice.
"""

from __future__ import annotations

import argparse
import copy
import functools
import hashlib
import importlib.util
import random
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SEEDS = (
    sorted((ROOT / "schema/families").glob("*.yaml"))
    + sorted((ROOT / "tests/fixtures/specs").glob("*.yaml"))
    + sorted((ROOT / "tests/lint_corpus").glob("valid_*.yaml"))
)
DTYPES = (
    "bf16", "fp16", "fp32", "fp8", "nvfp4", "fp8_per_token_head", "int8_per_token_head",
    "mxfp8", "mxfp4", "fp8_ds_mla",
)  # fmt: skip
INTS = (0, 1, 2, 3, 7, 16, 31, 32, 64, 100, 128, 576, 1601, 4096, 65536, 1 << 20)


@dataclass
class Finding:
    kind: str  # traceback | hang | unpositioned | generated | untyped | state
    name: str
    data: bytes
    detail: str


@dataclass
class Stats:
    tried: int = 0
    clean: int = 0
    generated: int = 0
    shim_calls: int = 0
    slowest_s: float = 0.0
    findings: list[Finding] = field(default_factory=list)

    def count(self, kind: str) -> int:
        return sum(f.kind == kind for f in self.findings)


# --- structural mutators (on the parsed spec) ---------------------------------------------


def _stacks(spec: dict) -> list[dict]:
    stacks = [m for m in spec.get("models") or [] if isinstance(m, dict)]
    for profile in spec.get("speculative") or []:
        for part in ("draft", "extra_layers"):
            if isinstance(profile, dict) and isinstance(profile.get(part), dict):
                stacks.append(profile[part])
    return [s for s in stacks if isinstance(s.get("layer_kinds"), dict)]


def _kind(rng: random.Random, spec: dict) -> tuple[dict, str, dict] | None:
    stacks = _stacks(spec)
    if not stacks:
        return None
    stack = rng.choice(stacks)
    name = rng.choice(sorted(stack["layer_kinds"]))
    kind = stack["layer_kinds"][name]
    return (stack, name, kind) if isinstance(kind, dict) else None


def _attention_shape(rng: random.Random) -> dict:
    if rng.random() < 0.2:
        return {"kv_lora_rank": rng.choice((512, 500, 128)), "qk_rope_head_dim": 64}
    return {"kv_heads": rng.choice((1, 2, 8)), "head_dim": rng.choice((64, 80, 128, 256))}


def _chunked(rng: random.Random, spec: dict) -> None:
    got = _kind(rng, spec)
    if got is not None:
        got[2].clear()
        got[2].update(attention="chunked", chunk=rng.choice(INTS[1:]), **_attention_shape(rng))


def _cross(rng: random.Random, spec: dict) -> None:
    """A kind made cross-attention: heads, an MLA latent, or a raw byte shape (``bytes_per_token``
    alone, or heads with ``extra_bytes_per_token``), which the engine rows must decline for
    every engine, the encoder-decoder pool of SGLang included."""
    got = _kind(rng, spec)
    if got is not None:
        got[2].clear()
        tokens = rng.choice(INTS[1:])
        got[2].update(attention="cross", encoder_tokens=tokens, **_byte_shape(rng))


def _byte_shape(rng: random.Random) -> dict:
    """A cross kind's shape: heads, an MLA latent, raw bytes per token, or heads with extra
    bytes (issue 29, C4: what generate could not render while lint passed it)."""
    choice = rng.random()
    if choice < 0.2:
        return {"bytes_per_token": rng.choice((1, 1000, 4096))}
    shape = _attention_shape(rng)
    if choice < 0.4:
        shape["extra_bytes_per_token"] = rng.choice((0, 1, 132))
    return shape


def _reads(rng: random.Random, spec: dict) -> None:
    got = _kind(rng, spec)
    if got is None:
        return
    stack, _name, kind = got
    count = (stack.get("layers") or {}).get("count", 1)
    if rng.random() < 0.5:  # the shape of another kind, so that only the owner can be wrong
        other = stack["layer_kinds"][rng.choice(sorted(stack["layer_kinds"]))]
        if isinstance(other, dict):
            kind.clear()
            kind.update(copy.deepcopy(other))
    last = count - 1 if isinstance(count, int) and count > 0 else 0
    kind["reads"] = rng.choice((0, 1, 2, 3, last, 4095))


def _dtype(rng: random.Random, spec: dict) -> None:
    target = rng.random()
    if target < 0.3:
        spec["kv_cache_dtype"] = rng.choice(DTYPES)
        return
    got = _kind(rng, spec)
    if got is None:
        return
    state = got[2].get("mamba") or got[2].get("mamba1")
    if target < 0.5 and isinstance(state, dict):
        state["ssm_dtype"] = rng.choice(DTYPES)
    elif target < 0.6:
        got[0]["kv_cache_dtype"] = rng.choice(DTYPES)
    else:
        got[2]["dtype"] = rng.choice(DTYPES)


def _index_head_dim(rng: random.Random, spec: dict) -> None:
    got = _kind(rng, spec)
    if got is not None:
        if rng.random() < 0.5:
            got[2].update(attention="full", kv_lora_rank=512, qk_rope_head_dim=64)
            got[2].pop("kv_heads", None), got[2].pop("head_dim", None)
        got[2]["index_head_dim"] = rng.choice((128, 100, 256, 64))


def _mamba(rng: random.Random, spec: dict) -> None:
    got = _kind(rng, spec)
    if got is None:
        return
    got[2].clear()
    got[2]["attention"] = "recurrent"
    if rng.random() < 0.5:
        heads = rng.choice((8, 24, 64, 128))
        state = {"num_heads": heads, "head_dim": 64, "d_state": rng.choice((16, 128)),
                 "n_groups": rng.choice((1, 3, 8)), "d_conv": 4}  # fmt: skip
        got[2]["mamba"] = state
    else:
        got[2]["mamba1"] = {"d_inner": rng.choice((8192, 100)), "d_state": 16, "d_conv": 4}
    if rng.random() < 0.3:
        got[2]["dtype"] = rng.choice(DTYPES)


def _speculative(rng: random.Random, spec: dict) -> None:
    profiles = spec.setdefault("speculative", [])
    if not isinstance(profiles, list):
        return
    kinds = {"d": {"attention": "full", **_attention_shape(rng)}}
    stack = {"layer_kinds": kinds, "layers": {"count": rng.choice((1, 2)), "pattern": ["d"]}}
    mode, part = rng.choice((("mtp", "extra_layers"), ("eagle3", "extra_layers"),
                             ("pard", "draft"), ("dflash", "draft"), ("mtp", "draft")))  # fmt: skip
    entry = {"name": f"p{rng.randrange(100)}", "mode": mode, "max_draft_len": rng.choice((1, 3, 8))}
    if rng.random() < 0.8:
        entry[part] = stack
    if mode == "eagle3" and rng.random() < 0.5:  # a tree smaller than K is only a warning
        entry["tree_draft_tokens"] = rng.choice((1, 2, 8, 60))
    if part == "draft":
        stack["kv_cache_dtype"] = rng.choice(DTYPES[:4])
    profiles.append(entry)


def _acknowledge(rng: random.Random, spec: dict) -> None:
    reason = rng.choice(("x", "ok\n::error file=x::INJECTED", "<!-- hidden", "a" * 300, ""))
    entry = {"change": rng.choice(("capacity-reducing", "api", "other")), "reason": reason}
    if rng.random() < 0.5:
        entry["model"] = rng.choice(("*", "nope", *(m.get("name", "") for m in _stacks(spec))))
    spec.setdefault("acknowledge", []).append(entry)


def _layers(rng: random.Random, spec: dict) -> None:
    stacks = _stacks(spec)
    if stacks:
        layers = rng.choice(stacks).setdefault("layers", {})
        if rng.random() < 0.5:
            layers["count"] = rng.choice((1, 2, 3, 5, 61))
        elif isinstance(layers.get("pattern"), list) and layers["pattern"]:
            rng.shuffle(layers["pattern"])
            layers["pattern"] = layers["pattern"] + layers["pattern"][: rng.randint(0, 2)]


def _window(rng: random.Random, spec: dict) -> None:
    got = _kind(rng, spec)
    if got is None:
        return
    if rng.random() < 0.7:
        got[2]["attention"] = "sliding"
        got[2]["window"] = rng.choice(INTS[1:])
    if rng.random() < 0.4:  # on a sliding kind, or (a warning) on any other
        got[2]["sink_tokens"] = rng.choice((1, 4, 64, 100))


def _shape(rng: random.Random, spec: dict) -> None:
    """Page size, derived head dims, raw byte shapes: what every per-token size reads."""
    choice = rng.random()
    if choice < 0.3:
        spec["tokens_per_block"] = rng.choice((1, 2, 4, 16, 32, 64, 256))
        return
    got = _kind(rng, spec)
    if got is None:
        return
    stack, _name, kind = got
    if choice < 0.6 and "head_dim" in kind:
        del kind["head_dim"]
        stack["hidden_size"] = rng.choice((4096, 4000, 2048))
        stack["num_attention_heads"] = rng.choice((32, 16, 3))
    elif choice < 0.8:
        for key in ("kv_heads", "head_dim", "kv_lora_rank", "qk_rope_head_dim"):
            kind.pop(key, None)
        kind["bytes_per_token"] = rng.choice((1, 1000, 4096))
    else:
        kind["extra_bytes_per_token"] = rng.choice((0, 1, 132))


def _cross_bytes(rng: random.Random, spec: dict) -> None:
    """A byte shape on a cross kind the spec already has (Llama 3.2 Vision's), beside the
    cross kinds ``_cross`` makes: raw bytes per token, or extra bytes beside its heads."""
    kinds = [
        kind
        for stack in _stacks(spec)
        for kind in stack["layer_kinds"].values()
        if isinstance(kind, dict) and kind.get("attention") == "cross"
    ]
    if not kinds:
        return _cross(rng, spec)
    kind = rng.choice(kinds)
    if rng.random() < 0.5:
        for key in ("kv_heads", "head_dim", "kv_lora_rank", "qk_rope_head_dim"):
            kind.pop(key, None)
        kind["bytes_per_token"] = rng.choice((1, 1000, 4096))
    else:
        kind["extra_bytes_per_token"] = rng.choice((0, 1, 132))
    return None


MUTATORS: tuple[Callable[[random.Random, dict], None], ...] = (
    _chunked, _cross, _cross_bytes, _reads, _reads, _dtype, _dtype, _index_head_dim, _mamba,
    _mamba, _speculative, _acknowledge, _layers, _window, _shape,
)  # fmt: skip


@functools.cache
def seeds() -> tuple[tuple[str, dict], ...]:
    """The parsed seed specs (each mutant starts from a deep copy)."""
    return tuple((p.relative_to(ROOT).as_posix(), yaml.safe_load(p.read_text())) for p in SEEDS)


def mutant(rng: random.Random) -> tuple[str, bytes]:
    """One ``(name, data)``: a seed with one to three structural mutations, as YAML."""
    name, spec = rng.choice(seeds())
    spec = copy.deepcopy(spec)
    for _ in range(rng.randint(1, 3)):
        rng.choice(MUTATORS)(rng, spec)
    return name, yaml.safe_dump(spec, sort_keys=False, allow_unicode=True).encode()


def mutations(rng: random.Random) -> Iterator[tuple[str, bytes]]:
    """Endless mutants drawn from ``rng``."""
    while True:
        yield mutant(rng)


def input_at(seed: int, index: int) -> tuple[str, bytes]:
    for i, item in enumerate(mutations(random.Random(seed))):
        if i == index:
            return item
    raise AssertionError("unreachable")


# --- one mutant ----------------------------------------------------------------------------


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # the signal handler signature
    raise _Timeout


def _sibling(name: str):
    """``bench/<name>.py``, imported once (bench/ is not a package)."""
    module = sys.modules.get(f"kvgen_bench_{name}")
    if module is None:
        module = _import(Path(__file__).with_name(f"{name}.py"), f"kvgen_bench_{name}", keep=True)
    return module


def _import(path: Path, name: str, keep: bool = False):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        if not keep:
            del sys.modules[name]
    return module


def generate(name: str, data: bytes, family, tmp: Path, tag: str):
    """Render ``family``, write it under ``tmp`` and import its sizing module and allocator."""
    from kvgen._generate.render import SpecInput, render

    for rel, text in render([SpecInput(name, data, family)]).items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    from kvgen._generate.vendored import import_generated

    base, package = tmp / family.family, f"{tag}_out"  # the runtime lies beside the family
    try:
        return import_generated(base / "sizing.py", package), import_generated(
            base / "allocator.py", package
        )
    finally:  # the modules live on in the caller; sys.modules must not grow per mutant
        for loaded in [n for n in sys.modules if n == package or n.startswith(f"{package}.")]:
            del sys.modules[loaded]


def exercise_generated(name: str, data: bytes, family, rng: random.Random, stats) -> list:
    """Generate a lint-clean ``family``, import its modules and drive them; ``(kind, detail)``
    of every failure (``stats`` counts ``generated`` and ``shim_calls``). Also used by
    ``bench/fuzz.py`` for the byte-level mutants that stay lint-clean."""
    exercise = _sibling("fuzz_shim")
    found: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="kvgen-ffz-") as tmp:
        tag = f"kvgen_ffz_{hashlib.sha256(data).hexdigest()[:16]}"
        try:
            sizing, allocator = generate(name, data, family, Path(tmp), tag)
        except _Timeout:
            raise
        except Exception:
            return [("generated", f"generate or import: {traceback.format_exc(limit=8)}")]
        stats.generated += 1
        found += [("generated", problem) for problem in exercise.exercise_sizing(sizing)]
        found += list(exercise.exercise_shim(allocator, sizing, rng, stats))
    return found


def check_one(name: str, data: bytes, stats: Stats, rng: random.Random, hang_s: float = 10.0):
    """Load, lint and (when clean) generate and exercise one mutant; record what goes wrong."""
    from kvgen._lint.linter import lint_loaded
    from kvgen._spec.loader import load_bytes

    stats.tried += 1
    start = time.perf_counter()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, hang_s * 4)
    try:
        loaded = load_bytes(name, data)
        diagnostics = lint_loaded(loaded)
        for d in diagnostics:
            if d.path != name or d.line < 1 or d.col < 1 or not d.code:
                stats.findings.append(Finding("unpositioned", name, data, d.render()))
        if loaded.family is not None and not any(d.severity == "error" for d in diagnostics):
            stats.clean += 1
            for kind, detail in exercise_generated(name, data, loaded.family, rng, stats):
                stats.findings.append(Finding(kind, name, data, detail))
    except _Timeout:
        stats.findings.append(Finding("hang", name, data, f"aborted after {hang_s * 4:.0f} s"))
    except Exception:
        stats.findings.append(Finding("traceback", name, data, traceback.format_exc(limit=8)))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        elapsed = time.perf_counter() - start
        stats.slowest_s = max(stats.slowest_s, elapsed)
        if elapsed > hang_s and not any(f.data is data for f in stats.findings):
            stats.findings.append(Finding("hang", name, data, f"took {elapsed:.1f} s"))


def fuzz(seconds: float, seed: int = 0, limit: int | None = None, hang_s: float = 10.0) -> Stats:
    """Mutants ``0, 1, ...`` for ``seconds`` (or up to ``limit`` mutants)."""
    import kvgen._generate.render
    import kvgen._lint.linter
    import kvgen.runtime.allocator  # noqa: F401  (imports are no mutant's time)

    rng = random.Random(seed)
    calls = random.Random(seed + 1)  # the shim's call sequences: independent of the mutants
    stats = Stats()
    deadline = time.monotonic() + seconds
    for index, (name, data) in enumerate(mutations(rng)):
        if time.monotonic() > deadline or (limit is not None and index >= limit):
            break
        check_one(name, data, stats, calls, hang_s)
    return stats


def write_findings(stats: Stats, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for finding in stats.findings:
        digest = hashlib.sha256(finding.data).hexdigest()[:12]
        stem = f"{finding.kind}-{Path(finding.name).stem}-{digest}"
        (out / f"{stem}.yaml").write_bytes(finding.data)
        (out / f"{stem}.txt").write_text(f"{finding.name}\n{finding.detail}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, help="stop after this many mutants")
    parser.add_argument("--hang-s", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=Path("fuzz-features-findings"))
    args = parser.parse_args(argv)
    started = time.monotonic()
    stats = fuzz(args.minutes * 60, seed=args.seed, limit=args.limit, hang_s=args.hang_s)
    took = time.monotonic() - started
    print(f"mutants tried:                  {stats.tried} in {took:.0f} s (seed {args.seed})")
    print(f"lint-clean mutants generated:   {stats.generated} of {stats.clean}")
    print(f"shim calls checked:             {stats.shim_calls}")
    print(f"tracebacks (internal errors):   {stats.count('traceback')}")
    print(f"hangs (> {args.hang_s:g} s):                {stats.count('hang')}")
    print(f"diagnostics without a position: {stats.count('unpositioned')}")
    print(f"lint-clean specs whose generated code fails: {stats.count('generated')}")
    print(f"untyped shim errors:            {stats.count('untyped')}")
    print(f"refused calls that changed the shim: {stats.count('state')}")
    print(f"slowest mutant:                 {stats.slowest_s:.2f} s")
    if stats.findings:
        write_findings(stats, args.out)
        seen: set[tuple[str, str]] = set()
        for finding in stats.findings:
            key = finding.detail.strip().splitlines()[-1] if finding.detail.strip() else ""
            if (finding.kind, key) not in seen:
                seen.add((finding.kind, key))
                print(f"\n[{finding.kind}] {finding.name}: {finding.detail.strip()[-600:]}")
        print(f"\noffending inputs written to {args.out}/")
    return 1 if stats.findings else 0


if __name__ == "__main__":
    sys.exit(main())
