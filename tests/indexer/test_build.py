"""The build pipeline on real git repositories: incrementality, sharing, no-ops."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from codeagent import format as fmt
from codeagent.indexer.build import BuildOptions, build
from codeagent.format.manifest import FileEntry, load_manifest
from codeagent.format.shard import shard_texts
from codeagent.store import Store

PY = "def add(a, b):\n    return a + b\n"


def _build(repo: Path, rev: str | None = None, **kw):
    return build(BuildOptions(repo=repo, rev=rev, jobs=1, **kw))


def _manifest(repo: Path, ref: str = "worktree"):
    store = Store(repo / ".codeagent")
    return load_manifest(store, store.read_ref(ref))


def test_edit_one_file_parses_exactly_one(git_repo):
    git_repo.write_many({f"pkg/m{i}.py": f"X{i} = {i}\n" for i in range(12)})
    git_repo.commit("init")
    first = _build(git_repo.path)
    assert first.files_parsed == 12 and first.changed
    git_repo.write("pkg/m3.py", "X3 = 'changed'\n")
    second = _build(git_repo.path)
    assert second.files_parsed == 1
    assert second.files_reused == 11
    assert second.changed and second.manifest_id != first.manifest_id
    entry = _manifest(git_repo.path).file("pkg/m3.py")
    assert entry is not None and entry.indexed


def test_paths_reread_only_those_files(git_repo):
    """`--path` (the MCP index_files tool): the named files are read again, added or dropped;
    every other file keeps its previous entry, edited or not; the next full build catches up."""
    git_repo.write_many({"a.py": "A = 1\n", "b.py": "B = 1\n", "gone.py": "G = 1\n"})
    first = _build(git_repo.path)
    git_repo.write("a.py", "A = 2\n")
    git_repo.write("b.py", "B = 2\n")
    git_repo.write("new.py", "N = 1\n")
    (git_repo.path / "gone.py").unlink()
    before = _manifest(git_repo.path)
    only = _build(git_repo.path, paths=frozenset({"a.py", "new.py", "gone.py"}))
    assert only.files_parsed == 2 and only.changed
    after = _manifest(git_repo.path)
    assert after.file("a.py").blob != before.file("a.py").blob
    assert after.file("b.py") == before.file("b.py"), "a file not named was read again"
    assert after.file("new.py") is not None and after.file("gone.py") is None
    full = _build(git_repo.path)
    assert full.files_parsed == 1 and _manifest(git_repo.path).file("b.py").blob != before.file("b.py").blob
    assert first.manifest_id not in (only.manifest_id, full.manifest_id)


def test_second_build_is_a_noop(git_repo):
    git_repo.write_many({"a.py": PY, "b.md": "# Title\n\ntext\n"})
    first = _build(git_repo.path)
    again = _build(git_repo.path)
    assert not again.changed
    assert again.files_parsed == 0
    assert again.manifest_id == first.manifest_id


def test_a_previous_manifest_of_another_extractor_is_parsed_again(git_repo):
    """What an older extractor made (say, before secrets were recognised by content) is not
    reused: the ref's manifest names extractor "0" and the action cache knows no shard of
    this extractor's (as after an upgrade), so every file is parsed again."""
    import shutil
    from dataclasses import replace

    git_repo.write_many({"a.py": PY, "b.py": "X = 1\n"})
    first = _build(git_repo.path)
    store = Store(git_repo.path / ".codeagent")
    old = replace(load_manifest(store, first.manifest_id), extractor_version="0")
    store.set_ref(first.ref, store.put(old.canonical_bytes()))
    shutil.rmtree(store.root / fmt.ACTIONS_DIR)
    again = _build(git_repo.path)
    assert again.files_parsed == 2 and again.files_reused == 0, again
    assert load_manifest(store, again.manifest_id).extractor_version == fmt.EXTRACTOR_VERSION


