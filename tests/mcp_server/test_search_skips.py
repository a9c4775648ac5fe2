"""Answers that say what they skipped (issue 45): `codeagent search` and MCP search_code /
search_symbols name the files the filters take that the index holds no text of (too large,
not UTF-8), as a count and a few paths; a withheld secret is never named."""

from __future__ import annotations

import json

import pytest

from codeagent.query.filters import NAMED_SKIPPED
from mcp_helpers import memory_client, ok, run_cli

pytestmark = pytest.mark.anyio

FILES = {
    "src/main.py": "def needle():\n    return 1\n",
    "data/big.py": "x = 1\n" * 400 + "def needle_big():\n    pass\n",
    "data/latin1.py": b"# caf\xe9\ndef needle_latin():\n    pass\n",
    "notes_backup.txt": "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
}


@pytest.fixture
def skipping_repo(git_repo):
    git_repo.write_many(FILES)
    git_repo.write_many({f"logs/dump{i}.py": "y = 2\n" * 400 for i in range(6)})
    git_repo.commit("files")
    run_cli("build", git_repo.path, "--max-file-size", "1000")
    return git_repo


async def test_search_code_and_search_symbols_name_what_the_index_skipped(skipping_repo):
    async with memory_client(skipping_repo.path) as c:
        data = ok(await c.call_tool("search_code", {"query": "needle", "path_filter": "data/**"}))
        symbols = ok(await c.call_tool("search_symbols", {"query": "needle", "path_filter": "data/*"}))
        source = ok(await c.call_tool("search_code", {"query": "needle", "path_filter": "src/**"}))
        everything = ok(await c.call_tool("search_code", {"query": "needle"}))
        text = await c.call_tool("search_code", {"query": "needle", "path_filter": "data/**"})
    expected = [{"path": "data/big.py", "reason": "too_large"},
                {"path": "data/latin1.py", "reason": "invalid_utf8"}]
    assert (data["skipped"], data["skipped_count"]) == (expected, 2)
    assert (symbols["skipped"], symbols["skipped_count"]) == (expected, 2)
    assert source["results"] and not source["skipped"] and source["skipped_count"] is None
    # kept small: a count and the first few paths; never the secret
    assert everything["skipped_count"] == 8 and len(everything["skipped"]) == NAMED_SKIPPED
    assert all(s["path"] != "notes_backup.txt" for s in everything["skipped"])
    assert "data/latin1.py" in text.content[0].text


def test_cli_search_says_what_it_did_not_search(skipping_repo):
    out = run_cli("search", "needle", "--repo", skipping_repo.path, "--lang", "python", "--path", "data/*")
    assert "not searched: 2 files" in out.stdout
    assert "data/big.py (too_large)" in out.stdout and "data/latin1.py (invalid_utf8)" in out.stdout
    answer = json.loads(run_cli("search", "needle", "--repo", skipping_repo.path, "--json").stdout)
    assert answer["skipped_count"] == 8
    assert answer["skipped"][:2] == [{"path": "data/big.py", "reason": "too_large"},
                                     {"path": "data/latin1.py", "reason": "invalid_utf8"}]
    assert "notes_backup.txt" not in json.dumps(answer)
    quiet = json.loads(run_cli("search", "needle", "--repo", skipping_repo.path, "--path", "src/*",
                               "--json").stdout)
    assert "skipped" not in quiet and quiet["results"]
