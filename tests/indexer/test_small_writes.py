"""What a small work-tree edit writes follows the edit, not the repository: the manifest as a
delta on its base (format/manifest.py), the stat cache as a delta file (sources.JsonCache),
the overlay's graph step copy-on-write on the base's tables (assemble/overlay_graph.py)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings, strategies as st

from codeagent import format as fmt
from codeagent.errors import StoreCorrupt
from codeagent.format.manifest import MANIFEST_DELTA_FORMAT, load_manifest
from codeagent.hashing import hash_bytes
from codeagent.errors import CopyOnWriteUnsupported
from codeagent.indexer.assemble.overlay_graph import CowConnection
from codeagent.indexer.build import BuildOptions, build
from codeagent.indexer.maintenance import gc_store, verify_store
from codeagent.sources import JsonCache
from codeagent.store import Store
from repo_helpers import past_racy_window


def _files(n: int) -> dict[str, str]:
    return {f"pkg/m{i}.py": f"def f{i}():\n    return f{(i + 1) % n}()\n" for i in range(n)}


def _raw(store: Store, manifest_id: str) -> dict:
    return json.loads(store.get(manifest_id))


def _whole(store_dir: Path, manifest_id: str) -> dict:
    return load_manifest(Store(store_dir), manifest_id).to_dict()


def test_a_one_file_edit_writes_a_manifest_delta_and_a_stat_cache_delta(git_repo, tmp_path):
    git_repo.write_many(_files(40))
    past_racy_window()
    first = build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    stat_cache = store.root / fmt.CACHE_DIR / "worktree-stat.json"
    before = stat_cache.stat().st_mtime_ns
    original = (git_repo.path / "pkg/m3.py").read_text()
    git_repo.write("pkg/m3.py", "def f3():\n    return 1\n\ndef added():\n    pass\n")
    past_racy_window()
    second = build(BuildOptions(repo=git_repo.path, jobs=1))
    raw = _raw(store, second.manifest_id)
    assert raw["format"] == MANIFEST_DELTA_FORMAT and raw["base"] == first.manifest_id
    assert [f["path"] for f in raw["files"]] == ["pkg/m3.py"] and raw["removed"] == []
    assert len(store.get(second.manifest_id)) < 2048
    assert stat_cache.stat().st_mtime_ns == before  # only the delta file was written
    assert set(json.loads(stat_cache.with_name("worktree-stat.json.delta").read_text())["set"]) == {"pkg/m3.py"}
    clean = build(BuildOptions(repo=git_repo.path, store_dir=tmp_path / "clean", jobs=1))
    assert _whole(store.root, second.manifest_id) == _whole(tmp_path / "clean", clean.manifest_id)
    assert load_manifest(store, second.manifest_id).referenced_objects() >= {first.manifest_id}

    (git_repo.path / "pkg/m7.py").unlink()
    third = build(BuildOptions(repo=git_repo.path, jobs=1))
    raw = _raw(store, third.manifest_id)
    assert raw["base"] == first.manifest_id and raw["removed"] == ["pkg/m7.py"]
    gc_store(store)
    assert store.has(first.manifest_id)  # a delta's base is live while the delta is
    assert len(load_manifest(store, third.manifest_id).files) == 39
    assert verify_store(store).ok

    git_repo.write("pkg/m3.py", original)
    git_repo.write("pkg/m7.py", _files(40)["pkg/m7.py"])
    back = build(BuildOptions(repo=git_repo.path, jobs=1))
    assert back.manifest_id == first.manifest_id  # the base's tree again: the base's id


def test_a_stat_cache_reloads_with_its_delta(git_repo):
    git_repo.write_many(_files(5))
    past_racy_window()
    build(BuildOptions(repo=git_repo.path, jobs=1))
    git_repo.write("pkg/m1.py", "X = 1\n")
    past_racy_window()
    build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    cache = JsonCache(store, "worktree-stat.json")
    assert cache.get("pkg/m1.py")[-1] == hash_bytes(b"X = 1\n")
    assert not build(BuildOptions(repo=git_repo.path, jobs=1)).changed
    assert build(BuildOptions(repo=git_repo.path, jobs=1)).files_parsed == 0


def test_a_file_written_moments_before_a_build_is_hashed_again_by_the_next(git_repo):
    """Racy git: a file whose stat is as new as the build's walk may be written again within
    the file system's clock tick without its stat changing, so its stat is not kept; the next
    build past the window hashes it again (nothing changed) and keeps it."""
    git_repo.write_many(_files(3))
    past_racy_window()
    m1 = git_repo.write("pkg/m1.py", "X = 1\n")
    # "Moments before the build" without racing the clock: a loaded machine can take longer
    # than the window between the write and the walk, but a stat stamped later than the walk
    # is inside it however long that takes.
    future = time.time_ns() + 3600 * 10**9
    os.utime(m1, ns=(future, future))
    first = build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    assert JsonCache(store, "worktree-stat.json").get("pkg/m1.py") is None
    assert JsonCache(store, "worktree-stat.json").get("pkg/m0.py")[-1] == hash_bytes(_files(3)["pkg/m0.py"].encode())
    os.utime(m1, ns=(time.time_ns(),) * 2)  # back to now; waiting past the window is load-safe
    past_racy_window()
    again = build(BuildOptions(repo=git_repo.path, jobs=1))
    assert not again.changed and again.manifest_id == first.manifest_id
    assert JsonCache(store, "worktree-stat.json").get("pkg/m1.py")[-1] == hash_bytes(b"X = 1\n")


def test_a_delta_whose_base_is_gone_is_a_clear_error_and_the_next_build_mends_it(git_repo):
    git_repo.write_many(_files(6))
    first = build(BuildOptions(repo=git_repo.path, jobs=1))
    git_repo.write("pkg/m2.py", "def g():\n    pass\n")
    second = build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    store.object_path(first.manifest_id).unlink()
    with pytest.raises(StoreCorrupt, match="is a delta on"):
        load_manifest(store, second.manifest_id)
    assert [p.kind for p in verify_store(store).problems] == ["bad_manifest"]
    mended = build(BuildOptions(repo=git_repo.path, jobs=1))
    assert mended.repairs and "could not be read" in mended.repairs[0]
    assert _raw(store, mended.manifest_id)["format"] == fmt.MANIFEST_FORMAT
    assert verify_store(store).ok


def test_past_the_delta_bound_the_manifest_is_written_whole(git_repo, monkeypatch):
    monkeypatch.setattr("codeagent.format.manifest.MANIFEST_DELTA_MAX", 2)
    git_repo.write_many(_files(8))
    build(BuildOptions(repo=git_repo.path, jobs=1))
    git_repo.write_many({f"pkg/m{i}.py": f"Y{i} = 2\n" for i in range(3)})
    whole = build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    assert _raw(store, whole.manifest_id)["format"] == fmt.MANIFEST_FORMAT
    git_repo.write("pkg/m5.py", "Z = 3\n")
    delta = build(BuildOptions(repo=git_repo.path, jobs=1))
    assert _raw(store, delta.manifest_id)["base"] == whole.manifest_id


def test_a_committed_tree_is_never_a_delta(git_repo):
    git_repo.write_many(_files(6))
    git_repo.commit("one")
    build(BuildOptions(repo=git_repo.path, rev="HEAD", jobs=1))
    git_repo.write("pkg/m1.py", "X = 1\n")
    git_repo.commit("two")
    second = build(BuildOptions(repo=git_repo.path, rev="HEAD", jobs=1))
    assert _raw(Store(git_repo.path / ".codeagent"), second.manifest_id)["format"] == fmt.MANIFEST_FORMAT


KEYS = st.sampled_from([f"k{i}" for i in range(12)])
OPS = st.lists(st.one_of(
    st.tuples(st.just("set"), KEYS, st.integers(0, 3)),
    st.tuples(st.just("retain"), st.frozensets(KEYS), st.just(0)),
    st.tuples(st.just("save"), st.just(""), st.just(0)),
    st.tuples(st.just("reload"), st.just(""), st.just(0)),
), max_size=30)


@given(ops=OPS, share=st.sampled_from([0.0, 0.2, 1.0]))
@settings(max_examples=60, deadline=None)
def test_a_json_cache_reads_back_what_was_saved(tmp_path_factory, ops, share):
    """Whatever was saved, whole or as a delta, a new reader sees; unsaved changes are lost."""
    store = Store(tmp_path_factory.mktemp("store"), create=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("codeagent.sources.JSON_CACHE_DELTA_MIN", 2)
        mp.setattr("codeagent.sources.JSON_CACHE_DELTA_SHARE", share)
        cache, saved = JsonCache(store, "c.json"), {}
        for op, key, value in ops:
            if op == "set":
                cache.set(key, [value])
            elif op == "retain":
                cache.retain(set(key))
            elif op == "save":
                cache.save()
                saved = dict(cache.data)
            else:
                cache = JsonCache(store, "c.json")
                assert cache.data == saved
        assert JsonCache(store, "c.json").data == saved


def test_a_stale_stat_cache_delta_is_ignored(tmp_path):
    store = Store(tmp_path / "store", create=True)
    cache = JsonCache(store, "c.json")
    cache.set("a", [1])
    cache.save()  # no whole file yet: written whole
    cache.set("b", [2])
    cache.save()  # a delta on it
    delta = cache.delta_path.read_bytes()
    whole = JsonCache(store, "c.json")
    whole.changes = {k: 9 for k in range(1000)}  # force a whole write
    whole.dirty = True
    whole.save()
    cache.delta_path.write_bytes(delta)  # a crash between writing the whole file and removing the delta
    assert JsonCache(store, "c.json").data == {"a": [1], "b": [2]}
    os.utime(cache.path, ns=(1, 1))
    assert JsonCache(store, "c.json").data == {"a": [1], "b": [2]}


GRAPH_LIKE = """
CREATE TABLE edges(src_path VARCHAR, src_line INTEGER, target VARCHAR, kind VARCHAR);
INSERT INTO edges SELECT 'p' || (i % 7), i, 't' || (i % 5), CASE WHEN i % 3 = 0 THEN 'calls' ELSE 'refs' END
FROM range(60) r(i);
"""
# What the graph step does to its tables, in its forms: DELETE ... WHERE (with a subquery and
# a comment holding a quote), DELETE ... USING, INSERT, and deletes of rows it inserted.
STEP = """
CREATE TEMP TABLE gone AS SELECT 'p1' AS path, 3 AS line UNION ALL SELECT 'p2', 9;
DELETE FROM edges WHERE src_path IN (SELECT path FROM gone) AND kind = 'calls';  -- the step's 'calls'
INSERT INTO edges VALUES ('p1', 100, 'x;y', 'calls'), ('p9', 5, 't1', 'refs');
DELETE FROM edges USING (SELECT DISTINCT path, line FROM gone WHERE line > 0) g
WHERE edges.src_path = g.path AND (edges.src_line % 2 = 1 OR edges.src_line = 100);
DELETE FROM edges WHERE (src_path, target) IN (SELECT ('p9', 't1'));
INSERT INTO edges SELECT src_path, src_line + 1000, target, kind FROM edges WHERE src_path = 'p4';
"""


def test_copy_on_write_views_change_as_the_tables_would():
    plain = duckdb.connect()
    plain.execute(GRAPH_LIKE)
    plain.execute(STEP)
    con = duckdb.connect()
    con.execute("ATTACH ':memory:' AS base")
    con.execute("USE base")
    con.execute(GRAPH_LIKE)
    con.execute("USE memory")
    con.execute("CREATE TABLE new_edges AS SELECT * FROM base.main.edges LIMIT 0")
    con.execute("CREATE TABLE del_edges(rid BIGINT)")
    con.execute("""CREATE VIEW edges AS SELECT * FROM base.main.edges WHERE rowid NOT IN
        (SELECT rid FROM del_edges) UNION ALL SELECT * FROM new_edges""")
    CowConnection(con).execute(STEP)
    query = "SELECT * FROM edges ORDER BY ALL"
    assert con.execute(query).fetchall() == plain.execute(query).fetchall()
    assert con.execute("SELECT count(*) FROM base.main.edges").fetchone() == (60,)  # untouched
    for whole in ("CREATE OR REPLACE TABLE edges(a INTEGER)", "UPDATE edges SET kind = 'x'"):
        with pytest.raises(CopyOnWriteUnsupported):
            CowConnection(con).execute(whole)


def _written_by_one_file_edit(repo: Path, n: int) -> int:
    """Bytes this process handed to write() while building a one-file edit of an n-file tree."""
    def wchar() -> int:
        return int(dict(r.split(": ") for r in Path("/proc/self/io").read_text().splitlines())["wchar"])

    repo.mkdir()
    for path, text in _files(n).items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    build(BuildOptions(repo=repo, jobs=1))
    (repo / "pkg/m1.py").write_text("def f1():\n    return f2()\n\ndef extra():\n    return f1()\n")
    before = wchar()
    result = build(BuildOptions(repo=repo, jobs=1))
    assert Store(repo / ".codeagent").assembly_base(result.manifest_id)  # an overlay
    return wchar() - before


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs /proc/<pid>/io")
def test_what_a_one_file_edit_writes_does_not_grow_with_the_tree(tmp_path):
    small = _written_by_one_file_edit(tmp_path / "small", 60)
    large = _written_by_one_file_edit(tmp_path / "large", 600)
    assert large < small * 1.3 + (64 << 10), (small, large)
