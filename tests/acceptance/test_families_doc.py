"""docs/families.md is the table the shipped specs give today: `bench/families_table.py --check`
fails when a spec changed and the page was not regenerated."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "families_table.py"


def test_the_families_page_is_current():
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], cwd=REPO, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_check_sees_a_stale_page(tmp_path, monkeypatch):
    # Guard against a check that passes vacuously: one changed cell makes it fail.
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import families_table
    finally:
        sys.path.remove(str(SCRIPT.parent))
    page = tmp_path / "families.md"
    text = (REPO / "docs" / "families.md").read_text(encoding="utf-8")
    assert "| `gemma3_27b` | 131,072 |" in text  # Gemma 3 27B: 128K context
    page.write_text(text.replace("| `gemma3_27b` | 131,072 |", "| `gemma3_27b` | 131,071 |"))
    monkeypatch.setattr(families_table, "DOCUMENT", page)
    assert families_table.main(["--check"]) == 1
    assert families_table.main(["--write"]) == 0
    assert page.read_text(encoding="utf-8") == text
