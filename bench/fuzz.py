"""Mutation fuzzing of the untrusted-input path: load, lint and render a mutated spec.

    python bench/fuzz.py --minutes 10 --out fuzz-findings

Mutates the shipped specs and the lint corpus (byte flips, deletions, duplications, YAML-aware
edits: numeric extremes, odd tags, deep nesting, control characters, anchors, huge patterns),
and for each input runs, in this process, ``load_bytes`` + ``lint_loaded`` and, when the spec
is clean, generates it (``render``, which compiles every module), imports its sizing module and
allocator, calls every sizing function and drives a shim (``bench/fuzz_features.py``'s
``exercise_generated``). It reports:

- tracebacks (any exception escaping kvgen: what the CLI reports as an internal error),
- crashes (the process killed, e.g. a segfault in the C YAML parser: inputs run in worker
  processes, and the driver restarts after the input that killed one),
- hangs (one input taking more than ``--hang-s``, default 5 s; aborted at 4 x that),
- diagnostics without a position (``file:line:col`` with line and col >= 1 and the input's path),
- lint-clean specs whose generated code fails (``generated``; ``untyped`` and ``state`` for a
  shim call refused untyped or with its state changed),

prints a summary, and writes each offending input and its report to ``--out``. Deterministic
for a given ``--seed``. The test suite runs a bounded slice (``tests/acceptance/test_fuzz.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEEDS = (
    sorted((ROOT / "schema/families").glob("*.yaml"))
    + sorted((ROOT / "tests/lint_corpus").rglob("*.yaml"))
    + sorted((ROOT / "tests/lint_corpus").rglob("*.yml"))
)

# YAML-aware replacements for a scalar value: numbers at and past every limit, tags the
# loader must refuse or check, and strings that could escape a literal or a comment.
SCALARS = (
    "0", "-1", "1.5", "128.0", ".nan", ".inf", "-.inf", "1e309", "1e9", "100000000",
    "9" * 4301, "0x10", "0o17", "1_000", "~", "null", "yes", "!!bool yes", "!!int name",
    "!!float abc", "!!str 5", "!!python/object:os.system", "!!binary aGk=", "&a 1", "*a",
    "[]", "{}", '"a\\nb"', "'\"\"\"'", '"\\x00"', '"\\u2028"', "\t", "a" * 10000,
    "[" * 64 + "]" * 64, "{a: " * 64 + "1" + "}" * 64,
)  # fmt: skip
CONTROL = ("\x00", "\x07", "\x0b", "\x0c", "\x1b", "\x7f", "\x85", "\u2028", "\ufeff", "\r")


@dataclass
class Finding:
    kind: str  # traceback | crash | hang | unpositioned | generated | untyped | state
    name: str
    data: bytes
    detail: str


@dataclass
class Stats:
    tried: int = 0
    clean: int = 0
    rendered: int = 0
    slowest_s: float = 0.0
    findings: list[Finding] = field(default_factory=list)

    def count(self, kind: str) -> int:
        return sum(f.kind == kind for f in self.findings)


# --- mutators ------------------------------------------------------------------------------


def _flip(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return b"\xff"
    i = rng.randrange(len(data))
    return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]


def _delete(rng: random.Random, data: bytes) -> bytes:
    if len(data) < 2:
        return b""
    i = rng.randrange(len(data))
    return data[:i] + data[i + rng.randint(1, min(64, len(data) - i)) :]


def _duplicate(rng: random.Random, data: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    if not lines:
        return data * 2
    i = rng.randrange(len(lines))
    j = min(len(lines), i + rng.randint(1, 4))
    return b"".join(lines[:j] + lines[i:j] * rng.randint(1, 3) + lines[j:])


def _scalar(rng: random.Random, data: bytes) -> bytes:
    """Replace the value after one ``key:`` with a hostile scalar."""
    lines = data.splitlines(keepends=True)
    candidates = [i for i, line in enumerate(lines) if b": " in line]
    if not candidates:
        return data
    i = rng.choice(candidates)
    head, _, _ = lines[i].partition(b": ")
    value = rng.choice(SCALARS).encode("utf-8")
    lines[i] = head + b": " + value + b"\n"
    return b"".join(lines)


def _control(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice(CONTROL).encode("utf-8") + data[i:]


def _nest(rng: random.Random, data: bytes) -> bytes:
    depth = rng.choice((50, 500, 5000, 30000))
    style = rng.choice(("flow", "block"))
    if style == "flow":
        deep = b"deep: " + b"[" * depth + b"]" * depth + b"\n"
    else:
        deep = b"deep:\n" + b"".join(b"  " * (k + 1) + b"- \n" for k in range(min(depth, 2000)))
    return data + b"\n" + deep


def _pattern(rng: random.Random, data: bytes) -> bytes:
    """Blow up a layer pattern (many distinct kinds): generation must stay bounded."""
    kinds = rng.choice((64, 512, 4096))
    pattern = ", ".join(f"k{i}" for i in range(kinds))
    return data.replace(b"pattern: [", f"pattern: [{pattern}, ".encode(), 1)


MUTATORS: tuple[Callable[[random.Random, bytes], bytes], ...] = (
    _flip, _flip, _delete, _duplicate, _scalar, _scalar, _scalar, _control, _nest, _pattern,
)  # fmt: skip


def mutations(rng: random.Random, seeds: list[Path]) -> Iterator[tuple[str, bytes]]:
    """Endless ``(name, data)``: one seed file with one to three mutations applied."""
    texts = [(p.relative_to(ROOT).as_posix(), p.read_bytes()) for p in seeds]
    while True:
        name, data = rng.choice(texts)
        for _ in range(rng.randint(1, 3)):
            data = rng.choice(MUTATORS)(rng, data)
        yield name, data


# --- one input -----------------------------------------------------------------------------


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # the signal handler signature
    raise _Timeout


def check_one(name: str, data: bytes, stats: Stats, hang_s: float = 5.0) -> None:
    """Load, lint and (when clean) render one input; record what goes wrong in ``stats``."""
    from kvgen._lint.linter import lint_loaded
    from kvgen._spec.loader import load_bytes

    features = _features()
    exercised_s = 0.0
    stats.tried += 1
    start = time.perf_counter()
    use_alarm = hasattr(signal, "setitimer")
    if use_alarm:
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
            counts = features.Stats()
            began = time.perf_counter()
            found = features.exercise_generated(name, data, loaded.family, random.Random(0), counts)
            exercised_s = time.perf_counter() - began  # the generated code's time, not kvgen's
            stats.rendered += counts.generated
            stats.findings += [Finding(kind, name, data, detail) for kind, detail in found]
    except _Timeout:
        stats.findings.append(Finding("hang", name, data, f"aborted after {hang_s * 4:.0f} s"))
    except RecursionError:
        stats.findings.append(Finding("traceback", name, data, "RecursionError"))
    except Exception:
        stats.findings.append(Finding("traceback", name, data, traceback.format_exc(limit=8)))
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    elapsed = time.perf_counter() - start - exercised_s
    stats.slowest_s = max(stats.slowest_s, elapsed)
    if elapsed > hang_s and not any(f.data is data for f in stats.findings):
        stats.findings.append(Finding("hang", name, data, f"took {elapsed:.1f} s"))


def _features():
    """``bench/fuzz_features.py`` (bench/ is not a package): generation and shim checks."""
    import importlib.util

    module = sys.modules.get("kvgen_bench_fuzz_features")
    if module is None:
        path = Path(__file__).with_name("fuzz_features.py")
        spec = importlib.util.spec_from_file_location("kvgen_bench_fuzz_features", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return module


def fuzz(
    seconds: float,
    seed: int = 0,
    limit: int | None = None,
    hang_s: float = 5.0,
    start: int = 0,
    journal: Path | None = None,
) -> Stats:
    """Run mutations ``start``, ``start + 1``, ... for ``seconds`` (or up to input ``limit``).

    ``journal`` gets one JSON line per input checked, written as soon as it is checked, so
    that a driver keeps every result and can name the input that killed the process (a C
    extension's segfault): the one after the last line.
    """
    import json

    import kvgen._generate.render
    import kvgen._lint.linter
    import kvgen.runtime.allocator  # noqa: F401  (imports are no input's time)

    rng = random.Random(seed)
    stats = Stats()
    deadline = time.monotonic() + seconds
    handle = journal.open("a", encoding="utf-8") if journal is not None else None
    try:
        for index, (name, data) in enumerate(mutations(rng, SEEDS)):
            if time.monotonic() > deadline or (limit is not None and index >= limit):
                break
            if index < start:
                continue
            one = Stats()
            check_one(name, data, one, hang_s)
            _merge(stats, _to_json(one))
            if handle is not None:
                handle.write(json.dumps({"index": index, **_to_json(one)}) + "\n")
                handle.flush()
        if handle is not None:
            handle.write(json.dumps({"done": True}) + "\n")
    finally:
        if handle is not None:
            handle.close()
    return stats


def input_at(seed: int, index: int) -> tuple[str, bytes]:
    for i, item in enumerate(mutations(random.Random(seed), SEEDS)):
        if i == index:
            return item
    raise AssertionError("unreachable")


def fuzz_isolated(
    seconds: float, seed: int = 0, limit: int | None = None, hang_s: float = 5.0
) -> Stats:
    """``fuzz`` in worker processes: a worker killed by a signal (a crash in C code) is a
    ``crash`` finding for the input it was checking, and a new worker continues after it."""
    import json
    import subprocess
    import tempfile

    total = Stats()
    deadline = time.monotonic() + seconds
    start = 0
    with tempfile.TemporaryDirectory(prefix="kvgen-fuzz-") as tmp:
        journal = Path(tmp) / "journal.jsonl"
        while time.monotonic() < deadline and (limit is None or start < limit):
            journal.unlink(missing_ok=True)
            command = [
                sys.executable, __file__, "--worker", "--seed", str(seed), "--start", str(start),
                "--seconds", str(max(1.0, deadline - time.monotonic())), "--hang-s", str(hang_s),
                "--journal", str(journal),
            ]  # fmt: skip
            if limit is not None:
                command += ["--limit", str(limit)]
            worker = subprocess.run(command, check=False, capture_output=True)
            done, index = False, start
            lines = journal.read_text().splitlines() if journal.exists() else []
            for line in lines:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    break  # the line being written when the worker died
                if entry.get("done"):
                    done = True
                    break
                _merge(total, entry)
                index = entry["index"] + 1
            if done:
                break
            name, raw = input_at(seed, index)
            total.tried += 1
            detail = f"worker died with exit {worker.returncode}: {worker.stderr[-400:]!r}"
            total.findings.append(Finding("crash", name, raw, detail))
            start = index + 1
    return total


def _to_json(stats: Stats) -> dict:
    return {
        "tried": stats.tried,
        "clean": stats.clean,
        "rendered": stats.rendered,
        "slowest_s": stats.slowest_s,
        "findings": [
            {"kind": f.kind, "name": f.name, "data": f.data.hex(), "detail": f.detail}
            for f in stats.findings
        ],
    }


def _merge(total: Stats, data: dict) -> None:
    total.tried += data["tried"]
    total.clean += data["clean"]
    total.rendered += data["rendered"]
    total.slowest_s = max(total.slowest_s, data["slowest_s"])
    total.findings += [
        Finding(f["kind"], f["name"], bytes.fromhex(f["data"]), f["detail"])
        for f in data["findings"]
    ]


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
    parser.add_argument("--limit", type=int, help="stop after this many inputs")
    parser.add_argument("--hang-s", type=float, default=5.0)
    parser.add_argument("--out", type=Path, default=Path("fuzz-findings"))
    # Worker mode (used by the driver itself): one process, one JSON line per input checked.
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--journal", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        fuzz(args.seconds, args.seed, args.limit, args.hang_s, args.start, args.journal)
        return 0
    started = time.monotonic()
    stats = fuzz_isolated(args.minutes * 60, seed=args.seed, limit=args.limit, hang_s=args.hang_s)
    took = time.monotonic() - started
    print(f"inputs tried:               {stats.tried} in {took:.0f} s (seed {args.seed})")
    print(f"clean specs rendered:       {stats.rendered} of {stats.clean}")
    print(f"tracebacks (internal errors): {stats.count('traceback')}")
    print(f"crashes (worker killed):    {stats.count('crash')}")
    print(f"hangs (> {args.hang_s:g} s):              {stats.count('hang')}")
    print(f"diagnostics without a position: {stats.count('unpositioned')}")
    failed = stats.count("generated") + stats.count("untyped") + stats.count("state")
    print(f"lint-clean specs whose generated code fails: {failed}")
    print(f"slowest input:              {stats.slowest_s:.2f} s")
    if stats.findings:
        write_findings(stats, args.out)
        seen: set[tuple[str, str]] = set()
        for finding in stats.findings:
            key = finding.detail.strip().splitlines()[-1] if finding.detail.strip() else ""
            if (finding.kind, key) in seen:
                continue
            seen.add((finding.kind, key))
            print(f"\n[{finding.kind}] {finding.name}: {finding.detail.strip()[-600:]}")
        print(f"\noffending inputs written to {args.out}/")
    return 1 if stats.findings else 0


if __name__ == "__main__":
    sys.exit(main())
