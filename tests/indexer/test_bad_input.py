"""Bad input never loses data: every skip has a reason, every failure a clear message."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_helpers import NO_DAC_OVERRIDE

from codeagent.indexer.build import BuildOptions, build
from codeagent.format.manifest import load_manifest
from codeagent.store import Store


def _reasons(repo: Path) -> dict[str, str]:
    store = Store(repo / ".codeagent")
    m = load_manifest(store, store.read_ref("worktree"))
    return {f.path: f.reason for f in m.files if not f.indexed}


def test_bad_files_are_recorded_with_reasons(git_repo, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("outside the repo\n")
    git_repo.write_many({
        "ok.py": "x = 1\n",
        "image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR",
        "latin1.txt": "caf\xe9\n".encode("latin-1"),
        "huge.min.js": b"var a=1;" * (20 * 1024 * 1024 // 8),
        "min.js": b"var a=1;" * (200 * 1024 // 8),
        ".env": "API_TOKEN=hunter2\n",
        "deploy/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    })
    os.symlink(outside, git_repo.path / "escape.txt")
    os.symlink("ok.py", git_repo.path / "alias.py")
    result = build(BuildOptions(repo=git_repo.path, jobs=1))
    reasons = _reasons(git_repo.path)
    assert reasons == {
        "image.png": "binary",
        "latin1.txt": "invalid_utf8",
        "huge.min.js": "too_large",
        "min.js": "minified",
        "escape.txt": "symlink_outside_repo",
        "alias.py": "symlink",
        ".env": "secret",
        "deploy/id_rsa": "secret",
    }
    assert result.files_total == 9
    assert sum(result.files_skipped.values()) == 8
    store = Store(git_repo.path / ".codeagent")
    secrets_in_store = [oid for oid in store.iter_objects() if b"hunter2" in store.get(oid)]
    assert secrets_in_store == []


def test_unreadable_file_is_skipped_not_fatal(git_repo):
    git_repo.write("ok.py", "x = 1\n")
    git_repo.write("locked.py", "x = 1\n").chmod(0)
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: file modes cannot make a file unreadable")
        proc = subprocess.run([*NO_DAC_OVERRIDE, sys.executable, "-m", "codeagent", "build",
                               str(git_repo.path), "--json"], capture_output=True, text=True,
                              timeout=300, env={**os.environ, "CODEAGENT_DAEMON": "0"})
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["files_skipped"]["by_reason"] == {"unreadable": 1}
    else:
        build(BuildOptions(repo=git_repo.path, jobs=1))
    assert _reasons(git_repo.path) == {"locked.py": "unreadable"}


def test_a_fifo_does_not_hang_the_build(git_repo):
    os.mkfifo(git_repo.path / "pipe")
    git_repo.write("ok.py", "x = 1\n")
    result = build(BuildOptions(repo=git_repo.path, jobs=1))
    assert result.files_total == 1 and _reasons(git_repo.path) == {}


def test_empty_repo_builds_an_empty_manifest(git_repo, cli):
    proc = cli("build", git_repo.path, "--json", check=True)
    data = json.loads(proc.stdout)
    assert data["files_total"] == 0 and data["commit"] is None


def test_repo_without_commits_cannot_build_a_ref(git_repo, cli):
    git_repo.write("a.py", "x = 1\n")
    proc = cli("build", git_repo.path, "--ref", "HEAD")
    assert proc.returncode == 4
    assert "no commits yet" in proc.stderr and "--worktree" in proc.stderr


def test_unknown_ref_is_a_clear_error(git_repo, cli):
    git_repo.write("a.py", "x = 1\n")
    git_repo.commit("init")
    proc = cli("build", git_repo.path, "--ref", "nope")
    assert proc.returncode == 4
    assert "no commit named 'nope'" in proc.stderr


def test_non_git_directory(tmp_path, cli):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("x = 1\n")
    proc = cli("build", plain, "--ref", "main")
    assert proc.returncode == 3 and "not a git repository" in proc.stderr
    ok = cli("build", plain, "--json", check=True)
    assert json.loads(ok.stdout)["files_total"] == 1


def test_missing_directory(tmp_path, cli):
    proc = cli("build", tmp_path / "nowhere")
    assert proc.returncode == 3 and "does not exist" in proc.stderr


def test_ref_and_worktree_together_is_invalid(git_repo, cli):
    proc = cli("build", git_repo.path, "--ref", "main", "--worktree")
    assert proc.returncode == 2 and "exclude each other" in proc.stderr


def test_failed_build_keeps_previous_manifest_current(git_repo, cli):
    git_repo.write("a.py", "x = 1\n")
    git_repo.commit("init")
    first = json.loads(cli("build", git_repo.path, "--ref", "main", "--json", check=True).stdout)
    proc = cli("build", git_repo.path, "--ref", "does-not-exist")
    assert proc.returncode == 4
    store = Store(git_repo.path / ".codeagent")
    assert store.read_ref("heads/main") == first["manifest_id"]
    assert store.is_assembled(first["manifest_id"])


@pytest.mark.parametrize("name", ["new\nline.py", "tab\there.py", "sp ace.py"])
def test_odd_file_names_are_indexed(git_repo, name):
    git_repo.write(name, "x = 1\n")
    build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    m = load_manifest(store, store.read_ref("worktree"))
    assert [f.path for f in m.files] == [name] and m.files[0].indexed


def test_non_utf8_file_name_is_recorded(git_repo):
    raw = os.path.join(os.fsencode(git_repo.path), b"bad\xffname.py")
    with open(raw, "wb") as fh:
        fh.write(b"x = 1\n")
    build(BuildOptions(repo=git_repo.path, jobs=1))
    reasons = _reasons(git_repo.path)
    assert list(reasons.values()) == ["non_utf8_path"]
