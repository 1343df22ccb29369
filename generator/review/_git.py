"""The git side of a review: which ref to compare, and the files of that commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kvgen.project import SPEC_SUFFIXES
from kvgen.review._types import ReviewError

__all__ = ["GitTree", "default_ref"]


def default_ref(environ: dict[str, str]) -> str:
    """``origin/$GITHUB_BASE_REF`` in a GitHub pull-request job, ``HEAD`` anywhere else."""
    base = environ.get("GITHUB_BASE_REF", "").strip()
    return f"origin/{base}" if base else "HEAD"


class GitTree:
    """Read-only access to the files of one commit, with paths relative to ``cwd``."""

    def __init__(self, ref: str, cwd: Path):
        self.cwd = cwd.resolve()
        top = self._git("rev-parse", "--show-toplevel")
        if top.returncode:
            raise ReviewError(f"{self.cwd} is not in a git repository; kvgen diff compares a ref")
        self.root = Path(top.stdout.decode().strip()).resolve()
        bad = not ref or ref.startswith("-")
        commit = None if bad else self._git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        if commit is None or commit.returncode:
            hint = " (in CI, fetch it: actions/checkout with fetch-depth: 0)" if "/" in ref else ""
            raise ReviewError(f"unknown git ref {ref!r}{hint}")
        self.ref = ref
        self.commit = commit.stdout.decode().strip()

    def _git(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        cwd = getattr(self, "root", self.cwd)
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)

    def _rel(self, path: Path) -> str | None:
        try:
            return (self.cwd / path).resolve().relative_to(self.root).as_posix()
        except ValueError:
            return None

    def kind(self, path: Path) -> str | None:
        """``"blob"``, ``"tree"`` or ``None`` for ``path`` at the commit."""
        rel = self._rel(path)
        if rel is None:
            return None
        result = self._git("cat-file", "-t", f"{self.commit}:{rel}")
        return result.stdout.decode().strip() if result.returncode == 0 else None

    def read(self, path: Path) -> bytes | None:
        rel = self._rel(path)
        if rel is None:
            return None
        result = self._git("cat-file", "blob", f"{self.commit}:{rel}")
        return result.stdout if result.returncode == 0 else None

    def specs_in(self, directory: Path) -> list[Path]:
        """Spec files directly inside ``directory`` at the commit (like ``spec_paths``)."""
        rel = self._rel(directory)
        if rel is None:
            return []
        listing = self._git("ls-tree", "--name-only", self.commit, "--", f"{rel}/")
        names = listing.stdout.decode().splitlines() if listing.returncode == 0 else []
        return sorted(
            directory / Path(name).name for name in names if Path(name).suffix in SPEC_SUFFIXES
        )
