"""Which engine releases serve the architectures ``kvgen import-hf`` refuses, read from their code.

import-hf refuses (KV305) a model whose cache the spec format has no form for: an
encoder-decoder model, a short-convolution layer, compressed attention, a parallel hybrid
whose state is not Mamba-2's, ... Its refusal then says which engine releases kvgen targets
serve the model anyway (so the user knows an engine would run it and kvgen is the gap) or that
none does. This script records that fact from the engines' own source, without importing them
(no torch, no GPU): it parses the installed files with ``ast``.

- vLLM: ``vllm/model_executor/models/registry.py``, the ``_*_MODELS`` dicts of architecture
  -> (module, class) that ``ModelRegistry`` is built from (``_VLLM_MODELS``); a module named
  ``vllm.x`` is that package, any other lives under ``vllm/model_executor/models/``. The
  ``_PREVIOUSLY_SUPPORTED_MODELS`` (architecture -> last release) and ``_OOT_SUPPORTED_MODELS``
  (architecture -> plugin) entries are recorded too: vLLM names them when it refuses one.
- SGLang: every top-level module of ``sglang/srt/models/`` with an ``EntryClass`` (a class or
  a list of classes): ``import_model_classes`` registers each class under its ``__name__``.
- The architecture names of a model type: transformers' ``models/auto/modeling_auto.py``
  (every ``(model_type, class)`` pair of its mappings) and the generating classes (those
  subclassing ``GenerationMixin``) of the modelling file that holds the model type (a text
  sub-config's composite: ``InklingForConditionalGeneration`` for ``inkling_text``, by
  ``auto_mappings.SPECIAL_MODEL_TYPE_TO_MODULE_NAME``), read from the vLLM 0.34.0 venv's
  transformers: the names a config.json lists under ``architectures``.

The model types are those import-hf refuses with KV305 in the project's transformers corpus
(``tests/fixtures/hf/corpus``) plus every key of the product's table
(``kvgen._importhf._served.SERVED``), so a new refusal without an entry, or an entry that no
longer matches the engines, makes ``tests/unit/test_served_architectures.py`` fail.

Usage (from the repository root, in kvgen's venv)::

    python bench/engines/served_architectures.py [--engines /tmp/kvgen_engines] [--check]

writes ``tests/fixtures/engines/served_architectures.json`` (``--check``: compares instead
and exits 1 on a difference).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "engines" / "served_architectures.json"
ENGINES = Path("/tmp/kvgen_engines")
# release label -> venv folder under --engines
RELEASES = {
    "vllm-0.33.0": "venv-vllm-0.33.0",
    "vllm-0.34.0": "venv-vllm-0.34.0",
    "sglang-0.5.23": "venv-sglang-0.5.23",
}
TRANSFORMERS_VENV = "venv-vllm-0.34.0"


def site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages"))
    if not found:
        raise SystemExit(f"{venv}: no lib/python3*/site-packages")
    return found[-1]


def _version(site: Path, dist: str) -> str:
    found = sorted(site.glob(f"{dist}-*.dist-info"))
    return found[-1].name[len(dist) + 1 : -len(".dist-info")] if found else "?"


def _literal_dicts(tree: ast.Module) -> dict[str, ast.Dict]:
    out = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Dict):
            out[target.id] = value
    return out


def vllm_registry(site: Path) -> dict[str, dict]:
    """architecture -> {"class", "source"} or {"removed_after"} or {"plugin"}."""
    rel = "vllm/model_executor/models/registry.py"
    tree = ast.parse((site / rel).read_text())
    out: dict[str, dict] = {}
    for name, node in _literal_dicts(tree).items():
        for key, value in zip(node.keys, node.values, strict=True):
            if not isinstance(key, ast.Constant):
                continue  # a ``**other`` merge: _VLLM_MODELS repeats the dicts read here
            arch = key.value
            if name == "_PREVIOUSLY_SUPPORTED_MODELS":
                out.setdefault(arch, {"removed_after": value.value, "source": rel})
            elif name == "_OOT_SUPPORTED_MODELS":
                out.setdefault(arch, {"plugin": value.value, "source": rel})
            elif isinstance(value, ast.Tuple) and name.endswith("_MODELS"):
                module, cls = (ast.literal_eval(v) for v in value.elts)
                if module.startswith("vllm."):
                    base = module.replace(".", "/")
                    path = f"{base}.py" if (site / f"{base}.py").exists() else f"{base}/__init__.py"
                else:
                    path = f"vllm/model_executor/models/{module}.py"
                out[arch] = {"class": cls, "source": path}
    return out


def sglang_registry(site: Path) -> dict[str, dict]:
    """architecture (a class's ``__name__``) -> {"class", "source"}."""
    out: dict[str, dict] = {}
    for path in sorted((site / "sglang/srt/models").glob("*.py")):
        tree = ast.parse(path.read_text())
        imported = {}  # local name -> the class's own name
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    imported[alias.asname or alias.name] = alias.name
        for node in tree.body:
            if not (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets)
            ):
                continue
            value = node.value
            names = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            for entry in names:
                if isinstance(entry, ast.Name):
                    arch = imported.get(entry.id, entry.id)
                    out[arch] = {"class": arch, "source": str(path.relative_to(site))}
    return out