def test_rename_reuses_the_shard(git_repo):
    git_repo.write_many({"src/util.py": PY, "src/other.py": "Y = 2\n"})
    git_repo.commit("init")
    _build(git_repo.path)
    before = _manifest(git_repo.path).file("src/util.py")
    git_repo.move("src/util.py", "lib/helpers.py")
    result = _build(git_repo.path)
    assert result.files_parsed == 0
    assert result.shards_written == 0
    after = _manifest(git_repo.path).file("lib/helpers.py")
    assert after is not None and before is not None
    assert after.shard == before.shard and after.blob == before.blob
    assert _manifest(git_repo.path).file("src/util.py") is None


def test_other_branch_parses_only_differing_files(git_repo):
    git_repo.write_many({f"m{i}.py": f"V{i} = {i}\n" for i in range(10)})
    git_repo.commit("init")
    main = _build(git_repo.path, rev="main")
    assert main.ref == "heads/main" and main.files_parsed == 10
    git_repo.checkout("feature", create=True)
    git_repo.write("m1.py", "V1 = 'feature'\n")
    git_repo.write("new.py", "NEW = 1\n")
    git_repo.commit("feature work")
    git_repo.checkout("main")
    feature = _build(git_repo.path, rev="feature")
    assert feature.ref == "heads/feature"
    assert feature.files_parsed == 2
    store = Store(git_repo.path / ".codeagent")
    a = load_manifest(store, store.read_ref("heads/main"))
    b = load_manifest(store, store.read_ref("heads/feature"))
    shared = {f.path for f in a.files} & {f.path for f in b.files} - {"m1.py"}
    assert shared and all(a.file(p).shard == b.file(p).shard for p in shared)


def test_committed_tree_noop_uses_git_blob_ids(git_repo):
    git_repo.write_many({"a.py": PY, "b.py": "B = 1\n"})
    git_repo.commit("init")
    _build(git_repo.path, rev="main")
    git_repo.write("a.py", "# dirty work tree is irrelevant to --ref\n")
    again = _build(git_repo.path, rev="main")
    assert not again.changed and again.files_parsed == 0


def test_worktree_includes_untracked_but_not_ignored(git_repo):
    git_repo.write_many({".gitignore": "build/\n*.log\n", "a.py": PY})
    git_repo.commit("init")
    git_repo.write_many({"untracked.py": "U = 1\n", "build/out.py": "O = 1\n", "x.log": "log\n"})
    _build(git_repo.path)
    paths = {f.path for f in _manifest(git_repo.path).files}
    assert paths == {".gitignore", "a.py", "untracked.py"}


def test_same_bytes_at_two_paths_share_one_shard(git_repo):
    git_repo.write_many({"one/x.py": PY, "two/y.py": PY})
    result = _build(git_repo.path)
    m = _manifest(git_repo.path)
    assert m.file("one/x.py").shard == m.file("two/y.py").shard
    assert result.shards_written == 1


def test_assembled_database_exists_for_the_ref(git_repo):
    import duckdb

    git_repo.write_many({"a.py": PY, "README.md": "# Intro\n\nhello\n"})
    result = _build(git_repo.path)
    store = Store(git_repo.path / ".codeagent")
    assert store.is_assembled(result.manifest_id)
    con = duckdb.connect(str(store.assembled_dir(result.manifest_id) / fmt.DUCKDB_FILE), read_only=True)
    try:
        assert con.execute("SELECT value FROM meta WHERE key='manifest_id'").fetchone()[0] == result.manifest_id
        paths = {r[0] for r in con.execute("SELECT path FROM files").fetchall()}
        assert paths == {"a.py", "README.md"}
        shard = con.execute("SELECT shard FROM files WHERE path='a.py'").fetchone()[0]
        assert shard_texts([("a.py", shard)], store.get).column("text").to_pylist() == [PY]
    finally:
        con.close()


