"""The object store contract: immutable, atomic, verified objects; refs; the build lock."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from codeagent.errors import InvalidParameter, StoreCorrupt, StoreLocked
from codeagent.hashing import hash_bytes
from codeagent.store import Store, StoreLock


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
    with pytest.raises(StoreCorrupt, match="codeagent build"):
        Store(tmp_path / "nothing")


def test_sweep_removes_leftover_temp_files(store):
    (store.tmp_dir / ".tmp-123-abc").write_bytes(b"partial")
    assert store.sweep_tmp() == 1
    assert not list(store.tmp_dir.iterdir())
