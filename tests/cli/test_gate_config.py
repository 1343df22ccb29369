"""The review gate when the pull request owns the configuration (issue 29: G1, G2, G3).

In pull-request CI, ``pyproject.toml`` / ``kvgen.toml`` are PR content like the specs. The
review commands therefore read the locations from the base side as well as the PR side: moving
the specs or re-pointing ``[tool.kvgen] specs`` / ``out`` cannot hide a capacity cut or a
hand-edited generated module, and an empty ``--against`` is a usage error, never ``HEAD``.

Same toy family and repository as ``test_review.py`` (its fixture and helpers). The capacity cut
is its ``WINDOW_UP``: window 1024 -> 2048 makes toy_a's plain profile and both pard4 managers
capacity-reducing (derived there), so an honest diff exits 1 with 3 blocking changes.
"""

from __future__ import annotations

import pytest
from kvgen._exits import Exit

from tests.cli.test_review import SPEC, TOY, diff, git, repo  # noqa: F401 (a fixture)

CUT = TOY.replace("window: 1024", "window: 2048")


# --- G3: an empty ref is a usage error -----------------------------------------------------


@pytest.mark.usefixtures("repo")
@pytest.mark.parametrize("ref", ["", " ", "\t", "\n"])
def test_an_empty_or_blank_against_is_a_usage_error_not_head(capsys, ref):
    # Committed cut: against HEAD (the PR's own commit) it would compare the cut with itself.
    SPEC.write_text(CUT)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "cut")
    code, out, err = diff(capsys, "--against", ref)
    assert code == Exit.USAGE
    assert out == ""
    assert "--against is empty" in err
