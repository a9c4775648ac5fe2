"""The object store contract: immutable, atomic, verified objects; refs; the build lock."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from codeagent import format as fmt
from codeagent.store import actions as store_mod
from codeagent.errors import IndexMissing, InvalidParameter, StoreCorrupt, StoreLocked, StoreWriteFailed
from codeagent.hashing import hash_bytes
from codeagent.store import Store, StoreLock, faults, write_assembly_sums


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "store", create=True)


@given(st.binary(max_size=4096))
@settings(max_examples=30, deadline=None)
def test_put_get_roundtrip(tmp_path_factory, data):
    store = Store(tmp_path_factory.mktemp("s"), create=True)
    oid = store.put(data)
    assert oid == hash_bytes(data)
    assert store.get(oid) == data
    assert store.put(data) == oid  # idempotent
    assert list(store.iter_objects()) == [oid]
    assert not list(store.tmp_dir.iterdir())


def test_existing_object_is_never_rewritten(store):
    oid = store.put(b"hello")
    path = store.object_path(oid)
    before = path.stat().st_mtime_ns, path.stat().st_ino
    store.put(b"hello")
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == before


def test_get_detects_corruption_and_missing(store):
    oid = store.put(b"payload")
    store.object_path(oid).write_bytes(b"paylaod")
    with pytest.raises(StoreCorrupt, match="corrupt"):
        store.get(oid)
    store.object_path(oid).unlink()
    with pytest.raises(StoreCorrupt, match="missing"):
        store.get(oid)


def test_put_verified_refuses_a_mismatch(store):
    with pytest.raises(StoreCorrupt):
        store.put_verified(hash_bytes(b"a"), b"b")
    assert list(store.iter_objects()) == []


def test_refs_swap_and_refuse_absent_manifests(store):
    a = store.put(b"manifest a")
    b = store.put(b"manifest b")
    store.set_ref("heads/main", a)
    assert store.read_ref("heads/main") == a
    store.set_ref("heads/main", b)
    assert store.list_refs() == {"heads/main": b}
    with pytest.raises(StoreCorrupt, match="absent"):
        store.set_ref("heads/main", "0" * 64)
    assert store.read_ref("heads/main") == b


@pytest.mark.parametrize("bad", ["", "../x", "heads/../../x", "heads//x", "a/./b"])
def test_ref_names_cannot_escape(store, bad):
    with pytest.raises(InvalidParameter):
        store.read_ref(bad)


def test_lock_is_exclusive_with_a_clear_message(store):
    with StoreLock(store):
        with pytest.raises(StoreLocked, match=f"pid {os.getpid()}"):
            with StoreLock(store):
                pass
    with StoreLock(store):
        pass


def test_opening_a_missing_store_says_what_to_do(tmp_path):
    """No store yet is no index (exit 5), not a corrupt one (issue 45, item 8)."""
    with pytest.raises(IndexMissing, match="codeagent build"):
        Store(tmp_path / "nothing")
    (tmp_path / "other").mkdir()
    with pytest.raises(StoreCorrupt, match="not a codeagent store"):
        Store(tmp_path / "other")
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(StoreCorrupt, match="not a codeagent store"):
        Store(tmp_path / "other")


def test_a_store_whose_creation_stopped_before_its_marker_is_no_index_yet(tmp_path):
    """A Ctrl-C at the first step of a store's creation leaves its empty folders and no marker:
    that is no index (exit 5), and the next build makes the store."""
    for sub in Store.LAYOUT:
        (tmp_path / "s" / sub).mkdir(parents=True)
    (tmp_path / "s" / "tmp" / ".tmp-marker").write_text("half")
    with pytest.raises(IndexMissing, match="codeagent build"):
        Store(tmp_path / "s")
    Store(tmp_path / "s", create=True)
    assert Store(tmp_path / "s").root == tmp_path / "s"
    (tmp_path / "s" / "objects" / "x").write_text("a store's object")
    (tmp_path / "s" / "STORE").unlink()
    with pytest.raises(StoreCorrupt, match="not a codeagent store"):
        Store(tmp_path / "s")


def test_sweep_removes_leftover_temp_files(store):
    (store.tmp_dir / ".tmp-123-abc").write_bytes(b"partial")
    assert store.sweep_tmp() == 1
    assert not list(store.tmp_dir.iterdir())


def test_a_ctrl_c_inside_an_atomic_write_leaves_no_temp_file(store):
    """A Ctrl-C landing between the temp file's write and its rename (store.faults' step hook
    sends the real SIGINT there) interrupts the write and removes its temp file."""
    # A child of a background job starts with SIGINT ignored: it installs Python's handler itself.
    script = ("import signal, sys; from codeagent.store import Store, faults\n"
              "faults.install(faults.Faults(kill_at=1, kill_signal='INT'))\n"
              "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
              "try:\n    Store(sys.argv[1]).put(b'object')\nexcept KeyboardInterrupt:\n    print('interrupted')\n")
    proc = subprocess.run([sys.executable, "-c", script, str(store.root)], capture_output=True,
                          text=True, timeout=60)
    assert proc.stdout.strip() == "interrupted", proc.stderr
    assert not list(store.tmp_dir.iterdir())
    assert not store.has(hash_bytes(b"object"))



def test_a_fault_a_test_sets_on_the_store_fails_its_writes(store, tmp_path):
    """The seam in-process (store.faults.install): from the second write on, writes fail as a
    full disk would and leave nothing behind; the default seam, put back, fails nothing."""
    steps = tmp_path / "steps.log"
    previous = faults.install(faults.Faults(fault="ENOSPC@2", steps_log=str(steps)))
    try:
        first = store.put(b"first")
        with pytest.raises(StoreWriteFailed, match="No space left"):
            store.put(b"refused")
    finally:
        faults.install(previous)
    assert store.has(first) and not store.has(hash_bytes(b"refused"))
    assert not list(store.tmp_dir.iterdir())
    assert steps.read_text().splitlines() == [f"write {first}"]
    assert store.has(store.put(b"accepted"))


def test_the_process_edge_reads_the_test_variables_once():
    """`from_environment` (called by the CLI's entry) turns CODEAGENT_TEST_* into the seam, and
    drops a seam it installed when the next command's environment has none; no product module
    other than store/faults.py reads those variables."""
    previous = faults.install(faults.NONE)
    try:
        faults.from_environment({"CODEAGENT_TEST_KILL_AT": "3", "CODEAGENT_TEST_KILL_SIGNAL": "INT",
                                 "CODEAGENT_TEST_NONATOMIC": "1", "CODEAGENT_TEST_OVERLAY_MAX_BYTES": "100000"})
        assert faults.nonatomic() and faults.overlay_max_bytes(4 << 20) == 100000
        faults.from_environment({})
        assert not faults.nonatomic() and faults.overlay_max_bytes(4 << 20) == 4 << 20
        mine = faults.Faults(nonatomic=True)
        faults.install(mine)
        faults.from_environment({})  # a seam a test installed in-process stays
        assert faults.nonatomic()
    finally:
        faults.install(previous)
    root = Path(__file__).resolve().parents[2]
    readers = sorted(str(p.relative_to(root)) for folder in ("src", "indexer", "query", "mcp_server", "eval")
                     for p in (root / folder).rglob("*.py") if "CODEAGENT_TEST_" in p.read_text(encoding="utf-8"))
    assert readers == ["src/codeagent/cli/__init__.py", "src/codeagent/store/faults.py"], readers


def _packs(store: Store) -> list[Path]:
    return sorted((store.root / fmt.ACTIONS_DIR / fmt.ACTION_PACKS_DIR).glob("*"))


def test_action_cache_round_trip_and_reopen(store):
    oid = store.put(b"shard")
    store.put_action("k" * 64, oid)
    store.put_action("s" * 64, "skip:binary")
    assert store.get_action("k" * 64) == oid and store.get_action("nope") is None
    again = Store(store.root)
    assert again.get_action("k" * 64) == oid and again.get_action("s" * 64) == "skip:binary"
    assert dict(again.iter_actions()) == {"k" * 64: oid, "s" * 64: "skip:binary"}
    store.delete_object(oid)
    assert Store(store.root).get_action("k" * 64) is None  # names an absent object


def test_batched_actions_write_packs_of_many_entries(store, monkeypatch):
    monkeypatch.setattr(store_mod, "ACTION_PACK_ENTRIES", 3)
    oids = [store.put(bytes([i])) for i in range(7)]
    with store.batched_actions():
        store.put_action("a" * 64, oids[0])
        assert store.get_action("a" * 64) == oids[0] and not _packs(store)
        for i in range(1, 7):
            store.put_action(f"{i:064x}", oids[i])
        assert len(_packs(store)) == 2  # every 3 entries
    assert len(_packs(store)) == 3
    again = Store(store.root)
    assert again.get_action("a" * 64) == oids[0]
    assert all(again.get_action(f"{i:064x}") == oids[i] for i in range(1, 7))


def test_an_interrupted_batch_keeps_its_entries(store):
    oid = store.put(b"x")
    with pytest.raises(KeyError):
        with store.batched_actions():
            store.put_action("a" * 64, oid)
            raise KeyError("boom")
    assert Store(store.root).get_action("a" * 64) == oid


def test_packs_are_merged_past_the_limit(store, monkeypatch):
    monkeypatch.setattr(store_mod, "ACTION_PACKS_MAX", 4)
    oids = [store.put(bytes([i])) for i in range(10)]
    for i, oid in enumerate(oids):
        store.put_action(f"{i:064x}", oid)
        assert len(_packs(store)) <= 4
    again = Store(store.root)
    assert dict(again.iter_actions()) == {f"{i:064x}": oid for i, oid in enumerate(oids)}
    again.delete_actions([f"{i:064x}" for i in range(5)])
    assert len(_packs(again)) == 1
    assert dict(Store(store.root).iter_actions()) == {f"{i:064x}": oids[i] for i in range(5, 10)}


def test_small_packs_merge_without_rewriting_the_first(store, monkeypatch):
    """A run of one-file builds after a first build: their packs merge into one, and the first
    build's pack (most of the entries) is not written again."""
    monkeypatch.setattr(store_mod, "ACTION_PACKS_MAX", 4)
    oid = store.put(b"shard")
    with store.batched_actions():
        for i in range(100):
            store.put_action(f"{i:064x}", oid)
    first = _packs(store)[0]
    written = first.stat().st_mtime_ns
    for i in range(20):
        Store(store.root).put_action(f"{1000 + i:064x}", oid)
        assert len(_packs(store)) <= 4 and _packs(store)[0] == first
    assert first.stat().st_mtime_ns == written
    assert dict(Store(store.root).iter_actions()) == {f"{i:064x}": oid for i in [*range(100), *range(1000, 1020)]}


@given(puts=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 2), st.booleans()), max_size=60))
@settings(max_examples=40, deadline=None)
def test_packs_read_back_the_last_value_of_every_key(tmp_path_factory, puts):
    """Whatever merges ran (of the packs after the first, or of all), a reopened cache holds each
    key's last value."""
    root = tmp_path_factory.mktemp("store")
    store = Store(root, create=True)
    values = [store.put(bytes([i])) for i in range(3)]
    want = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(store_mod, "ACTION_PACKS_MAX", 3)
        for key, value, reopen in puts:
            if reopen:
                store = Store(root)
            store.put_action(f"{key:064x}", values[value])
            want[f"{key:064x}"] = values[value]
            assert len(_packs(store)) <= 3
    assert dict(Store(root).iter_actions()) == want


