"""search_files says what it did not search (issue 45, item 6): a file the index skipped as
too_large or invalid_utf8 is searched live, as read_file serves it, and one too large to read
at all is named in `skipped` instead of silently dropped."""

from __future__ import annotations

import pytest

from codeagent.query.sandbox import MAX_FILE_BYTES
from mcp_helpers import memory_client, ok, run_cli

pytestmark = pytest.mark.anyio


async def test_search_files_searches_or_names_the_files_the_index_skipped(git_repo):
    git_repo.write_many({
        "src/main.py": "def main():\n    return 1\n",
        "data/big.txt": "filler line\n" * 400 + "NEEDLE in the big file\n",
        "data/latin1.txt": b"caf\xe9 au lait\nNEEDLE in latin-1\n",
    })
    huge = git_repo.path / "data" / "huge.log.txt"
    with huge.open("wb") as f:
        f.write(b"x" * (MAX_FILE_BYTES + 10) + b"\nNEEDLE past the cap\n")
    git_repo.commit("files")
    run_cli("build", git_repo.path, "--max-file-size", "1000")
    async with memory_client(git_repo.path) as c:
        status = ok(await c.call_tool("read_file", {"path": "data/big.txt", "max_tokens": 20000}))
        assert "NEEDLE" in status["content"]  # read_file serves what the index skipped
        found = ok(await c.call_tool("search_files", {"pattern": "NEEDLE"}))
    assert {m["path"] for m in found["matches"]} == {"data/big.txt", "data/latin1.txt"}
    assert found["skipped"] == [{"path": "data/huge.log.txt", "reason": "too_large"}]


GIN = {
    "tree.go": "package gin\n\ntype node struct{ path string }\n\n"
               "func (n *node) getValue(path string) string {\n\treturn n.path + path\n}\n",
    "tree_test.go": "package gin\n\nimport \"testing\"\n\n"
                    "func getValue(t *testing.T) string {\n\treturn \"fake\"\n}\n\n"
                    "func TestGetValue(t *testing.T) {\n\t_ = (&node{}).getValue(\"x\")\n}\n",
}


async def test_search_code_roles_and_negated_path_filter_symbol_answers(git_repo):
    """Issue 45 items 3 and 6 over MCP: `roles: ["test"]` put tree.go's method first, and a
    negated path glob answered nothing."""
    git_repo.write_many(GIN)
    git_repo.commit("gin")
    run_cli("build", git_repo.path)
    async with memory_client(git_repo.path) as c:
        tests = ok(await c.call_tool("search_code", {"query": "getValue", "roles": ["test"]}))
        source = ok(await c.call_tool("search_code", {"query": "getValue", "path_filter": "!*_test.go"}))
    assert tests["results"] and {r["path"] for r in tests["results"]} == {"tree_test.go"}
    assert source["results"] and {r["path"] for r in source["results"]} == {"tree.go"}


async def test_search_files_negated_glob_excludes(git_repo):
    git_repo.write_many({"src/a.py": "NEEDLE = 1\n", "src/a_test.py": "NEEDLE = 2\n",
                         "src/b_test.py": "NEEDLE = 3\n"})
    git_repo.commit("files")
    run_cli("build", git_repo.path)
    async with memory_client(git_repo.path) as c:
        found = ok(await c.call_tool("search_files", {"pattern": "NEEDLE", "glob": "!*_test.py"}))
        anchored = ok(await c.call_tool("search_files", {"pattern": "NEEDLE", "glob": "!src/a*"}))
    assert {m["path"] for m in found["matches"]} == {"src/a.py"}
    assert {m["path"] for m in anchored["matches"]} == {"src/b_test.py"}
