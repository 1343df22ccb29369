"""docs/security.md, promise 5: kvgen never downloads anything.

No module of the package (nor the vendored runtime copied into every output) imports a network
library. A new import of one fails here, naming the module and line, so the promise cannot
erode unnoticed; import-hf's runtime behaviour is checked with a refusing socket in
``tests/cli/test_import_hf_sources.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NETWORK = {"socket", "ssl", "urllib", "http", "ftplib", "smtplib", "requests", "httpx", "aiohttp"}
NETWORK |= {"urllib3", "huggingface_hub", "xmlrpc", "telnetlib", "asyncio"}
# The one allowed use: import-hf's offline lookup of ``org/name`` in the local Hugging Face
# cache (huggingface_hub's try_to_load_from_cache reads the cache folder, never the network;
# the refusing-socket test in tests/cli/test_import_hf_sources.py runs it).
OFFLINE = {("huggingface_hub", "try_to_load_from_cache")}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = {(node.module, alias.name) for alias in node.names}
            if not names <= OFFLINE:
                found.append((node.lineno, node.module))
    return found


def test_no_module_imports_a_network_library():
    files = sorted((ROOT / "generator").rglob("*.py")) + sorted((ROOT / "generated").rglob("*.py"))
    assert len(files) > 100
    offending = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in files
        for line, name in _imports(path)
        if name.split(".")[0] in NETWORK
    ]
    assert offending == []


def test_the_check_sees_a_network_import(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os\nfrom urllib.request import urlopen\n"
        "from huggingface_hub import try_to_load_from_cache\n"
        "from huggingface_hub import hf_hub_download\n"
    )
    assert [name for _, name in _imports(probe) if name.split(".")[0] in NETWORK] == [
        "urllib.request",
        "huggingface_hub",
    ]