def test_json_summary_fields(git_repo, cli):
    git_repo.write_many({"a.py": PY, "blob.bin": b"\x00\x01\x02"})
    proc = cli("build", git_repo.path, "--json", check=True)
    data = json.loads(proc.stdout)
    for key in ("files_total", "files_parsed", "files_reused", "files_skipped", "shards_written",
                "manifest_id", "ref", "commit", "seconds"):
        assert key in data, key
    assert data["files_total"] == 2
    assert set(data["phases"]) == {"scan", "parse", "embed", "assemble", "graph"}
    assert all(v >= 0 for v in data["phases"].values())
    assert sum(data["phases"].values()) <= data["seconds"]
    assert data["files_skipped"]["by_reason"] == {"binary": 1}
    assert data["files_skipped"]["files"] == [{"path": "blob.bin", "reason": "binary"}]
    assert proc.stderr == ""  # no progress bar when piped or with --json
    again = cli("build", git_repo.path, check=True)
    assert "nothing changed" in again.stdout


def test_assembly_in_an_older_layout_is_rebuilt_not_reused(git_repo):
    git_repo.write("a.py", PY)
    first = _build(git_repo.path)
    store = Store(git_repo.path / ".codeagent")
    marker = store.assembled_dir(first.manifest_id) / fmt.COMPLETE_MARKER
    marker.write_text(f"{first.manifest_id} assembly 0\n")
    assert not store.is_assembled(first.manifest_id)
    again = _build(git_repo.path)
    assert again.manifest_id == first.manifest_id
    assert store.is_assembled(first.manifest_id)


def _postings_layout(store: Store, manifest_id: str) -> tuple[int, int, int]:
    """(rows out of term order, tail rows recorded in meta, total rows) of term_postings."""
    import duckdb

    con = duckdb.connect(str(store.assembled_dir(manifest_id) / fmt.DUCKDB_FILE), read_only=True)
    try:
        disorder = con.execute("""SELECT count(*) FROM (SELECT term, lag(term) OVER (ORDER BY rowid)
            AS prev FROM term_postings) WHERE prev > term""").fetchall()[0][0]
        tail = int(con.execute("SELECT value FROM meta WHERE key = 'postings_tail_rows'").fetchall()[0][0])
        total = con.execute("SELECT count(*) FROM term_postings").fetchall()[0][0]
    finally:
        con.close()
    return disorder, tail, total


def test_term_postings_stay_sorted_with_a_bounded_tail(git_repo):
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    git_repo.write_many({f"m{i}.py": "".join(f"def {w}_{i}_{j}(): return {j}\n" for j, w in enumerate(words))
                         for i in range(20)})
    first = _build(git_repo.path, overlay=False)
    store = Store(git_repo.path / ".codeagent")
    assert _postings_layout(store, first.manifest_id)[:2] == (0, 0)
    git_repo.write("m0.py", "def zulu(): return 'appended'\n")
    small = _build(git_repo.path, overlay=False)
    disorder, tail, total = _postings_layout(store, small.manifest_id)
    assert 0 < tail <= 0.15 * total
    git_repo.write_many({f"m{i}.py": "".join(f"def yankee_{i}_{j}(): return 'x{j}'\n" for j in range(60))
                         for i in range(1, 8)})
    big = _build(git_repo.path, overlay=False)
    assert _postings_layout(store, big.manifest_id)[:2] == (0, 0)


