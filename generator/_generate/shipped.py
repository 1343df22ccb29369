"""The families kvgen ships, found from any folder, and which family a name means here.

The wheel carries every family of this repository twice over: its spec as ``kvgen.specs``
(``kvgen/specs/<family>.yaml``, data) and its generated package as ``kvgen.families``
(``kvgen/families/<family>/{sizing,allocator}.py`` beside their runtime, importable:
``from kvgen.families.llama3 import sizing``). Generated modules rather than specs alone, so a
plan from an installed kvgen runs the very module a project would commit (stdlib only, no
spec stack: ``kvgen plan --emit`` stays a fraction of a second), and the allocators come with
them. In a checkout they are the checkout's own ``generated/`` and ``schema/families/``.

``locate(name)`` is the one rule every planning command applies to FAMILY (``plan``,
``compare``, ``plan --deployment``, the Python API ``kvgen.find_family``): the project's own
family of that name when its output or spec directory holds one, else the shipped one, else
the project's (whose absence the caller reports). Using a shipped family is said on stderr;
so is a project family that shadows a different shipped one of the same name.
"""

from __future__ import annotations

import logging
import re
import types
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvgen._spec.models import Family

__all__ = [
    "FoundFamily",
    "closest_model",
    "find_family",
    "known_families",
    "locate",
    "match_model",
    "model_hint",
    "model_key",
    "shipped_families",
    "shipped_generated",
    "shipped_same",
    "shipped_specs",
]

log = logging.getLogger("kvgen")

_FAMILY = re.compile(r"^[a-z][a-z0-9_]*$")
_HERE = Path(__file__).resolve().parents[1]  # kvgen/


def _first(*candidates: Path) -> Path | None:
    return next((c for c in candidates if c.is_dir()), None)


@cache
def shipped_generated() -> Path | None:
    """The shipped output folder (``kvgen/families`` in a wheel, ``generated/`` in a checkout),
    or None when this install carries none."""
    found = _first(_HERE / "families", _HERE.parent / "generated")
    return found if found is not None and (found / "_kvgen_runtime").is_dir() else None


@cache
def shipped_specs() -> Path | None:
    """The shipped spec folder (``kvgen/specs`` in a wheel, ``schema/families/`` in a
    checkout), or None."""
    return _first(_HERE / "specs", _HERE.parent / "schema" / "families")


@cache
def shipped_families() -> tuple[str, ...]:
    """Every shipped family with a generated sizing module, sorted."""
    out = shipped_generated()
    if out is None:
        return ()
    return tuple(
        sorted(p.parent.name for p in out.glob("*/sizing.py") if _FAMILY.match(p.parent.name))
    )


@dataclass(frozen=True)
class FoundFamily:
    """Where family ``name`` is answered from: ``generated`` is the output folder that holds
    (or should hold) ``<name>/sizing.py``, ``spec`` its spec, ``shipped`` whether they are
    kvgen's own (no project family of that name)."""

    name: str
    generated: Path
    spec: Path
    shipped: bool

    @property
    def sizing_path(self) -> Path:
        return self.generated / self.name / "sizing.py"

    def sizing(self) -> types.ModuleType:
        """The generated sizing module (stdlib only), imported from its folder."""
        from kvgen._generate.vendored import import_generated

        package = "kvgen_shipped" if self.shipped else "kvgen_project"
        return import_generated(self.sizing_path, package)

    def family(self) -> Family:  # (pydantic: imported on call)
        """The validated spec (``kvgen.load_family``), for ``kvgen.engine_capacity``."""
        from kvgen._spec.loader import load_family

        return load_family(self.spec)


def _same_file(a: Path, b: Path) -> bool:
    """Whether two generated modules are one and the same answer: the same file, or the same
    bytes (a project that generated a shipped spec with this kvgen)."""
    try:
        return a.resolve() == b.resolve() or a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def shipped_same(found: FoundFamily) -> bool:
    """Whether a project's family answers exactly as the shipped one of its name (the same
    generated module: this repository's own clone, or a shipped spec generated unchanged)."""
    out = shipped_generated()
    if found.shipped or out is None or found.name not in shipped_families():
        return found.shipped
    return _same_file(found.sizing_path, out / found.name / "sizing.py")


def _exists(path: Path) -> bool:
    """Present, or a link (the caller's file rules refuse it there, never followed here)."""
    return path.is_symlink() or path.exists()


def _project_dirs(generated: Path | None, spec_dir: Path | None) -> tuple[Path, Path]:
    if generated is not None and spec_dir is not None:
        return generated, spec_dir
    from kvgen._generate.config import current

    project = current()
    return generated or project.out_dir, spec_dir or project.spec_dir


_said: set[tuple[str, str]] = set()


def _say(name: str, message: str) -> None:
    if (name, message) not in _said:  # once per process (a deployment names a family often)
        _said.add((name, message))
        log.info("%s", message)


