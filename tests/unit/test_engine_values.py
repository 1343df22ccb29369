"""Engines and deployments are values, not strings spread thin (issue 28), read from the source.

- No code outside ``kvgen.sizing.engines_registry`` tells engines apart by name: no comparison with
  an engine's name, no table keyed by one, no engine chosen by a name written in place. Code reads
  a field of the engine's value instead (its capabilities, hooks, settings, releases).
- No parsed arguments below the command layer: the command builds one frozen request from its
  flags (or a deployment file) and hands that down.
- kvgen's deployment defaults are defined once (``kvgen.sizing.engines_registry``) and imported.

Each check walks the package's syntax trees, so it names the file and line of every breach; on
c2a37ec they find 50 engine-name sites on distinct lines of 16 files, 13 uses of parsed
arguments in ``kvgen._deploy.cli`` and defaults written in place on 31 lines of 12 files.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "generator"
REGISTRY = PACKAGE / "sizing" / "engines_registry.py"
# Every name an engine goes by (kvgen.sizing.engines_registry: names and aliases), written out here
# so that the check does not depend on the module it guards.
ENGINE_NAMES = {"trtllm", "trtllm-v2", "vllm", "sglang"}


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE.parent).as_posix(), ast.parse(path.read_text("utf-8"))


def _names_an_engine(node: ast.AST | None) -> bool:
    """A string constant that is an engine's name, alone or in a tuple, list or set."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in ENGINE_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_an_engine(item) for item in node.elts)
    return False


def engine_name_sites(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, code) of every place ``tree`` tells engines apart by a name written in place."""
    found = []
    for node in ast.walk(tree):
        hit = False
        if isinstance(node, ast.Compare):
            # "trtllm-v2" is also the name of a cost semantics (cache_costs' semantics=, not an
            # engine): a comparison of a semantics is not one of an engine.
            hit = any(_names_an_engine(n) for n in (node.left, *node.comparators))
            hit = hit and "semantics" not in ast.unparse(node)
        elif isinstance(node, ast.Dict):  # a table keyed by engine names
            hit = any(_names_an_engine(key) for key in node.keys)
        elif isinstance(node, ast.Subscript):  # TABLE["vllm"]
            hit = _names_an_engine(node.slice)
        elif isinstance(node, ast.MatchValue):
            hit = _names_an_engine(node.value)
        elif isinstance(node, ast.keyword):  # f(engine="trtllm-v2")
            hit = node.arg is not None and "engine" in node.arg and _names_an_engine(node.value)
        elif isinstance(node, ast.BoolOp):  # args.engine or "trtllm-v2"
            hit = any(_names_an_engine(value) for value in node.values)
        elif isinstance(node, ast.arguments):  # def f(engine="trtllm-v2")
            found += [
                (arg.lineno, f"{arg.arg}={ast.unparse(default)}")
                for arg, default in _defaults(node)
                if "engine" in arg.arg and _names_an_engine(default)
            ]
        if hit:
            found.append((getattr(node, "lineno", 0), ast.unparse(node)[:80]))
    return found


def _defaults(node: ast.arguments) -> list[tuple[ast.arg, ast.expr | None]]:
    """Each parameter with its default (None: it has none)."""
    positional = [*node.posonlyargs, *node.args]
    padding: list[ast.expr | None] = [None] * (len(positional) - len(node.defaults))
    return [
        *zip(positional, [*padding, *node.defaults], strict=True),
        *zip(node.kwonlyargs, node.kw_defaults, strict=True),
    ]


def test_only_the_engine_registry_tells_engines_apart_by_name():
    sites = [
        f"{path}:{line}: {code}"
        for path, tree in _modules()
        if path != "generator/sizing/engines_registry.py"
        for line, code in engine_name_sites(tree)
    ]
    assert sites == [], "\n".join(sites)


def test_the_check_finds_each_kind_of_engine_name_site():
    # The walk above is only as good as what it recognises: one site of each kind, and the
    # semantics comparison it must leave alone.
    code = """
if engine == "vllm": pass
if engine in ("vllm", "sglang"): pass
if "trtllm-v2" != engine: pass
NAMES = {"vllm": "vLLM"}
version = VERSIONS["sglang"]
capacity(engine="trtllm-v2")
chosen = args.engine or "trtllm"
def plan(engine: str = "trtllm-v2"): pass
match engine:
    case "vllm": pass
