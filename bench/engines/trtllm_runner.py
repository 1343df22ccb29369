"""Run TensorRT-LLM's own KV cache manager V2 on CPU beside kvgen's shim; write the goldens.

Usage (from the repository root, kvgen's virtualenv active):
    python bench/engines/trtllm_runner.py --engine-src DIR [--skip-unit-tests] [--only NAME]

``DIR`` holds the engine's V2 manager package and its unit tests at the commits listed in
``bench/engines/trtllm_source.py`` (how to get them: that module's docstring; nothing of the
engine enters this repository). The runner

1. checks every engine file's size and digest, builds the ``rawref`` C extension in place
   (``python setup.py build_ext --inplace``; the system compiler and Python headers), and
   checks that the engine's own dependencies (``llist``; ``parameterized`` for its tests;
   ``pip install -r bench/engines/requirements-trtllm.txt``) import;
2. runs the engine's unit tests (``test_kv_cache_manager_v2.py``) under kvgen's CPU stand-ins
   for the CUDA driver, runtime, NVRTC and the C++ batched copies (``trtllm_stubs/``) as a
   self-check, and records the count;
3. drives the engine (``trtllm_engine.py``, in a subprocess with only the stand-ins, the engine
   and the standard library) and kvgen's shim through the same workloads
   (``tests/trtllm_cases.py``, three seeds each), and writes what the engine did, step by
   step, with provenance to ``tests/fixtures/engines/trtllm.json``, with the differences the
   shim shows today;
4. offers each case's managers a set of quotas (``quota_probes``: the shim's pools at 4,096
   tokens, one quota per grain size, ``quota_for_requests`` under ``"trtllm-v2"`` and, for
   attention-only managers, the bytes of kvgen's own planned pools) and records the pool
   groups the engine builds from each (``quota_pools``), which
   ``tests/unit/test_trtllm_split.py`` replays against ``kvgen.sizing.trtllm_split``.

5. (without ``--only``, or with ``--only closed_loop``) closes the loop of
   ``kvgen plan --emit trtllm``: for every config of ``tests/trtllm_closed_loop.py`` it
   takes the settings emit prints as JSON, gives their ``kv_cache_config.max_gpu_total_bytes``
   to the engine's ``KVCacheManager`` as the GPU quota of the model's layers on one rank,
   and records the pool groups it builds (``closed_loop``).

``tests/generated/test_trtllm_goldens.py`` replays the goldens against the shim and
``tests/deploy/test_trtllm_closed_loop.py`` the closed loop against emit; CI needs no engine.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(HERE)]

from trtllm_source import FILES, REPOSITORY, upstream_path  # noqa: E402

from tests.trtllm_cases import (  # noqa: E402
    AMPLE,
    CASES,
    PROBE_QUOTAS,
    SEEDS,
    Case,
    compact_managers,
    kvgen_pools_bytes,
)
from tests.trtllm_shim import Replay, ShimDriver, replay  # noqa: E402
from tests.trtllm_traces import continuous_batching, encode_rows  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "engines" / "trtllm.json"
STUBS = HERE / "trtllm_stubs"
PROVENANCE = {
    "modules": [
        "kv_cache_manager_v2/_core/_kv_cache_manager.py",
        "kv_cache_manager_v2/_core/_kv_cache.py",
        "kv_cache_manager_v2/_storage_manager.py",
        "kv_cache_manager_v2/_storage/_config.py",
        "kv_cache_manager_v2/_storage/_core.py",
        "kv_cache_manager_v2/_life_cycle_registry.py",
        "kv_cache_manager_v2/_page.py",
        "kv_cache_manager_v2/_config.py",
    ],
    "functions": [
        "KVCacheManager.__init__",
        "KVCacheManager.create_kv_cache",
        "_KVCache.resume",
        "_KVCache.resize",
        "_KVCache.commit",
        "_KVCache.suspend",
        "_KVCache.close",
        "_KVCache.get_page_indices",
        "StorageManager.get_statistics",
        "create_storage_config",
        "CacheLevelStorage._ratio_to_slot_count_list",
        "CacheLevelManager._create_cache_level_storage",
        "HostCacheTierConfig (host cases: a second cache level)",
        "StorageManager.prepare_free_slots",
        "StorageManager._batched_migrate",
        "batched_lock_to_gpu",
    ],
    "produced_by": "engine code run on CPU; stand-ins in bench/engines/trtllm_stubs/",
    "row": "capacity tokens of live requests, then per manager: pages held per life cycle, "
    "slots occupied per pool group, evictable slots per pool group (GPU tier)",
}


def check_source(src: Path) -> list[dict[str, Any]]:
    files = []
    for path, commit, chars, digest in FILES:
        file = src / path
        if not file.is_file():
            raise SystemExit(f"{file}: missing; see bench/engines/trtllm_source.py")
        data = file.read_bytes()
        got = hashlib.sha256(data).hexdigest()[:16]
        if len(data.decode("utf-8")) != chars or got != digest:
            raise SystemExit(f"{file}: not the file of commit {commit} (size or digest differs)")
        files.append({"path": upstream_path(path), "commit": commit, "sha256_16": digest})
    return files


def build_rawref(src: Path) -> None:
    folder = src / "kv_cache_manager_v2" / "rawref"
    if not list(folder.glob("_rawref*.so")):
        subprocess.run(
            [sys.executable, "setup.py", "build_ext", "--inplace"],
            cwd=folder,
            check=True,
            capture_output=True,
        )


def engine_env(src: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(STUBS), str(src), str(ROOT)])
    return env


def unit_tests(src: Path) -> str:
    """The engine's own unit tests under the stand-ins: pytest's summary line."""
    folder = src / "tests" / "kv_cache_manager_v2_tests"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", folder.name],
        cwd=folder.parent,
        env=engine_env(src),
        capture_output=True,
        text=True,
        check=False,
    )
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-400:]
    if proc.returncode != 0 or "failed" in summary or "error" in summary:
        raise SystemExit(f"engine unit tests under the stand-ins: {summary}")
    return re.sub(r" in [0-9.]+s.*$", "", summary)


def engine_case(case: Case, seed: int) -> dict[str, Any]:
    shim = case.shim()
    managers = case.engine_managers(shim)
    # AMPLE x the shim's pools as planned (without its spare pages): nothing runs out.
    planned = case.shim(pool_pages={}).quota_bytes()
    quotas = case.quota() or {name: AMPLE * total for name, total in planned.items()}
    for m in managers:
        m["quota"] = quotas[m["name"]]
    # Pools built for a set of quotas: the shim's pools for 4096 tokens, PROBE_QUOTAS (one per
    # grain), and the serving quotas of the case's batch and max_seq_len (quota_for_requests
    # and, for attention-only managers, kvgen's own pool bytes).
    probes = [case.shim_for_tokens(4096).quota_bytes()]
    probes += [{m["name"]: q for m in managers} for q in PROBE_QUOTAS]
    probes += serving_quotas(case)
    out = {
        "id": f"{case.name}/seed{seed}",
        "tokens_per_block": shim.tokens_per_block,
        "max_util_for_resume": shim._util32,  # the wrapper hands the engine a float32
        "block_reuse": case.block_reuse,
        "params": case.params(seed, shim).as_dict(),
        "managers": managers,
        "quota_probes": probes,
    }
    if case.host_quota is not None:
        out["host_quota"] = case.host_quota
    return out


def serving_quotas(case: Case) -> list[dict[str, int]]:
    import importlib

    if case.family == "synthetic":  # hand-built tables: no generated sizing module
        return []
    sizing = importlib.import_module(f"generated.{case.family}.sizing")
    serving = {
        "requests": case.batch,
        "seq_len": case.max_seq_len,
        "speculative": case.speculative,
        "max_num_tokens": case.max_num_tokens,
    }
    out = [sizing.quota_for_requests(case.model, semantics="trtllm-v2", **serving)]
    with contextlib.suppress(ValueError):  # a manager the static pool plan declines: no probe
        out.append(kvgen_pools_bytes(sizing, case.model, serving))
    return out


def closed_loop_inputs() -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]]:
    """(config, what ``plan --emit trtllm --format json`` printed, the engine's input or None
    where emit refused) of every closed-loop config."""
    from tests import trtllm_closed_loop as loop

    out = []
    for config in loop.configs():
        emit = loop.emitted(config)
        engine = None
        if "refused" not in emit:
            kv = emit["fields"]["kv_cache_config"]
            engine = {"tokens_per_block": kv["tokens_per_block"],
                      "max_util_for_resume": kv["max_util_for_resume"],
                      "quota": kv["max_gpu_total_bytes"],
                      "layers": loop.engine_layers(config)}  # fmt: skip
        out.append((config, emit, engine))
    return out


def closed_loop_entries(
    inputs: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]],
    built: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    from tests import trtllm_closed_loop as loop

    results = iter(built)
    entries = []
    for config, emit, engine in inputs:
        entry: dict[str, Any] = {"id": loop.config_id(config), "config": config}
        if engine is None:
            entry["emit_refused"] = emit["refused"]
        else:
            entry["emitted"] = {"fields": emit["fields"], "capacity": emit["capacity"]}
            layers = [{"name": "target", "layers": engine["layers"]}]
            entry["engine_layers"] = compact_managers(layers)[0]
            entry["engine"] = next(results)
        entries.append(entry)
    return entries


def run_engine(
    src: Path, cases: list[dict[str, Any]], loops: list[dict[str, Any]] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    proc = subprocess.run(
        [sys.executable, str(HERE / "trtllm_engine.py")],
        input=json.dumps({"cases": cases, "closed_loop": loops or []}),
        env=engine_env(src),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"trtllm_engine.py failed (exit {proc.returncode})")
    out = json.loads(proc.stdout)
    return out["results"], out["closed_loop"]


def differences(case: Case, seed: int, engine: dict[str, Any]) -> dict[str, Any]:
    """What the shim does differently today: differing rows per column group."""
    shim = case.shim(case.pool_pages(engine))
    out = compare(engine, replay(shim, engine, continuous_batching(case.params(seed, shim))))
    if case.host_quota is not None:
        out["host_rows"] = host_rows(shim, engine)
    return out


def host_rows(shim: Any, engine: dict[str, Any]) -> dict[str, list[list[int]]]:
    """Per manager, [engine's host slots, shim's host rows] of every engine pool group."""
    driver = ShimDriver(shim, engine)
    out = {}
    for (name, described), (_lcs, groups) in zip(
        engine["managers"].items(), driver.columns, strict=True
    ):
        rows = [shim._paged[group[0]].pool.host_pages for group in groups]
        out[name] = [described["host_slots"], rows]
    return out


def compare(engine: dict[str, Any], replayed: Replay) -> dict[str, Any]:
    """Steps whose columns differ, per group (capacity, held, occupied, evictable)."""
    groups = {"capacity": [0]}
    at = 1
    for name, m in engine["managers"].items():
        lcs, pgs = len(m["life_cycles"]), len(m["slots"])
        groups[f"{name}.held"] = list(range(at, at + lcs))
        groups[f"{name}.occupied"] = list(range(at + lcs, at + lcs + pgs))
        groups[f"{name}.evictable"] = list(range(at + lcs + pgs, at + lcs + 2 * pgs))
        at += lcs + 2 * pgs
    rows, shim_rows = engine["rows"], replayed.rows
    out: dict[str, Any] = {"steps": len(rows), "shim_steps": len(shim_rows)}
    for group, columns in groups.items():
        diff = [
            i
            for i, (a, b) in enumerate(zip(rows, shim_rows, strict=False))
            if any(a[c] != b[c] for c in columns)
        ]
        out[group] = {"differing_steps": len(diff), "first": diff[0] if diff else None}
    out["outcome_mismatches"] = [list(m) for m in replayed.mismatches]
    out["divergence"] = replayed.divergence
    return out


def steps_group(value: Any) -> bool:
    """A column group's entry of ``compare``: its differing steps and the first of them."""
    return isinstance(value, dict) and "differing_steps" in value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine-src", type=Path, required=True)
    parser.add_argument("--skip-unit-tests", action="store_true")
    parser.add_argument(
        "--only", help="run the cases whose name contains this ('closed_loop': only that)"
    )
    parser.add_argument("--out", type=Path, default=FIXTURE)
    args = parser.parse_args(argv)
    src = args.engine_src.resolve()
    files = check_source(src)
    build_rawref(src)
    check = subprocess.run(
        [sys.executable, "-c", "import llist, parameterized, numpy, kv_cache_manager_v2"],
        env=engine_env(src),
        capture_output=True,
        text=True,
        check=False,
    )
    if check.returncode != 0:
        raise SystemExit(f"engine imports: {check.stderr.strip()[-400:]}")
    summary = "skipped" if args.skip_unit_tests else unit_tests(src)
    print(f"engine unit tests under the stand-ins: {summary}")
    chosen = [c for c in CASES if args.only is None or args.only in c.name]
    grid = [(case, seed, engine_case(case, seed)) for case in chosen for seed in SEEDS]
    loop_inputs = closed_loop_inputs() if args.only in (None, "closed_loop") else []
    results, built = run_engine(
        src, [g for _c, _s, g in grid], [e for _c, _e, e in loop_inputs if e is not None]
    )
    entries = []
    for (case, seed, inputs), result in zip(grid, results, strict=True):
        diff = differences(case, seed, result)
        inputs = dict(inputs, managers=compact_managers(inputs["managers"]))
        entries.append(
            {
                "case": case.name,
                "seed": seed,
                "inputs": inputs,
                "engine": {
                    "managers": result.get("managers"),
                    "outcomes": result.get("outcomes", []),
                    "error": result.get("error"),
                    "rows": encode_rows(result["rows"]),
                    "quota_pools": result.get("quota_pools"),
                    "single_request_peaks": result.get("single_request_peaks"),
                },
                "shim_differences_at_refresh": diff,
            }
        )
        differing = {k: v["differing_steps"] for k, v in diff.items() if steps_group(v)}
        line = f"{case.name}/seed{seed}: {diff['steps']} steps, differing steps " + ", ".join(
            f"{k} {n}" for k, n in differing.items()
        )
        line += f", outcomes differing {len(diff['outcome_mismatches'])}"
        if "host_rows" in diff:
            same = all(e == s for e, s in diff["host_rows"].values())
            line += f", host rows {'equal' if same else 'DIFFER'}"
        print(line + (f", engine: {result['error']}" if result.get("error") else ""))
    golden = {
        "engine": "tensorrt_llm kv_cache_manager_v2",
        "repository": REPOSITORY,
        "files": files,
        "unit_tests_under_stand_ins": summary,
        "provenance": PROVENANCE,
        "refresh": "python bench/engines/trtllm_runner.py --engine-src DIR",
        "cases": entries,
        "closed_loop": {
            "produced_by": "kvgen._deploy.emit.launch + render(json) (plan --emit trtllm "
            "--format json) in process; the engine's KVCacheManager(KVCacheManagerConfig("
            "cache_tiers=[GpuCacheTierConfig(quota=max_gpu_total_bytes)])), run on CPU",
            "functions": [
                "KVCacheManager.__init__",
                "create_storage_config",
                "CacheLevelManager._create_cache_level_storage",
                "CacheLevelStorage._ratio_to_slot_count_list",
            ],
            "configs": closed_loop_entries(loop_inputs, built),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(golden, separators=(",", ":"), sort_keys=True) + "\n")
    steps = sum(e["shim_differences_at_refresh"]["steps"] for e in entries)
    differing = sum(
        v["differing_steps"]
        for e in entries
        for v in e["shim_differences_at_refresh"].values()
        if steps_group(v)
    )
    print(f"{args.out}: {len(entries)} runs, {steps} steps, {len(loop_inputs)} closed-loop configs")
    print(f"differing steps over every run and column group: {differing}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
