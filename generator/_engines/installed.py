"""The engine installed beside kvgen: its version, read from the installed package's metadata
(``importlib.metadata``; the engine is never imported), and a warning where the plan answers
for another release than the one installed (``kvgen plan``; docs/engines.md, "Releases").
"""

from __future__ import annotations

from kvgen.sizing.engines_registry import Engine, Release, releases_of

__all__ = ["installed_version", "release_warning"]


def installed_version(engine: Engine) -> str | None:
    """The installed version of ``engine``'s distribution (``Engine.distribution``; its local
    part, ``+cu128``, dropped), None where it is not installed or its metadata cannot be
    read."""
    from importlib import metadata

    distribution = engine.distribution
    if not distribution:
        return None
    try:
        version = metadata.version(distribution)
    except (metadata.PackageNotFoundError, ValueError, OSError):
        return None
    return version.split("+", 1)[0] if isinstance(version, str) else None


def release_warning(found: Release, installed: str | None) -> str | None:
    """Why a plan for ``found`` may not describe the engine installed at ``installed``: a
    release kvgen does not model, or another release than the one planned. None otherwise."""
    if installed is None or installed == found.version:
        return None
    engine = found.engine
    modelled = [each.version for each in releases_of(engine)]
    shown = installed[:40]  # metadata is the installed package's word: bounded in output
    if installed not in modelled:
        return (
            f"{engine.title} {shown!s} is installed here, a release kvgen does not model "
            f"(it models {', '.join(modelled)}): this plan answers for {found.described}"
        )
    return (
        f"{engine.title} {shown!s} is installed here but this plan answers for "
        f"{found.described}: --engine {engine.name}=={installed} answers for the one installed"
    )