if semantics != "trtllm-v2": pass
if mode == "ngram": pass
"""
    lines = sorted({line for line, _ in engine_name_sites(ast.parse(code))})
    assert lines == [2, 3, 4, 5, 6, 7, 8, 9, 11]


# TensorRT-LLM's revisions modelled (kvgen.sizing.engines_registry: the versions of the trtllm
# releases), written out for the same reason as ENGINE_NAMES.
TRTLLM_REVISIONS = {"early-2026", "38198e34"}


def revision_sites(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, code) of every comparison with a TensorRT-LLM revision written in place: what a
    revision does is a field of its release (``Release.per_request_split``), read instead."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = (node.left, *node.comparators)
            if any(isinstance(n, ast.Constant) and n.value in TRTLLM_REVISIONS for n in operands):
                found.append((node.lineno, ast.unparse(node)[:80]))
    return found


def test_only_the_engine_registry_tells_trtllm_revisions_apart_by_name():
    # On wip9/trtpool (the merge's other side) this finds 7 sites: _trtllm_budget.py (2),
    # _trtllm_pools.py (2) and _deploy/emit.py (3) comparing a revision with "38198e34" or
    # "early-2026".
    sites = [
        f"{path}:{line}: {code}"
        for path, tree in _modules()
        if path != "generator/sizing/engines_registry.py"
        for line, code in revision_sites(tree)
    ]
    assert sites == [], "\n".join(sites)
    code = 'if revision == "38198e34": pass\nif found.per_request_split: pass\n'
    assert [line for line, _ in revision_sites(ast.parse(code))] == [1]


# The command layer: the command line's entry and one module per command (and their helpers).
COMMAND_LAYER = ("generator/_cli/main.py", "generator/_cli/commands/")
# argparse outside it, and why: argument types raise its error; completion reads a parser.
ARGPARSE_ELSEWHERE = {"generator/_util/units.py", "generator/_cli/completion.py"}


def test_no_parsed_arguments_below_the_command_layer():
    breaches = []
    for path, tree in _modules():
        if path.startswith(COMMAND_LAYER):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Name, ast.Attribute)):
                name = node.id if isinstance(node, ast.Name) else node.attr
                if name == "Namespace":
                    breaches.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
            call = isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr"
            if call and node.args and ast.unparse(node.args[0]) == "args":
                breaches.append(f"{path}:{node.lineno}: {ast.unparse(node)[:80]}")
            imported = []
            if isinstance(node, ast.Import):
                imported = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported = [node.module]
            if "argparse" in imported and path not in ARGPARSE_ELSEWHERE:
                breaches.append(f"{path}:{node.lineno}: imports argparse")
    assert breaches == [], "\n".join(breaches)


def test_the_deploy_request_is_a_frozen_value_of_an_engine_release():
    import dataclasses

    from kvgen._deploy.rank import Deployment
    from kvgen.sizing.engines_registry import Release, release

    d = Deployment("llama3", "llama3_1_8b", release("vllm"))
    assert dataclasses.is_dataclass(d) and isinstance(d.engine, Release)
    try:
        d.tp_size = 2  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("Deployment is mutable")


# Parameters, fields and keys that take one of kvgen's deployment defaults.
DEFAULTED = {"max_batch_size", "max_num_tokens", "max_running", "max_running_requests",
             "max_seq_len", "mamba_radix_cache_strategy"}  # fmt: skip
DEFAULTED_FLAGS = {"--max-batch-size", "--max-num-tokens", "--max-seq-len"}
# The values themselves (kvgen.sizing.engines_registry: 8192 tokens, 32768 context): never written
# as a number anywhere else.
DEFAULT_NUMBERS = {8192, 32768}


def _literal(node: ast.AST | None) -> bool:
    """A default written in place: a constant other than None, or a list or tuple of them."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return any(_literal(item) for item in node.elts)
    return isinstance(node, ast.Constant) and node.value is not None


def defaults_written_in_place(tree: ast.Module) -> list[tuple[int, str]]:
    found = []
    # Tables of defaults: dicts bound to a name that says so (``DEPLOYMENT_DEFAULTS``).
    tables = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        and isinstance(node.value, ast.Dict)
        and "DEFAULT"
        in ast.unparse(node.targets[0] if isinstance(node, ast.Assign) else node.target)
    }
    for node in ast.walk(tree):
        hit = False
        if isinstance(node, ast.arguments):
            found += [
                (arg.lineno, f"{arg.arg}={ast.unparse(default)}")
                for arg, default in _defaults(node)
                if arg.arg in DEFAULTED and _literal(default)
            ]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            hit = node.target.id in DEFAULTED and _literal(node.value)  # a dataclass field
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            args = node.args
            if node.func.attr == "get" and len(args) == 2:  # entry.get("max_batch_size", 8)
                key = args[0]
                hit = isinstance(key, ast.Constant) and key.value in DEFAULTED
                hit = hit and _literal(args[1])
            if node.func.attr == "add_argument" and args:  # --max-batch-size ... default=8
                flag = args[0]
                hit = isinstance(flag, ast.Constant) and flag.value in DEFAULTED_FLAGS
                hit = hit and any(k.arg == "default" and _literal(k.value) for k in node.keywords)
        elif isinstance(node, ast.Dict) and id(node) in tables:  # DEFAULTS = {"max_batch_size": 8}
            hit = any(
                isinstance(key, ast.Constant) and key.value in DEFAULTED and _literal(value)
                for key, value in zip(node.keys, node.values, strict=True)
            )
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            hit = node.value in DEFAULT_NUMBERS
        if hit:
            found.append((node.lineno, ast.unparse(node)[:80]))
    return found


def test_each_deployment_default_is_defined_once():
    sites = [
        f"{path}:{line}: {code}"
        for path, tree in _modules()
        if path != "generator/sizing/engines_registry.py"
        for line, code in defaults_written_in_place(tree)
    ]
    assert sites == [], "\n".join(sites)
    registry = REGISTRY.read_text("utf-8")
    for name in ("DEFAULT_MAX_BATCH_SIZE = 8", "DEFAULT_MAX_NUM_TOKENS = 8192",
                 "DEFAULT_MAX_SEQ_LEN = 32768"):  # fmt: skip
        assert registry.count(name) == 1, name


def test_the_defaults_check_finds_each_kind_of_site():
    code = """
def plan(max_batch_size: int = 8, max_seq_len: int | None = None): pass
class Deployment:
    max_num_tokens: int = 8192
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
size = entry.get("max_batch_size", 8)
parser.add_argument("--max-batch-size", nargs="+", default=[8])
DEFAULTS = {"max_batch_size": 8, "tp_size": 1}
question = {**common, "max_seq_len": 1}
seq_len = min(native, 32768)
"""
    lines = sorted({line for line, _ in defaults_written_in_place(ast.parse(code))})
    assert lines == [2, 4, 6, 7, 8, 10]
