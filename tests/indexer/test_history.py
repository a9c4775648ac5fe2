"""The history view: mined from real git histories, never past the indexed commit, reused by
later builds, and used by the file ranking."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeagent.format.history import POSTINGS_FILE, RECORDS_FILE, view_dir
from codeagent.indexer.build import BuildOptions, build
from codeagent.indexer.history import clean_message, ensure_history, file_postings, CommitRecord
from codeagent.query import SearchRequest, open_index, search
from tests.repo_helpers import GitRepo, examples


def _records(store: Path, commit: str) -> list[str]:
    return pq.read_table(view_dir(store, commit) / RECORDS_FILE).column("sha").to_pylist()


def test_the_view_holds_the_commits_reachable_from_the_indexed_one_only(tmp_path: Path) -> None:
    g = GitRepo.create(tmp_path / "r")
    g.write("a.py", "x = 1\n")
    first = g.commit("start the parser")
    g.write("a.py", "x = 2\n")
    second = g.commit("teach the parser about lambdas")
    g.checkout("side", create=True)
    g.write("b.py", "y = 1\n")
    side = g.commit("a branch commit the indexed one cannot reach")
    g.checkout("main")
    store = tmp_path / "store"
    result = build(BuildOptions(repo=g.path, store_dir=store, rev=second))
    assert result.history["commits"] == 2 and result.history["mined"] == 2
    assert _records(store, second) == [second, first]
    assert side not in _records(store, second)


def test_a_later_build_mines_only_the_new_commits(tmp_path: Path) -> None:
    g = GitRepo.create(tmp_path / "r")
    for i in range(5):
        g.write("a.py", f"x = {i}\n")
        g.commit(f"change {i} of the tokenizer")
    store = tmp_path / "store"
    assert build(BuildOptions(repo=g.path, store_dir=store)).history["mined"] == 5
    g.write("b.py", "y = 1\n")
    head = g.commit("add the renderer")
    again = build(BuildOptions(repo=g.path, store_dir=store))
    assert again.history["mined"] == 1 and again.history["commits"] == 6
    assert build(BuildOptions(repo=g.path, store_dir=store)).history["reused"] is True
    clean = tmp_path / "clean"
    build(BuildOptions(repo=g.path, store_dir=clean))
    for name in (RECORDS_FILE, POSTINGS_FILE):  # incremental equals clean
        assert pq.read_table(view_dir(store, head) / name).equals(pq.read_table(view_dir(clean, head) / name))


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=2, max_size=7), st.data())
def test_history_never_crosses_the_indexed_commit(tmp_path_factory, steps, data) -> None:
    """Random histories with branches and merges: the view of any commit holds exactly the
    non-merge commits `git rev-list` reaches from it."""
    root = tmp_path_factory.mktemp("h")
    g = GitRepo.create(root / "r")
    g.write("f0.py", "start = 0\n")
    commits = [g.commit("root commit")]
    for n, (branch, merge) in enumerate(steps):
        name = f"b{branch}"
        if name not in [h.name for h in g.repo.heads]:
            g.repo.git.branch(name, commits[-1])
        g.checkout(name)
        g.write(f"f{n % 3}.py", f"v = {n}\n")
        commits.append(g.commit(f"step {n} on {name}"))
        if merge and name != "main":
            g.checkout("main")
            g.repo.git.merge(name, "--no-edit", "-X", "theirs")
            commits.append(g.repo.head.commit.hexsha)
    target = data.draw(st.sampled_from(commits))
    store = root / "store"
    for earlier in data.draw(st.lists(st.sampled_from(commits), max_size=2)):  # stored views to reuse
        ensure_history(store, g.path, earlier)
    ensure_history(store, g.path, target)
    want = subprocess.run(["git", "-C", str(g.path), "rev-list", "--no-merges", target],
                          capture_output=True, text=True, check=True).stdout.split()
    assert _records(store, target) == want


def test_a_shallow_clone_builds_and_says_so(tmp_path: Path) -> None:
    g = GitRepo.create(tmp_path / "r")
    for i in range(4):
        g.write("a.py", f"x = {i}\n")
        g.commit(f"commit {i}")
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "2", f"file://{g.path}", str(clone)], check=True)
    result = build(BuildOptions(repo=clone, store_dir=tmp_path / "store"))
    assert result.history["shallow"] is True and result.history["commits"] == 2
    assert any("shallow" in n for n in result.history["notes"])


def test_renames_carry_a_files_history_and_messages_lose_trailers() -> None:
    old = CommitRecord("1", 0, "parse lambdas in the tokenizer", ("old/lex.py",))
    moved = CommitRecord("2", 0, "move", ("new/lex.py",), (("old/lex.py", "new/lex.py"),))
    fields = file_postings([moved, old])  # newest first
    assert "old/lex.py" not in fields and fields["new/lex.py"]["lambdas"] > 0
    assert clean_message("Fix it\n\nSigned-off-by: A <a@b>\nsee https://x.y/z") == "Fix it\n\n\nsee"


def test_the_file_ranking_finds_a_file_by_what_its_history_says(tmp_path: Path) -> None:
    """No word of the query is in the file's text; its past commit messages hold them."""
    g = GitRepo.create(tmp_path / "r")
    g.write("pkg/a.py", "def alpha():\n    return 1\n")
    g.write("pkg/b.py", "def beta():\n    return 2\n")
    g.commit("initial")
    for i in range(3):
        g.write("pkg/b.py", f"def beta():\n    return {i + 3}\n")
        g.commit(f"retry throttling for the billing gateway, round {i}")
    build(BuildOptions(repo=g.path, store_dir=tmp_path / "store"))
    with open_index(g.path, tmp_path / "store") as view:
        on = search(view, SearchRequest("billing gateway throttling", limit=5))
        off = search(view, SearchRequest("billing gateway throttling", limit=5, history=False))
    assert on.results and on.results[0].path == "pkg/b.py"
    assert "pkg/b.py" not in [h.path for h in off.results]


