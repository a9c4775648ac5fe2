"""A blobless partial clone whose promisor remote cannot be reached: the commit builds, and the
blobs it lacks are missing_object skips (git dies on them instead of answering "missing")."""

from __future__ import annotations

import json
import subprocess


def test_a_blobless_clone_offline_builds_with_missing_object_skips(git_repo, cli, tmp_path, monkeypatch):
    git_repo.write_many({"a.py": "def a():\n    return 1\n", "b.py": "def b():\n    return 2\n"})
    git_repo.commit("init")
    clone = tmp_path / "clone"
    subprocess.run(["git", "-c", "protocol.file.allow=always", "clone", "-q", "--no-checkout",
                    "--filter=blob:none", "--upload-pack", "git -c uploadpack.allowFilter=true upload-pack",
                    f"file://{git_repo.path}", str(clone)], check=True)
    monkeypatch.setenv("GIT_NO_LAZY_FETCH", "1")  # as offline: the promisor remote is out of reach
    proc = cli("build", clone, "--ref", "HEAD", "--json")
    assert proc.returncode == 0, proc.stderr[-1500:]
    out = json.loads(proc.stdout)
    assert out["ref"] == "heads/main"
    assert out["files_skipped"]["by_reason"] == {"missing_object": 2}