def test_actions_of_the_one_file_per_entry_layout_are_still_read(store):
    oid = store.put(b"old")
    key = "ab" + "c" * 62
    legacy = store.root / fmt.ACTIONS_DIR / key[:2] / key
    legacy.parent.mkdir(parents=True)
    legacy.write_text(oid)
    store.put_action("d" * 64, "skip:binary")
    again = Store(store.root)
    assert again.get_action(key) == oid
    assert dict(again.iter_actions()) == {key: oid, "d" * 64: "skip:binary"}
    again.delete_action(key)
    assert not legacy.exists() and Store(store.root).get_action(key) is None


def test_a_forked_child_writes_its_actions_at_once(store):
    oid = store.put(b"from the child")
    with store.batched_actions():
        store.get_action("x")
        pid = os.fork()
        if pid == 0:
            try:
                store.put_action("c" * 64, oid)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
    assert Store(store.root).get_action("c" * 64) == oid


def _stamped_assembly(store) -> tuple[str, Path]:
    """A manifest's assembled directory holding one database file, written long enough
    before its sums (past the stamp's ctime margin) for the build to stamp it."""
    mid = store.put(b"a stamped manifest")
    directory = store.assembled_dir(mid)
    directory.mkdir(parents=True)
    db = directory / fmt.DUCKDB_FILE
    db.write_bytes(b"x" * 1000)
    time.sleep(0.15)
    write_assembly_sums(directory)
    return mid, db


