"""Exit codes before any build and the one grammar of ref lists (issue 45, item 8)."""

from __future__ import annotations

import json
import tarfile

import pytest

from codeagent.store import Store


@pytest.fixture
def unbuilt(git_repo):
    git_repo.write("app.py", "def app():\n    return 1\n")
    git_repo.commit("init")
    return git_repo


@pytest.mark.parametrize("args", [
    ("diff", "HEAD", "worktree", "--repo", "{repo}"), ("publish", "{repo}", "--to", "{tmp}/remote"),
    ("bundle", "{repo}", "-o", "{tmp}/index.tar"), ("verify", "{repo}"), ("gc", "{repo}"),
    ("status", "{repo}"), ("search", "app", "--repo", "{repo}"),
])
def test_every_command_before_any_build_exits_5(unbuilt, cli, tmp_path, args):
    """They exited 7 ("corrupt store") for a store that was never made."""
    argv = [a.format(repo=unbuilt.path, tmp=tmp_path) for a in args]
    proc = cli(*argv)
    assert proc.returncode == 5, (argv, proc.returncode, proc.stderr)
    assert "no index" in proc.stderr and "codeagent build" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.fixture
def three_refs(unbuilt, cli):
    unbuilt.repo.git.tag("v1.11.0")
    unbuilt.checkout("topic", create=True)
    unbuilt.write("topic.py", "T = 1\n")
    unbuilt.commit("topic")
    for ref in ("main", "v1.11.0", "topic"):
        cli("build", unbuilt.path, "--ref", ref, check=True)
    return unbuilt


@pytest.mark.parametrize("order", ["refs_after_repo", "repo_after_refs", "repeated", "in_cwd"])
def test_gc_keep_refs_takes_every_ref_after_it(three_refs, cli, order):
    repo = str(three_refs.path)
    argv = {"refs_after_repo": ["gc", repo, "--keep-refs", "main", "v1.11.0"],
            "repo_after_refs": ["gc", "--keep-refs", "main", "v1.11.0", repo],
            "repeated": ["gc", repo, "--keep-refs", "main", "--keep-refs", "v1.11.0"],
            "in_cwd": ["gc", "--keep-refs", "main", "v1.11.0", "--json"]}[order]
    proc = cli(*argv, *(() if "--json" in argv else ("--json",)), cwd=three_refs.path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kept_refs"] == ["heads/main", "tags/v1.11.0"]
    assert sorted(Store(three_refs.path / ".codeagent").list_refs()) == ["heads/main", "tags/v1.11.0"]


def test_bundle_ref_takes_the_same_list(three_refs, cli, tmp_path):
    out = tmp_path / "index.tar"
    cli("bundle", three_refs.path, "--ref", "main", "v1.11.0", "-o", out, check=True)
    with tarfile.open(out) as tar:
        refs = sorted(n for n in tar.getnames() if n.startswith("refs/"))
    assert refs == ["refs/heads/main", "refs/tags/v1.11.0"]