def test_gc_keeps_the_history_of_kept_refs_only(tmp_path: Path) -> None:
    from codeagent.indexer.maintenance import gc_store
    from codeagent.store import Store

    g = GitRepo.create(tmp_path / "r")
    g.write("a.py", "x = 1\n")
    old = g.commit("first")
    g.write("a.py", "x = 2\n")
    new = g.commit("second")
    store = tmp_path / "store"
    build(BuildOptions(repo=g.path, store_dir=store, rev=old))
    build(BuildOptions(repo=g.path, store_dir=store, rev=new))
    g.repo.git.tag("v1", old)
    assert (view_dir(store, old) / POSTINGS_FILE).exists()
    report = gc_store(Store(store), [new], repo=g.path)
    assert report.history_deleted == 1
    assert not view_dir(store, old).exists() and (view_dir(store, new) / POSTINGS_FILE).exists()


def test_a_build_after_a_merge_reuses_the_view_of_the_merge_before_it(tmp_path: Path) -> None:
    """Views are stored for the commits built, merges among them; the next build finds one
    through merge commits and mines only what is new."""
    g = GitRepo.create(tmp_path / "r")
    g.write("a.py", "x = 0\n")
    g.commit("root")
    for n in range(2):
        g.checkout(f"topic{n}", create=True)
        g.write(f"t{n}.py", f"y = {n}\n")
        g.commit(f"topic {n}")
        g.checkout("main")
        g.repo.git.merge(f"topic{n}", "--no-ff", "--no-edit")
        merged = g.repo.head.commit.hexsha
        result = build(BuildOptions(repo=g.path, store_dir=tmp_path / "store", rev=merged))
    assert result.history["mined"] == 1 and result.history["commits"] == 3


def test_a_clone_missing_old_objects_still_gets_a_history_without_renames(tmp_path: Path) -> None:
    """Finding an inexact rename reads both blobs; a partial clone lacks old ones."""
    g = GitRepo.create(tmp_path / "r")
    body = "".join(f"def step_{i}(x):\n    return x + {i}\n\n" for i in range(30))
    g.write("old_name.py", body)
    g.commit("start the scheduler")
    g.move("old_name.py", "scheduler.py")
    g.write("scheduler.py", body + "def extra():\n    return 0\n")
    head = g.commit("rename the scheduler and teach it retries")
    blob = g.repo.git.rev_parse("HEAD~1:old_name.py").strip()
    (g.path / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    store = tmp_path / "store"
    result = build(BuildOptions(repo=g.path, store_dir=store))
    assert result.history["skipped"] == "" and result.history["commits"] == 2
    assert any("renames not followed" in n for n in result.history["notes"])
    paths = pq.read_table(view_dir(store, head) / RECORDS_FILE).column("paths").to_pylist()
    assert sorted(paths[0]) == ["old_name.py", "scheduler.py"]
