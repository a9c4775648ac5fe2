"""Freshness per request: the kept answer (query.freshness) is always the full comparison's
(refs.freshness), whatever happened to the work tree, and is reused while nothing changed."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeagent import refs
from codeagent.format.manifest import load_manifest
from codeagent.indexer.build import BuildOptions, build
from codeagent.query import freshness as freshness_mod
from codeagent.query.freshness import RACY_NS, one_look, worktree_freshness
from codeagent.store import Store

RACY_S = RACY_NS / 1e9 + 0.02
NAMES = ["a.py", "b.py", "pkg/c.py", "pkg/deep/d.py", "pkg/deep/f.py", "pkg/g.py", "new/e.py",
         ".gitignore"]
# (operation, file, content): write (same size or not), delete, or ignore everything under pkg/
OPS = st.tuples(st.sampled_from(["write", "delete", "ignore_pkg"]), st.sampled_from(NAMES),
                st.sampled_from(["x = 1\n", "x = 2\n", "x = 10\n"]))


@pytest.fixture(params=["inotify", "stat"])
def how(request, monkeypatch):
    """Both ways of noticing a change: inotify watches (Linux) and stat signatures (elsewhere)."""
    monkeypatch.setattr(freshness_mod, "INOTIFY", request.param == "inotify")
    monkeypatch.setattr(freshness_mod, "_known", {})
    return request.param


def _apply(repo, op: str, name: str, content: str) -> None:
    path = repo.path / name
    if op == "write":
        repo.write(name, content)
    elif op == "delete" and path.exists():
        path.unlink()
    elif op == "ignore_pkg":
        repo.write(".gitignore", "pkg/\n")


def test_unchanged_tree_reuses_the_answer_and_an_edit_is_seen_at_once(git_repo, how):
    git_repo.write_many({"a.py": "x = 1\n", "pkg/c.py": "y = 1\n"})
    git_repo.commit()
    result = build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    first = worktree_freshness(store, git_repo.path, result.manifest_id)
    assert first.state == "fresh"
    again = [worktree_freshness(store, git_repo.path, result.manifest_id) for _ in range(3)]
    assert again[-1] is again[-2], "an unchanged work tree was compared again"
    git_repo.write("a.py", "x = 2\n")  # same size, moments after the build
    assert worktree_freshness(store, git_repo.path, result.manifest_id).modified == ("a.py",)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(OPS, min_size=1, max_size=6))
def test_kept_answer_is_the_full_comparison(git_repo, how, ops):
    shutil.rmtree(git_repo.path / "pkg", ignore_errors=True)
    shutil.rmtree(git_repo.path / "new", ignore_errors=True)
    git_repo.write_many({"a.py": "x = 1\n", "b.py": "x = 2\n", "pkg/c.py": "x = 1\n",
                         "pkg/deep/d.py": "x = 1\n", ".gitignore": "*.log\n"})
    result = build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    manifest = load_manifest(store, result.manifest_id)
    for op in ops:
        _apply(git_repo, *op)
        for wait in (0, RACY_S, 0):  # right after the edit; then once past the racy window
            time.sleep(wait)  # (compared and kept), then reused
            kept = worktree_freshness(store, git_repo.path, result.manifest_id)
            full = refs.freshness(store, git_repo.path, manifest)
            assert kept == full, f"after {op}: kept {kept}, full comparison {full}"


def test_one_request_looks_once(git_repo):
    """Within one_look (one MCP request) every part of an answer gets the same freshness; the
    next request looks again."""
    git_repo.write("a.py", "x = 1\n")
    result = build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    with one_look():
        assert worktree_freshness(store, git_repo.path, result.manifest_id).state == "fresh"
        git_repo.write("a.py", "x = 2\n")
        assert worktree_freshness(store, git_repo.path, result.manifest_id).state == "fresh"
    assert worktree_freshness(store, git_repo.path, result.manifest_id).state == "stale"


def test_a_servers_first_look_answers_unknown_past_its_wait_and_keeps_the_full_answer(git_repo, monkeypatch):
    """A server's requests give a first look (every file's stat changed since the build, so
    every file is hashed) FIRST_LOOK_WAIT from its start, then answer `unknown` while it goes
    on; once done, its answer is kept and given."""
    monkeypatch.setattr(freshness_mod, "_known", {})
    git_repo.write_many({"a.py": "x = 1\n", "pkg/c.py": "y = 1\n"})
    git_repo.commit()
    result = build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    for name in ("a.py", "pkg/c.py"):
        os.utime(git_repo.path / name, ns=(1, 1))  # same content, another stat: hashed again
    key = (str(store.root), result.manifest_id)
    with freshness_mod._lock:  # another comparison holds it: this look cannot finish
        started = time.monotonic()
        first = worktree_freshness(store, git_repo.path, result.manifest_id, first_wait=0.2)
        assert first.state == "unknown" and time.monotonic() - started >= 0.2
        assert worktree_freshness(store, git_repo.path, result.manifest_id, first_wait=0.2).state == "unknown"
    deadline = time.monotonic() + 30
    while key not in freshness_mod._known and time.monotonic() < deadline:
        time.sleep(0.01)
    kept = worktree_freshness(store, git_repo.path, result.manifest_id, first_wait=0.2)
    assert kept.state == "fresh" and kept is freshness_mod._known[key].answer
    git_repo.write("a.py", "x = 22\n")
    assert worktree_freshness(store, git_repo.path, result.manifest_id, first_wait=0.2).modified == ("a.py",)
