"""A hard link to a file outside the repository: the build skips it (`hard_link`) as read_file
refuses it, so no search serves its text."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from relhelpers import codeagent, init_repo

from codeagent.errors import PathEscape
from codeagent.format.manifest import load_manifest
from codeagent.query.sandbox import Sandbox
from codeagent.store import Store

OUTSIDE_TEXT = "def outside_only_xq7():\n    return 'private notes of another project'\n"


def test_a_hard_link_is_skipped_and_never_served(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "notes.py"
    outside.parent.mkdir()
    outside.write_text(OUTSIDE_TEXT)
    repo = init_repo(tmp_path / "repo", {"ok.py": "def fine():\n    return 1\n"})
    os.link(outside, repo / "linked.py")
    proc = codeagent("build", repo, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["files_skipped"]["by_reason"] == {"hard_link": 1}
    store = Store(repo / ".codeagent")
    entry = load_manifest(store, store.read_ref("worktree")).file("linked.py")
    assert (entry.status, entry.reason) == ("skipped", "hard_link")
    for mode in ("text", "auto", "regex"):
        found = codeagent("search", "outside_only_xq7", "--mode", mode, "--repo", repo, "--json")
        assert found.returncode == 0 and json.loads(found.stdout)["results"] == [], found.stdout
    with pytest.raises(PathEscape, match="2 hard links"):
        Sandbox(repo).read_file("linked.py")
    os.unlink(outside)  # one link left: an ordinary file again, indexed on the next build
    again = json.loads(codeagent("build", repo, "--json").stdout)
    assert again["files_skipped"]["by_reason"] == {}
    assert "linked.py" in codeagent("search", "outside_only_xq7", "--repo", repo).stdout
