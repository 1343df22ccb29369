"""The TensorRT-LLM source the V2 comparison runs: file, upstream commit, size, digest.

Nothing of the engine is in this repository. Get each file from the public repository
NVIDIA/TensorRT-LLM at the commit listed (``git show <commit>:<upstream path>``, or the file's
raw view on GitHub at that commit) into one folder, keeping the layout below, and pass that
folder as ``--engine-src``: ``kv_cache_manager_v2/`` is upstream
``tensorrt_llm/runtime/kv_cache_manager_v2/``, ``tests/kv_cache_manager_v2_tests/`` is upstream
``tests/unittest/kv_cache_manager_v2_tests/``. This set is an early-2026 revision whose files
import each other consistently (before SSM layers, batch constraints, SWA scratch reuse and
pool rebalancing). The runner checks every file's size and sha256 prefix before it runs.
"""

from __future__ import annotations

REPOSITORY = "https://github.com/NVIDIA/TensorRT-LLM"
PACKAGE = "tensorrt_llm/runtime/kv_cache_manager_v2/"
TESTS = "tests/unittest/kv_cache_manager_v2_tests/"

# (path under --engine-src, upstream commit, characters, sha256 prefix of the bytes)
FILES = (
    (
        "kv_cache_manager_v2/__init__.py",
        "be16abb955db452e126ba4c9712ebdebf69e9bda",
        1927,
        "38f15e4d24ae5588",
    ),
    (
        "kv_cache_manager_v2/_block_radix_tree.py",
        "27efb004dedb0315d87c2fbf327e4b9a541211d1",
        16030,
        "dfb9f81814db62e6",
    ),
    (
        "kv_cache_manager_v2/_common.py",
        "eb3951ab234437bda5c32c92b3611be3eeffe9f3",
        2726,
        "1a98a1d976e07255",
    ),
    (
        "kv_cache_manager_v2/_config.py",
        "fe7c434aa8c012e2f51e20140918dfd447583528",
        4739,
        "73152dfa7bd61692",
    ),
    (
        "kv_cache_manager_v2/_copy_engine.py",
        "4097b146c790ea546cb089838e1e5ec61301b286",
        12193,
        "09e293b7263ac5f7",
    ),
    (
        "kv_cache_manager_v2/_core/__init__.py",
        "439e0799ca967385aa6a656401a9975d81e7a455",
        984,
        "f771fcc9a70fc2a3",
    ),
    (
        "kv_cache_manager_v2/_core/_kv_cache.py",
        "f4faed18a1a35ff6a29c29e91650faa70a793bff",
        48473,
        "b7742dd2b66bc075",
    ),
    (
        "kv_cache_manager_v2/_core/_kv_cache_manager.py",
        "79fc8b8d670b798434058fb57f43f0413fc87d6c",
        13568,
        "1ba97d39a3a08212",
    ),
    (
        "kv_cache_manager_v2/_cuda_virt_mem.py",
        "182a127344dfc07bfefb9b847f84b7f41781711e",
        7443,
        "0adf7d8105aa0eb8",
    ),
    (
        "kv_cache_manager_v2/_eviction_controller/__init__.py",
        "d73c2cd7dbd1817f4a10904ccace97530fddc620",
        904,
        "1bba30351c80cfaa",
    ),
    (
        "kv_cache_manager_v2/_eviction_controller/_eviction_controller.py",
        "be16abb955db452e126ba4c9712ebdebf69e9bda",
        7967,
        "b7a1ce2af16114fe",
    ),
    (
        "kv_cache_manager_v2/_exceptions.py",
        "fe94d18a21057cafd985323d0a2e22b640c5f939",
        1576,
        "d60e2be70933d3fc",
    ),
    (
        "kv_cache_manager_v2/_life_cycle_registry.py",
        "e0e8bb8d10f39c1eef8cf424d25f5f263989714b",
        3536,
        "edbea0277407b52f",
    ),
    (
        "kv_cache_manager_v2/_page.py",
        "4097b146c790ea546cb089838e1e5ec61301b286",
        15474,
        "477eaaf92ba6303c",
    ),
    (
        "kv_cache_manager_v2/_storage/__init__.py",
        "439e0799ca967385aa6a656401a9975d81e7a455",
        833,
        "ca0951c8004bcddd",
    ),
    (
        "kv_cache_manager_v2/_storage/_config.py",
        "9827ccffc9e52df998e20c8f26360abc947ce898",
        7305,
        "4552a46f0efe202e",
    ),
    (
        "kv_cache_manager_v2/_storage/_core.py",
        "d73c2cd7dbd1817f4a10904ccace97530fddc620",
        33487,
        "a09f4ec803ccdcfa",
    ),
    (
        "kv_cache_manager_v2/_storage_manager.py",
        "b2dd2882ec5034960256ade9e85db7827d79c62e",
        22291,
        "0a9d99a482d50027",
    ),
    (
        "kv_cache_manager_v2/_utils.py",
        "3fea94cd59627d75b51e23d24d665219bc28f1e4",
        29126,
        "9cc81ea98419dd26",
    ),
    (
        "kv_cache_manager_v2/rawref/__init__.py",
        "439e0799ca967385aa6a656401a9975d81e7a455",
        1291,
        "9400980ca806c509",
    ),
    (
        "kv_cache_manager_v2/rawref/rawrefmodule.c",
        "32001e8157111d8f0b9effddb6e4391a93db63af",
        7452,
        "fc5d1a8b97a00dcc",
    ),
    (
        "kv_cache_manager_v2/rawref/setup.py",
        "439e0799ca967385aa6a656401a9975d81e7a455",
        950,
        "6ff61a0192142eb4",
    ),
    (
        "tests/kv_cache_manager_v2_tests/test_kv_cache_manager_v2.py",
        "f4faed18a1a35ff6a29c29e91650faa70a793bff",
        35869,
        "ace7ecc3f0247936",
    ),
    (
        "tests/kv_cache_manager_v2_tests/fake_engine.py",
        "4097b146c790ea546cb089838e1e5ec61301b286",
        7645,
        "5b86cfa806fd0e34",
    ),
    (
        "tests/kv_cache_manager_v2_tests/kernels.py",
        "439e0799ca967385aa6a656401a9975d81e7a455",
        9785,
        "d82232aacca3267f",
    ),
)


def upstream_path(path: str) -> str:
    """Where ``path`` (under --engine-src) lives in the upstream repository."""
    if path.startswith("kv_cache_manager_v2/"):
        return PACKAGE + path.removeprefix("kv_cache_manager_v2/")
    return TESTS + path.removeprefix("tests/kv_cache_manager_v2_tests/")
