"""Readers in other processes query in a loop while builds swap the ref: no error, and every
answer comes from exactly one manifest (its symbol, text and regex hits agree on the version
that manifest was built from)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codeagent.indexer.build import BuildOptions, build
from repo_helpers import GitRepo

READER = r'''
import json, sys, time
from pathlib import Path
from codeagent.query import IndexFollower, find_symbols, grep, open_index, search_text

repo, out, stop, use_follower = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4] == "1"
follower = IndexFollower(repo) if use_follower else None
with open(out, "w") as fh:
    while not stop.exists():
        try:
            if follower:
                ctx = follower.view()
            else:
                ctx = open_index(repo)
            with ctx as view:
                sym = find_symbols(view, "version_", match="prefix", limit=5)
                text = search_text(view, "marker", limit=5)
                lines = grep(view, r"VERSION = \d+", context=0)
                rec = {"manifest": sym.metadata.manifest_id,
                       "others": [text.metadata.manifest_id, lines.metadata.manifest_id],
                       "sym": sorted({h.name for h in sym.results if h.result_type == "symbol"}),
                       "text": sorted({h.snippet for h in text.results}),
                       "grep": sorted({m.line for m in lines.matches})}
        except Exception as exc:
            rec = {"error": f"{type(exc).__name__}: {exc}"}
        fh.write(json.dumps(rec) + "\n")
        fh.flush()
'''

SWAPS = int(os.environ.get("CODEAGENT_SWAPS", "20"))


def _version_files(n: int) -> dict[str, str]:
    return {"version.py": f"VERSION = {n}\n\n\ndef version_{n}():\n    return {n}\n",
            "notes.txt": f"marker {n}\n", "stable.py": "def stable():\n    return 0\n"}


def _swap_and_read(tmp_path: Path, swaps: int) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.write_many(_version_files(0))
    repo.commit()
    versions = {build(BuildOptions(repo=repo.path, jobs=1)).manifest_id: 0}
    stop = tmp_path / "stop"
    readers = []
    for i in range(3):
        out = tmp_path / f"reader{i}.jsonl"
        proc = subprocess.Popen([sys.executable, "-c", READER, str(repo.path), str(out), str(stop),
                                 "1" if i else "0"])
        readers.append((proc, out))
    try:
        for n in range(1, swaps + 1):
            repo.write_many(_version_files(n))
            versions[build(BuildOptions(repo=repo.path, jobs=1)).manifest_id] = n
        time.sleep(0.5)
    finally:
        stop.write_text("stop")
        for proc, _ in readers:
            proc.wait(timeout=60)
    answers = 0
    for proc, out in readers:
        assert proc.returncode == 0
        for line in out.read_text().splitlines():
            rec = json.loads(line)
            assert "error" not in rec, rec["error"]
            n = versions[rec["manifest"]]
            assert rec["others"] == [rec["manifest"]] * 2
            assert rec["sym"] == [f"version_{n}"], rec
            assert rec["text"] == [f"marker {n}"], rec
            assert rec["grep"] == [f"VERSION = {n}"], rec
            answers += 1
    assert answers > swaps


def test_readers_see_exactly_one_manifest_while_builds_swap(tmp_path):
    _swap_and_read(tmp_path, SWAPS)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("CODEAGENT_LONG") != "1", reason="set CODEAGENT_LONG=1")
def test_hundred_swaps(tmp_path):
    _swap_and_read(tmp_path, 100)