def transformers_architectures(site: Path) -> dict[str, list[str]]:
    """model_type -> the class names transformers' auto mappings give it."""
    tree = ast.parse((site / "transformers/models/auto/modeling_auto.py").read_text())
    out: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Tuple)
            and len(node.elts) == 2
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
        ):
            model_type, cls = (e.value for e in node.elts)
            out.setdefault(model_type, set()).add(cls)
    models = site / "transformers/models"
    special = {}  # model_type -> the module that holds it (inkling_text -> inkling)
    mappings = ast.parse((models / "auto/auto_mappings.py").read_text())
    for node in ast.walk(mappings):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "SPECIAL_MODEL_TYPE_TO_MODULE_NAME"
            for t in node.targets
        ):
            for pair in ast.walk(node.value):
                if isinstance(pair, ast.Tuple) and len(pair.elts) == 2:
                    special[ast.literal_eval(pair.elts[0])] = ast.literal_eval(pair.elts[1])
    for model_type in list(out):
        # the classes that generate (subclass GenerationMixin) in the module that holds it:
        # a text sub-config's composite (InklingForConditionalGeneration for inkling_text)
        module = special.get(model_type, model_type.replace("-", "_"))
        path = models / module / f"modeling_{module}.py"
        if path.exists():
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and b.id == "GenerationMixin" for b in node.bases
                ):
                    out[model_type].add(node.name)
    return {k: sorted(v) for k, v in out.items()}


def refused_model_types() -> list[str]:
    """Model types import-hf refuses with KV305 in the corpus, and the product table's keys."""
    sys.path.insert(0, str(ROOT))
    from kvgen._importhf import import_config
    from kvgen._importhf._served import SERVED
    from kvgen._util.codes import hf as codes

    from tests.cli.hf_corpus import load_corpus

    found = set(SERVED)
    for entry in load_corpus()["entries"]:
        if "config" not in entry:
            continue
        result = import_config("config.json", entry["config"], kv_cache_dtype="fp32")
        first = result.diagnostics[0] if result.text is None and result.diagnostics else None
        if first is not None and first.code == codes.UNSUPPORTED_CONFIG_FEATURE.code:
            found.add(entry["model_type"])
    return sorted(found)


def record(engines: Path, model_types: list[str]) -> dict:
    registries = {}
    versions = {}
    for label, folder in RELEASES.items():
        site = site_packages(engines / folder)
        engine = label.split("-")[0]
        versions[label] = _version(site, engine)
        registries[label] = (vllm_registry if engine == "vllm" else sglang_registry)(site)
    tsite = site_packages(engines / TRANSFORMERS_VENV)
    archs = transformers_architectures(tsite)
    served: dict[str, dict] = {}
    for model_type in model_types:
        names = archs.get(model_type, [])
        row: dict[str, list[dict]] = {}
        for label, registry in registries.items():
            row[label] = [{"architecture": n, **registry[n]} for n in names if n in registry]
        served[model_type] = {"architectures": names, "engines": row}
    return {
        "provenance": {
            "script": "bench/engines/served_architectures.py",
            "read": {
                "vllm": "vllm/model_executor/models/registry.py (_*_MODELS, "
                "_PREVIOUSLY_SUPPORTED_MODELS, _OOT_SUPPORTED_MODELS)",
                "sglang": "sglang/srt/models/*.py EntryClass",
                "transformers": "transformers/models/auto/modeling_auto.py mappings "
                f"(transformers {_version(tsite, 'transformers')}, {TRANSFORMERS_VENV})",
            },
            "versions": versions,
        },
        "served": served,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engines", type=Path, default=ENGINES)
    parser.add_argument("--check", action="store_true", help="compare with the fixture")
    args = parser.parse_args(argv)
    data = record(args.engines, refused_model_types())
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if args.check:
        same = FIXTURE.exists() and FIXTURE.read_text() == text
        print(f"{FIXTURE.relative_to(ROOT)}: {'unchanged' if same else 'DIFFERS'}")
        return 0 if same else 1
    FIXTURE.write_text(text)
    print(f"wrote {FIXTURE.relative_to(ROOT)}: {len(data['served'])} model types")
    return 0


if __name__ == "__main__":
    sys.exit(main())
