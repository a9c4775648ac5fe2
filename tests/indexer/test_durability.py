"""The ref swap is the commit point: everything the new ref names is on disk before it, and a
build flushes only what it wrote (never the whole machine with os.sync)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeagent import format as fmt
from codeagent.indexer.build import BuildOptions, build
from codeagent.format.manifest import load_manifest
from codeagent.store import Store


@pytest.fixture
def fsyncs(monkeypatch) -> list[str]:
    """Paths passed to os.fsync, in order; os.sync fails the test."""
    seen: list[str] = []
    real = os.fsync

    def record(fd: int) -> None:
        seen.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    def forbidden() -> None:
        raise AssertionError("os.sync flushes every file system of the machine")

    monkeypatch.setattr(os, "fsync", record)
    monkeypatch.setattr(os, "sync", forbidden)
    return seen


def _needed(store: Store, manifest_id: str) -> set[str]:
    """Every file the ref's index is made of: manifest, shards, assembled files."""
    paths = {str(store.object_path(o)) for o in load_manifest(store, manifest_id).referenced_objects()}
    paths.add(str(store.object_path(manifest_id)))
    assembled = store.assembled_dir(manifest_id)
    paths.update(str(p) for p in assembled.iterdir() if p.is_file())
    return paths


def _before_swap(seen: list[str], store: Store, ref: str) -> set[str]:
    """What was flushed before the ref file (written to a temp name, fsynced, renamed, then
    its directory fsynced: the temp file's fsync just before that is the swap)."""
    ref_dir = str((store.root / fmt.REFS_DIR / ref).parent)
    swap = next(i for i, p in enumerate(seen) if p == ref_dir) - 1
    assert "/tmp/.tmp-" in seen[swap], seen[swap - 2:swap + 1]
    return set(seen[:swap])


def test_the_ref_swap_comes_after_every_file_it_names_is_flushed(git_repo, fsyncs):
    git_repo.write_many({f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(80)})
    git_repo.commit("init")
    first = build(BuildOptions(git_repo.path, rev="main", jobs=1))
    store = Store(git_repo.path / ".codeagent")
    missing = _needed(store, first.manifest_id) - _before_swap(fsyncs, store, "heads/main")
    assert not missing, f"not flushed before the ref swap: {sorted(missing)[:5]}"
    dirs = {str(store.root / fmt.OBJECTS_DIR), str(store.assembled_dir(first.manifest_id))}
    assert dirs <= set(fsyncs), "new directory entries must be flushed too"

    fsyncs.clear()
    git_repo.write("pkg/m3.py", "def f3():\n    return 'changed'\n")
    git_repo.commit("edit")
    second = build(BuildOptions(git_repo.path, rev="main", jobs=1))
    flushed = set(fsyncs)
    old_shards = {str(store.object_path(o)) for o in load_manifest(store, first.manifest_id).shard_ids()}
    new_shards = {str(store.object_path(o)) for o in load_manifest(store, second.manifest_id).shard_ids()}
    assert new_shards - old_shards and (new_shards - old_shards) <= flushed
    assert not (old_shards & new_shards) & flushed, "files an earlier build wrote are not flushed again"
    new = _needed(store, second.manifest_id) - _needed(store, first.manifest_id)
    assert new and not new - _before_swap(fsyncs, store, "heads/main")


def test_no_os_sync_in_the_product():
    """A grep of the checkout for the whole-machine sync call finds nothing (the call is spelled
    in two parts here, so this test is not its own hit)."""
    root = Path(__file__).resolve().parents[2]
    call = "os." + "sync()"
    offenders = [str(p.relative_to(root)) for folder in ("src", "indexer", "query", "mcp_server", "eval", "bench", "tests")
                 for p in (root / folder).rglob("*.py") if call in p.read_text(encoding="utf-8")]
    assert offenders == []