def _stamps(directory: Path) -> dict:
    return json.loads((directory / fmt.ASSEMBLY_STAMPS).read_text())


def _forge_stamp(db: Path, **change: int) -> None:
    """Stamp `db` as it is now (as a reader that hashed it would), with `change` applied."""
    st = db.stat()
    fields = {"dev": st.st_dev, "ino": st.st_ino, "size": st.st_size,
              "mtime": st.st_mtime_ns, "ctime": st.st_ctime_ns, **change}
    digest = json.loads((db.parent / fmt.ASSEMBLY_SUMS).read_text())[db.name][1]
    (db.parent / fmt.ASSEMBLY_STAMPS).write_text(json.dumps({db.name: [*fields.values(), digest]}))


def test_a_write_under_a_stamp_is_still_caught(store):
    mid, db = _stamped_assembly(store)
    assert db.name in _stamps(db.parent)  # the build stamped what it hashed
    assert store.assembly_problems(mid, stamped=True) == []
    st = db.stat()
    with open(db, "r+b") as fh:  # one byte flipped in place: same size, mtime put back
        fh.seek(10)
        fh.write(b"y")
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert store.assembly_problems(mid, stamped=True) != []  # the ctime moved
    _forge_stamp(db)  # a stamp of the damaged file as it is: trusted, not re-hashed...
    assert store.assembly_problems(mid, stamped=True) == []
    assert store.assembly_problems(mid) != []  # ...except by verify, which always hashes


