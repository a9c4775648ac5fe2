"""One-way imports: query never imports indexer; mcp_server imports only query and the core."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(folder: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (ROOT / folder).rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names: set[str] = set()
        depth = len(path.relative_to(ROOT / folder).parts)  # 1 = top of the package
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0:
                    names.add(node.module or "")
                elif node.level >= depth + 1:  # climbs out of the package into codeagent
                    names.add("codeagent." + (node.module or ""))
        found[str(path.relative_to(ROOT))] = names
    return found


def _offenders(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    return sorted(f"{path}: {name}" for path, names in _imports(folder).items()
                  for name in names if name.startswith(forbidden))


def test_query_never_imports_indexer():
    assert _offenders("query", ("codeagent.indexer", "indexer")) == []


def test_mcp_server_imports_only_query_and_core():
    assert _offenders("mcp_server", ("codeagent.indexer", "indexer", "codeagent.eval")) == []


def test_core_imports_no_side_package():
    assert _offenders("src/codeagent", ("codeagent.indexer", "codeagent.query",
                                        "codeagent.mcp_server", "codeagent.eval")) == []
