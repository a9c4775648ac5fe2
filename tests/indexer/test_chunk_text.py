"""Shard chunks keep no copy of their file's text: NULL text means `source[start_byte:end_byte]`,
restored by shard.chunk_text (rows); the assembled chunks table keeps them NULL too and
readers cut them out of the resident texts (query/sourcetext.chunk_slice)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from hypothesis import strategies as st

from codeagent import format as fmt
from codeagent.errors import IndexIncompatible
from codeagent.hashing import hash_bytes
from codeagent.indexer.build import BuildOptions, build
from codeagent.indexer.extract import extract
from codeagent.indexer.maintenance import verify_store
from codeagent.indexer.replicate.remote import open_remote
from codeagent.indexer.replicate.publish import publish
from codeagent.indexer.replicate.sync import SyncOptions, sync
from codeagent.format.shard import chunk_text, decode_shard
from codeagent.indexer.shard import encode_shard
from codeagent.query.status import store_status
from codeagent.indexer.assemble.vectors import shard_items
from codeagent.format.manifest import load_manifest
from codeagent.store import Store
from codeagent.types import Chunk, Extraction, Span

GOLDEN = Path(__file__).parent / "golden"
DOCS = {
    "guide.md": "# Guide\n\nIntro \u00e9t\u00e9.\n\n## Install\n\npip install x\n\n```\n# not a heading\n```\n",
    "notes.rst": "Title\n=====\n\nText.\n\nPart\n----\n\nMore text\x0cwith a form feed.\n",
    "plain.txt": "line one\r\nline two\u2028same line?\nthree\n",
}


def _samples() -> list[tuple[str, bytes]]:
    out = [(p.parent.name.split(".")[0], p.read_bytes()) for p in sorted(GOLDEN.glob("*/sample.*"))]
    out += [({"md": "markdown", "rst": "rst", "txt": "text"}[n.rsplit(".", 1)[1]], t.encode())
            for n, t in DOCS.items()]
    return out


@pytest.mark.parametrize("language, source", _samples(), ids=[s[0] for s in _samples()])
def test_a_decoded_shard_gives_back_every_chunk_text(language: str, source: bytes) -> None:
    ex = extract(source, language)
    assert ex.chunks
    row = decode_shard(encode_shard(source, language, "b", ex))
    assert all(c["text"] is None for c in row["chunks"])  # every chunker cuts exact slices
    assert [chunk_text(c, source) for c in row["chunks"]] == [c.text for c in ex.chunks]
    free = [f"{c.heading or ''}\n{c.text}" for c in ex.chunks if c.symbol < 0]
    assert [t for k, _o, t in shard_items(row) if k == "c"] == free


def test_a_chunk_text_that_is_not_its_slice_is_kept() -> None:
    source = "# Title\n\nbody\n".encode()
    chunks = [Chunk("doc_section", Span(1, 0, 3, 4, 0, len(source)), "edited body", "Title"),
              Chunk("text", Span(3, 0, 3, 4, 9, 14), "body\n")]
    row = decode_shard(encode_shard(source, "markdown", "b", Extraction(chunks=chunks)))
    assert [c["text"] for c in row["chunks"]] == ["edited body", None]
    assert [chunk_text(c, source) for c in row["chunks"]] == ["edited body", "body\n"]


def _write(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")


def test_the_assembled_chunks_hold_every_text(git_repo) -> None:
    """Chunks come out whole from both assembly paths: shards in memory (a build) and shards
    read back from their Parquet objects (an assembly without the build's tables)."""
    files = {**DOCS, "pkg/mod.py": (GOLDEN / "python" / "sample.py").read_text(encoding="utf-8")}
    _write(git_repo.path, files)
    git_repo.commit("init")
    mid = build(BuildOptions(repo=git_repo.path, jobs=1)).manifest_id
    store = Store(git_repo.path / ".codeagent")

    def chunk_rows() -> list[tuple]:
        from codeagent.query import open_index
        from codeagent.query.sourcetext import chunk_slice

        with open_index(git_repo.path) as view:
            return [(*r, chunk_slice(view, r[0], r[2], r[3])) for r in view.sql(
                "SELECT path, ordinal, start_byte, end_byte, text IS NULL FROM chunks ORDER BY path, ordinal")]

    rows = chunk_rows()
    assert {r[0] for r in rows} == set(files)
    for path, _o, start, end, not_stored, text in rows:
        assert not_stored  # a slice of its file's text: not stored twice
        assert text == files[path].encode()[start:end].decode()
    import shutil

    shutil.rmtree(store.assembled_dir(mid))
    assert build(BuildOptions(repo=git_repo.path, jobs=1)).manifest_id == mid
    assert chunk_rows() == rows


def _as_schema_1(store: Store, ref: str) -> str:
    """Point `ref` at a copy of its manifest claiming SCHEMA_VERSION 1 (an index from before
    chunk texts were left out of shards); returns the copy's id."""
    raw = json.loads(store.get(store.read_ref(ref)))
    raw["schema_version"] = 1
    data = json.dumps(raw, sort_keys=True, separators=(",", ":")).encode()
    old = store.put(data)
    store.set_ref(ref, old)
    return old


def test_a_store_from_schema_1_is_reported_and_rebuilt(git_repo) -> None:
    assert fmt.SCHEMA_VERSION > 1
    _write(git_repo.path, {"a.py": "def f():\n    return 1\n", "b.md": "# B\n\ntext\n"})
    git_repo.commit("init")
    new_id = build(BuildOptions(repo=git_repo.path, jobs=1)).manifest_id
    store = Store(git_repo.path / ".codeagent")
    old = _as_schema_1(store, "worktree")
    with pytest.raises(IndexIncompatible, match=f"schema version 1, this codeagent reads {fmt.SCHEMA_VERSION}"):
        load_manifest(store, old)
    ref = store_status(git_repo.path)["refs"][0]
    assert ref["error"]["code"] == "index_incompatible" and "codeagent build" in ref["error"]["hint"]
    report = verify_store(store)
    assert [p.kind for p in report.problems] == ["incompatible_manifest"]
    assert "schema version 1" in report.problems[0].detail
    result = build(BuildOptions(repo=git_repo.path, jobs=1))
    assert result.previous_manifest_id == old and result.manifest_id == new_id
    assert verify_store(store).ok


def test_sync_refuses_a_published_index_of_schema_1(tmp_path: Path) -> None:
    from repo_helpers import GitRepo

    pub = GitRepo.create(tmp_path / "pub")
    _write(pub.path, {"a.py": "def f():\n    return 1\n"})
    pub.commit("init")
    build(BuildOptions(repo=pub.path, rev="main", jobs=1))
    publish(pub.path, str(tmp_path / "remote"), "main")
    pub_store = Store(pub.path / ".codeagent")
    manifest = load_manifest(pub_store, pub_store.read_ref("heads/main"))
    raw = json.loads(manifest.canonical_bytes())
    raw["schema_version"] = 1
    old = json.dumps(raw, sort_keys=True, separators=(",", ":")).encode()
    with open_remote(str(tmp_path / "remote")) as remote:
        remote.put_object(hash_bytes(old), old)
        remote.set_ref("heads/old", hash_bytes(old), manifest.commit)
    client = GitRepo.create(tmp_path / "client")
    with pytest.raises(IndexIncompatible, match="schema version 1"):
        sync(SyncOptions(repo=client.path, source=str(tmp_path / "remote"), ref="old"))
    assert not (client.path / ".codeagent" / fmt.REFS_DIR).exists() or not Store(client.path / ".codeagent").list_refs()


def test_a_built_shard_has_no_copy_of_its_chunk_texts(git_repo) -> None:
    source = (GOLDEN / "python" / "sample.py").read_text(encoding="utf-8")
    _write(git_repo.path, {"m.py": source})
    git_repo.commit("init")
    mid = build(BuildOptions(repo=git_repo.path, jobs=1)).manifest_id
    store = Store(git_repo.path / ".codeagent")
    manifest = load_manifest(store, mid)
    (entry,) = manifest.files
    row = decode_shard(store.get(entry.shard))
    assert row["schema_version"] == fmt.SCHEMA_VERSION and row["chunks"]
    assert all(c["text"] is None for c in row["chunks"])