@pytest.mark.parametrize("field", ["dev", "ino", "size", "mtime", "ctime"])
def test_a_stamp_of_another_file_is_not_trusted(store, field):
    mid, db = _stamped_assembly(store)
    db.write_bytes(b"z" * 1000)
    _forge_stamp(db, **{field: getattr(db.stat(), f"st_{field}_ns" if field.endswith("time") else f"st_{field}") + 1})
    assert store.assembly_problems(mid, stamped=True) != []


def test_a_reader_stamps_only_a_settled_file(store):
    mid = store.put(b"a fresh manifest")
    directory = store.assembled_dir(mid)
    directory.mkdir(parents=True)
    (directory / fmt.DUCKDB_FILE).write_bytes(b"x" * 1000)
    write_assembly_sums(directory)  # hashed right after the write: too recent to stamp
    assert not (directory / fmt.ASSEMBLY_STAMPS).exists()
    assert store.assembly_problems(mid, stamped=True) == []
    time.sleep(0.15)
    assert store.assembly_problems(mid) == [] and not (directory / fmt.ASSEMBLY_STAMPS).exists()
    assert store.assembly_problems(mid, stamped=True) == []  # a reader's check stamps it
    assert list(_stamps(directory)) == [fmt.DUCKDB_FILE]


def test_a_stamp_that_cannot_be_written_costs_only_a_hash(store):
    mid = store.put(b"a read-only manifest")
    directory = store.assembled_dir(mid)
    directory.mkdir(parents=True)
    (directory / fmt.DUCKDB_FILE).write_bytes(b"x" * 1000)
    write_assembly_sums(directory)
    time.sleep(0.15)
    shutil.rmtree(store.tmp_dir)  # where the stamp's temp file goes
    assert store.assembly_problems(mid, stamped=True) == []
    assert not (directory / fmt.ASSEMBLY_STAMPS).exists()


def test_assembly_sums_trusted_by_mtime_only_when_asked(store):
    from codeagent.store import write_assembly_sums

    mid = store.put(b"a manifest")
    directory = store.assembled_dir(mid)
    directory.mkdir(parents=True)
    db = directory / fmt.DUCKDB_FILE
    db.write_bytes(b"x" * 1000)
    write_assembly_sums(directory)
    assert store.assembly_problems(mid) == [] == store.assembly_problems(mid, trust_mtime=True)
    st = db.stat()
    db.write_bytes(b"y" * 1000)  # same size; bit rot keeps the mtime
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert store.assembly_problems(mid, trust_mtime=True) == []
    assert store.assembly_problems(mid) != []
    db.write_bytes(b"z" * 1000)  # a rewrite moves the mtime
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert store.assembly_problems(mid, trust_mtime=True) != []
    sums = directory / fmt.ASSEMBLY_SUMS  # SUMS from before mtimes were recorded
    sums.write_text(json.dumps({fmt.DUCKDB_FILE: [1000, hash_bytes(b"z" * 1000)]}))
    assert store.assembly_problems(mid, trust_mtime=True) == [] == store.assembly_problems(mid)
    db.write_bytes(b"w" * 1000)
    assert store.assembly_problems(mid, trust_mtime=True) != []