def _fetch(store: Store, manifest_id: str, query: str) -> list[tuple]:
    import duckdb

    con = duckdb.connect(str(store.assembled_dir(manifest_id) / fmt.DUCKDB_FILE), read_only=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def _ordered_postings(store: Store, manifest_id: str) -> list[tuple]:
    return _fetch(store, manifest_id, "SELECT * FROM term_postings ORDER BY rowid")


def _rows(store: Store, manifest_id: str, query: str) -> list[tuple]:
    return sorted(_fetch(store, manifest_id, query), key=repr)  # NULLs do not order against values


def test_full_and_incremental_assemblies_have_the_same_rows(git_repo, tmp_path):
    """A full assembly computes the postings on a second cursor beside the other tables; an
    incremental one in its single transaction. Both must give the same rows."""
    git_repo.write_many({f"m{i}.py": f"import os\n\ndef f{i}(path):\n    '''Join {i}.'''\n"
                         f"    return os.path.join(path, 'x{i}')\n" for i in range(8)})
    git_repo.write("README.md", "# Notes\n\nsome words here\n")
    _build(git_repo.path, overlay=False)
    git_repo.write("m3.py", "class Three:\n    def run(self):\n        return f4('y')\n")
    incremental = _build(git_repo.path, overlay=False)
    full = _build(git_repo.path, store_dir=tmp_path / "fresh")
    assert full.manifest_id == incremental.manifest_id and full.files_parsed == 9
    stores = Store(git_repo.path / ".codeagent"), Store(tmp_path / "fresh")
    for query in ("SELECT * FROM term_postings", "SELECT * FROM docs", "SELECT * FROM files",
                  "SELECT * EXCLUDE (modifiers) FROM symbols", "SELECT * FROM refs", "SELECT * FROM edges"):
        a, b = (_rows(s, incremental.manifest_id, query) for s in stores)
        assert a == b and a, query


def test_an_assembly_in_batches_has_the_same_rows_and_sorted_postings(git_repo, tmp_path):
    """A huge tree is inserted in batches of bounded source bytes; a full assembly of many
    batches (here one file each, read back from Parquet) must equal the one-batch assembly and
    still have term_postings in term order."""
    import shutil

    from codeagent.indexer.assemble.pipeline import assemble
    from codeagent.indexer.assemble.plan import Assembly

    git_repo.write_many({f"pkg/m{i}.py": f"from pkg import m{(i + 1) % 6}\n\n"
                         f"class Job{i}:\n    '''Runs step {i}.'''\n    def run(self):\n"
                         f"        return m{(i + 1) % 6}.Job{(i + 1) % 6}().run()\n" for i in range(6)})
    git_repo.write("docs/guide.md", "# Guide\n\nRun the jobs in order.\n")
    git_repo.write("blob.bin", b"\x00\x01binary")
    one = _build(git_repo.path)
    many = _build(git_repo.path, store_dir=tmp_path / "many")
    store = Store(tmp_path / "many")
    shutil.rmtree(store.assembled_dir(many.manifest_id))
    assemble(Assembly(store, load_manifest(store, many.manifest_id), many.manifest_id, batch_bytes=1))
    stores = Store(git_repo.path / ".codeagent"), store
    for query in ("SELECT * FROM term_postings", "SELECT * FROM docs", "SELECT * FROM files",
                  "SELECT * FROM chunks", "SELECT * EXCLUDE (modifiers) FROM symbols",
                  "SELECT * FROM refs", "SELECT * FROM edges", "SELECT * FROM symbol_names"):
        a, b = (_rows(s, one.manifest_id, query) for s in stores)
        assert a == b and a, query
    assert _postings_layout(store, many.manifest_id)[:2] == (0, 0)
    # the batches' runs merged keep a term's rows in manifest order, as the one batch has them
    a, b = (_ordered_postings(s, one.manifest_id) for s in stores)
    assert a == b and a
    dirs = [s.assembled_dir(one.manifest_id) for s in stores]
    resident = sorted(p.name for p in dirs[0].glob("resident.*.arrow"))
    assert resident and all((dirs[0] / n).read_bytes() == (dirs[1] / n).read_bytes() for n in resident)


@given(st.lists(st.tuples(st.integers(0, 50), st.booleans()), max_size=30), st.integers(1, 60))
def test_batches_keep_order_and_stay_within_the_limit(files, limit):
    from codeagent.indexer.assemble.tables import batches

    entries = [FileEntry(f"f{i}", "", size, "python", fmt.STATUS_INDEXED if indexed else fmt.STATUS_SKIPPED)
               for i, (size, indexed) in enumerate(files)]
    runs = batches(entries, limit)

    def weight(run):  # a skipped file's size is not held in memory: it counts nothing
        return sum(e.size for e in run if e.indexed)

    assert [e for run in runs for e in run] == entries
    assert all(run and (len(run) == 1 or weight(run) <= limit) for run in runs)
    # greedy: no run could have taken the next run's first entry
    assert all(weight(a) + weight(b[:1]) > limit for a, b in zip(runs, runs[1:]))


def test_a_build_never_imports_pyarrow_compute_or_numpy_ma(git_repo):
    """Importing pyarrow.compute costs ~40 ms (a fifteenth of a one-file build in a fresh process),
    numpy.ma ~9 ms (`pa.array(ndarray)` imports it); build code calls the kernels and wraps
    numpy arrays through codeagent.kernels instead: for a file that changed, and for one
    changed back (a branch switch), whose shard is read back from Parquet."""
    import subprocess
    import sys

    git_repo.write_many({"a.py": PY, "b.py": "import a\n\n\nclass B:\n    def m(self):\n        return a.add(1, 2)\n",
                         "README.md": "# Title\n\nsome text\n"})
    git_repo.commit("init")
    script = (
        "import pathlib, sys\n"
        "from codeagent.indexer.build import BuildOptions, build\n"
        f"repo = pathlib.Path({str(git_repo.path)!r})\n"
        "build(BuildOptions(repo=repo, jobs=1))\n"
        "(repo / 'a.py').write_text('def add(a, b):\\n    return b + a\\n')\n"
        "assert build(BuildOptions(repo=repo, jobs=1)).files_parsed == 1\n"
        # a.py back to known content (its shard is read from Parquet, not parsed) in a tree
        # not assembled before
        f"(repo / 'a.py').write_text({PY!r})\n"
        "(repo / 'b.py').write_text('import a\\n')\n"
        "assert build(BuildOptions(repo=repo, jobs=1)).files_parsed == 1\n"
        "print(sorted(m for m in sys.modules if m.split('.')[:2] in (['pyarrow', 'compute'], ['numpy', 'ma'])))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def _assembled(store: Store) -> set[str]:
    return {p.name for p in (store.root / fmt.ASSEMBLED_DIR).iterdir()}


def test_a_build_keeps_the_ref_target_and_its_previous_assembly_only(git_repo):
    """The previous assembly is copied in a thread while the build parses (BaseCopy); after
    the swap the ref's target and the previous assembly stay (readers get a build's grace)."""
    git_repo.write_many({"a.py": PY, "b.py": "Y = 1\n"})
    ids = [_build(git_repo.path, overlay=False).manifest_id]
    store = Store(git_repo.path / ".codeagent")
    for i in range(3):
        git_repo.write("b.py", f"Y = {i + 2}\n")
        result = _build(git_repo.path, overlay=False)
        assert result.files_parsed == 1 and result.previous_manifest_id == ids[-1]
        ids.append(result.manifest_id)
        assert _assembled(store) == {ids[-1], ids[-2]}
        assert not any(store.tmp_dir.iterdir())  # the copy became the new assembly
    (shard,), = _rows(store, ids[-1], "SELECT shard FROM files WHERE path = 'b.py'")
    assert shard_texts([("b.py", shard)], store.get).column("text").to_pylist() == ["Y = 4\n"]


def test_a_touched_but_unchanged_file_leaves_no_copy_behind(git_repo):
    """A file whose stat changed is read again; when its bytes did not, the manifest is the same
    and the base copied for the assembly nobody needs is removed."""
    git_repo.write_many({"a.py": PY, "b.py": "Y = 1\n"})
    first = _build(git_repo.path)
    store = Store(git_repo.path / ".codeagent")
    before = _assembled(store)
    path = git_repo.path / "b.py"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    again = _build(git_repo.path)
    assert not again.changed and again.files_parsed == 0 and again.manifest_id == first.manifest_id
    assert _assembled(store) == before
    assert not any(store.tmp_dir.iterdir())
