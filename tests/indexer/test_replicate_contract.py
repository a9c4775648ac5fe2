"""One contract, every remote backend (restic style): what a writer puts, a reader gets.

Writable backends (directory, file:// URL, pyarrow filesystem, tar bundle) are written and
read back after reopening; the read-only http backend reads what a directory remote holds,
served by a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeagent.errors import InvalidParameter, RemoteError
from codeagent.hashing import hash_bytes
from codeagent.indexer.replicate.remote import Remote, open_remote
from codeagent.indexer.replicate.arrow import ArrowBackend
from remote_server import serve

Pair = tuple[Callable[[], Remote], Callable[[], Remote]]  # (open writer, open reader)


def _arrow(path: Path) -> Remote:
    from pyarrow import fs as pafs

    path.mkdir(exist_ok=True)
    return Remote(ArrowBackend(pafs.SubTreeFileSystem(str(path), pafs.LocalFileSystem()),
                               label=f"subtree:{path}"))


def _arrow_uri(path: Path) -> Remote:
    path.mkdir(exist_ok=True)
    return Remote(ArrowBackend.from_uri(path.as_uri()))  # what s3:// and gs:// go through


@pytest.fixture(params=["directory", "file_url", "pyarrow", "pyarrow_uri", "bundle", "http"])
def backend(request, tmp_path: Path) -> Iterator[Pair]:
    kind = request.param
    with ExitStack() as stack:
        if kind == "directory":
            pair = (lambda: open_remote(str(tmp_path / "r"), create=True),
                    lambda: open_remote(str(tmp_path / "r")))
        elif kind == "file_url":
            url = (tmp_path / "r").as_uri()
            pair = (lambda: open_remote(url, create=True), lambda: open_remote(url))
        elif kind == "pyarrow":
            pair = (lambda: _arrow(tmp_path / "r"), lambda: _arrow(tmp_path / "r"))
        elif kind == "pyarrow_uri":
            pair = (lambda: _arrow_uri(tmp_path / "r"), lambda: _arrow_uri(tmp_path / "r"))
        elif kind == "bundle":
            pair = (lambda: open_remote(str(tmp_path / "r.tar"), create=True),
                    lambda: open_remote(str(tmp_path / "r.tar")))
        else:
            url, _ = stack.enter_context(serve(tmp_path / "r"))
            pair = (lambda: open_remote(str(tmp_path / "r"), create=True), lambda: open_remote(url))
        yield pair


def _written(backend: Pair, fn: Callable[[Remote], None]) -> Remote:
    with backend[0]() as w:
        w.init()
        fn(w)
    return backend[1]()


def test_empty_remote_has_nothing(backend: Pair) -> None:
    with _written(backend, lambda w: None) as r:
        oid = hash_bytes(b"absent")
        assert r.is_remote()
        assert r.list_refs() == {}
        assert r.read_ref("heads/main") is None
        assert r.read_commit("a" * 40) is None
        assert not r.has_object(oid)
        assert r.get_object(oid) is None
        assert r.read_chunk_list(oid) is None


def test_objects_round_trip(backend: Pair) -> None:
    blobs = [b"", b"x", bytes(range(256)) * 64]
    with _written(backend, lambda w: [w.put_object(hash_bytes(b), b) for b in blobs + blobs]) as r:
        for b in blobs:
            assert r.has_object(hash_bytes(b))
            assert r.get_object(hash_bytes(b)) == b


def test_refs_commits_and_chunk_lists_round_trip(backend: Pair) -> None:
    m1, m2 = hash_bytes(b"m1"), hash_bytes(b"m2")

    def write(w: Remote) -> None:
        w.put_object(m1, b"m1")
        w.put_object(m2, b"m2")
        w.set_ref("heads/main", m1, "c" * 40)
        w.set_ref("heads/feature/x", m1, None)
        w.set_ref("heads/main", m2, "d" * 40)
        w.set_commit("d" * 40, m2)
        w.put_chunk_list(m2, b'{"chunks": []}')

    with _written(backend, write) as r:
        assert r.list_refs() == {"heads/feature/x": m1, "heads/main": m2}
        assert r.read_ref("heads/main") == m2
        assert r.read_commit("d" * 40) == m2
        assert r.refs_index()["heads/main"] == {"manifest": m2, "commit": "d" * 40}
        assert r.read_chunk_list(m2) == b'{"chunks": []}'


def test_refs_listing_keeps_a_ref_another_publisher_set(backend: Pair) -> None:
    """Publisher B set refs/heads/b after publisher A read refs.json: A's rewrite of the
    listing must still name B's ref (the listing is rebuilt from the refs/ files)."""
    m1, m2 = hash_bytes(b"m1"), hash_bytes(b"m2")

    def write(w: Remote) -> None:
        w.put_object(m1, b"m1")
        w.put_object(m2, b"m2")
        w.set_ref("heads/main", m1, "c" * 40)
        w.backend.write("refs/heads/b", f"{m2}\n".encode())
        w.set_ref("heads/main", m2, "d" * 40)

    with _written(backend, write) as r:
        assert r.refs_index() == {"heads/b": {"manifest": m2, "commit": None},
                                  "heads/main": {"manifest": m2, "commit": "d" * 40}}


@pytest.mark.parametrize("name", ["", "../x", "heads/../../etc", "heads//x", "heads/.tmp-1"])
def test_unsafe_names_are_refused(backend: Pair, name: str) -> None:
    with _written(backend, lambda w: None) as r:
        with pytest.raises(InvalidParameter):
            r.read_ref(name)


def test_writes_succeed_or_are_refused_as_read_only(backend: Pair, request) -> None:
    read_only = request.node.callspec.params["backend"] == "http"
    with _written(backend, lambda w: None) as r:
        assert r.writable is not read_only
        if not read_only:
            r.put_object(hash_bytes(b"x"), b"x")
            assert r.get_object(hash_bytes(b"x")) == b"x"
            return
        with pytest.raises(RemoteError, match="read-only"):
            r.put_object(hash_bytes(b"x"), b"x")
        with pytest.raises(RemoteError, match="read-only"):
            r.set_ref("heads/main", hash_bytes(b"x"), None)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=2000), max_size=8))
def test_any_bytes_come_back_identical(backend: Pair, blobs: list[bytes]) -> None:
    with _written(backend, lambda w: [w.put_object(hash_bytes(b), b) for b in blobs]) as r:
        for b in blobs:
            assert r.get_object(hash_bytes(b)) == b


def test_missing_remote_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RemoteError, match="no remote"):
        open_remote(str(tmp_path / "nowhere"))
    with pytest.raises(RemoteError, match="no bundle"):
        open_remote(str(tmp_path / "nowhere.tar"))
    (tmp_path / "plain").mkdir()
    with open_remote(str(tmp_path / "plain")) as r, pytest.raises(RemoteError, match="not a codeagent remote"):
        r.require_remote()