def locate(
    name: str, generated: Path | None = None, spec_dir: Path | None = None, *, quiet: bool = False
) -> FoundFamily:
    """Family ``name`` for this project (output folder ``generated`` and spec folder
    ``spec_dir``, default: the current project's): its own when either holds the family, else
    kvgen's shipped one, else the project's (absent: the caller says so). Says on stderr
    (unless ``quiet``) when a shipped family is used, or when the project's shadows a shipped
    one that differs."""
    generated, spec_dir = _project_dirs(generated, spec_dir)
    own = FoundFamily(name, generated, spec_dir / f"{name}.yaml", shipped=False)
    if not _FAMILY.match(name):
        return own
    out, specs = shipped_generated(), shipped_specs()
    shipped = out is not None and specs is not None and name in shipped_families()
    if _exists(own.sizing_path) or _exists(own.spec):
        if shipped and not quiet and _exists(own.sizing_path):
            assert out is not None
            if not shipped_same(own):
                _say(
                    name,
                    f"{name}: this project's family ({own.sizing_path.as_posix()}), "
                    f"not the {name} kvgen ships",
                )
        return own
    if not shipped:
        return own
    assert out is not None and specs is not None
    if not quiet:
        from kvgen._util.meta import version

        _say(
            name,
            f"{name}: the family kvgen {version()} ships (this project has no "
            f"{own.sizing_path.as_posix()} nor {own.spec.as_posix()})",
        )
    return FoundFamily(name, out, specs / f"{name}.yaml", shipped=True)


def find_family(name: str) -> FoundFamily:
    """Family ``name`` as the command line finds it from the working directory: the project's
    own, else the one kvgen ships; ``LookupError`` (with a "did you mean") when neither has it.

        found = kvgen.find_family("llama3")      # found.shipped: True outside a project
        found.sizing().cache_costs("llama3_1_8b", max_batch_size=8, ...)
        kvgen.engine_capacity(found.family(), "llama3_1_8b", 40 << 30, engine="vllm", ...)
    """
    found = locate(name, quiet=True)
    if _exists(found.sizing_path) or _exists(found.spec):
        return found
    from kvgen._util.suggest import did_you_mean

    known = sorted({*shipped_families(), *_generated_families(found.generated)})
    raise LookupError(f"no family {name!r} here or shipped with kvgen{did_you_mean(name, known)}")


def _generated_families(out: Path) -> list[str]:
    return [p.parent.name for p in out.glob("*/sizing.py") if _FAMILY.match(p.parent.name)]


def known_families(generated: Path) -> list[str]:
    """The families a name may mean here: the project's generated ones and the shipped ones."""
    return sorted({*_generated_families(generated), *shipped_families()})


# --- Hugging Face style names ---------------------------------------------------------------

# Words of a repository name that say how a checkpoint was tuned or stored, not which model
# it is: `meta-llama/Llama-3.1-70B-Instruct` is the model llama3_1_70b.
_TUNING_WORDS = frozenset({"instruct", "it", "chat", "hf", "base", "pt", "sft", "dpo"})


def model_key(name: str) -> str:
    """``name`` reduced to what identifies a model: the part after an organisation's ``/``,
    lower case, letters and digits only, without the tuning words (instruct, it, chat, hf,
    base, ...) nor a trailing release date (2407, 2507). ``meta-llama/Llama-3.1-70B-Instruct``
    and ``llama3_1_70b`` both give ``llama3170b``."""
    words = [w for w in re.split(r"[^a-z0-9]+", name.rsplit("/", 1)[-1].lower()) if w]
    words = [w for w in words if w not in _TUNING_WORDS]
    while len(words) > 1 and re.fullmatch(r"\d{4}", words[-1]):
        words.pop()
    return "".join(words)


def match_model(name: str, models: list[str]) -> list[str]:
    """The models ``name`` means: itself, or every model with its ``model_key``."""
    if name in models:
        return [name]
    key = model_key(name)
    return [m for m in models if key and model_key(m) == key]


def closest_model(name: str, models: list[str]) -> str | None:
    """The model whose key is closest to ``name``'s (a "did you mean"), or None."""
    from kvgen._util.suggest import closest

    keys: dict[str, str] = {}
    for model in models:
        keys.setdefault(model_key(model), model)
    found = closest(model_key(name), keys)
    return keys[found] if found is not None else closest(name, models)


def model_hint(name: str, models: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the model ``name`` means, a Hugging Face style name
    included (``Llama-3.1-70B-Instruct`` -> ``llama3_1_70b``), else the empty string."""
    from kvgen._util.suggest import did_you_mean

    models = list(models)
    matched = match_model(name, models)
    if len(matched) == 1:
        return f" (did you mean {matched[0]!r}?)"
    return did_you_mean(name, models)
