"""Semantic search, find_similar, ANN vs exact, embedder checks and hybrid fusion quality."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from codeagent.errors import IndexIncompatible, IndexMissing
from codeagent.indexer.assemble import ann
from codeagent.indexer.build import BuildOptions, build
from codeagent.query import SearchRequest, open_index, search
from codeagent.query.semantic import find_similar, semantic_search, vector_artifact

CODE = {
    "app/storage.py": (
        "import os\nimport shutil\nimport zlib\n\n\n"
        "def delete_file(path):\n    \"\"\"Unlink a path if it exists.\"\"\"\n"
        "    if os.path.exists(path):\n        os.unlink(path)\n\n\n"
        "def remove_tree(root):\n    \"\"\"Recursively delete a directory.\"\"\"\n"
        "    shutil.rmtree(root, ignore_errors=True)\n\n\n"
        "def compress_blob(data):\n    \"\"\"Deflate bytes before writing them.\"\"\"\n"
        "    return zlib.compress(data)\n"
    ),
    "app/net.py": (
        "import socket\n\n\n"
        "def open_connection(host, port):\n    \"\"\"Create a TCP socket to host:port.\"\"\"\n"
        "    return socket.create_connection((host, port))\n\n\n"
        "def send_message(sock, msg):\n    \"\"\"Transmit a message over the socket.\"\"\"\n"
        "    sock.sendall(msg.encode())\n"
    ),
    "app/copy_of_storage.py": (
        "import os\n\n\n"
        "def erase_file(filename):\n    \"\"\"Unlink a path if it exists.\"\"\"\n"
        "    if os.path.exists(filename):\n        os.unlink(filename)\n"
    ),
    "docs/README.md": "# Storage\n\nFiles are removed with delete_file.\n",
}


def _build(repo: Path, embedder: str | None = "hash") -> None:
    build(BuildOptions(repo=repo, jobs=1, embedder=embedder))


@pytest.fixture
def code_repo(git_repo):
    git_repo.write_many(CODE)
    git_repo.commit("init")
    _build(git_repo.path)
    return git_repo


def test_semantic_search_finds_a_paraphrase(code_repo):
    with open_index(code_repo.path) as view:
        hits = semantic_search(view, "erase a file from disk", limit=3).results
        assert hits[0].name in ("delete_file", "erase_file")
        assert hits[0].match == "semantic" and hits[0].symbol_id
        net = semantic_search(view, "connect to a server port", limit=1).results
        assert net[0].name == "open_connection"
        only_md = semantic_search(view, "remove files", limit=5, path="docs/**").results
        assert only_md and all(h.path == "docs/README.md" for h in only_md)
        assert only_md[0].result_type == "doc"


def test_find_similar_excludes_itself_and_finds_the_copy(code_repo):
    with open_index(code_repo.path) as view:
        hits = find_similar(view, "delete_file", limit=3).results
        assert hits[0].name == "erase_file", [h.name for h in hits]
        assert "delete_file" not in [h.name for h in hits if h.kind == "function"]
        assert hits[0].score > hits[-1].score


def test_search_modes_semantic_and_hybrid(code_repo):
    with open_index(code_repo.path) as view:
        sem = search(view, SearchRequest("transmit text over a socket", mode="semantic", limit=3))
        assert sem.results[0].name == "send_message"
        hyb = search(view, SearchRequest("transmit text over a socket", mode="hybrid", limit=3))
        assert hyb.results[0].name == "send_message"


def test_query_embedder_must_match_the_index(code_repo):
    with open_index(code_repo.path) as view:
        with pytest.raises(IndexIncompatible) as info:
            semantic_search(view, "delete", embedder="minilm")
        assert "hash-v1-d256" in str(info.value) and "minilm-v1-d384" in str(info.value)


def test_semantic_mode_without_vectors_says_how_to_build_them(git_repo):
    git_repo.write_many(CODE)
    _build(git_repo.path, embedder=None)
    with open_index(git_repo.path) as view:
        with pytest.raises(IndexMissing) as info:
            search(view, SearchRequest("delete a file", mode="semantic"))
        assert "--embedder" in str(info.value)
        auto = search(view, SearchRequest("delete a file", mode="auto"))  # falls back to lexical
        assert auto.results


def _ann_matches_exact(view) -> None:
    art = vector_artifact(view)
    assert art.ann is not None, "the threshold was lowered, so a usearch index must exist"
    for row in range(len(art)):
        q = np.asarray(art.matrix[row], dtype=np.float32)
        q /= np.linalg.norm(q)
        exact = art.exact(q, 5)
        approx = art.nearest(q, 5)
        # the top hit: the same row, or one exactly as near (a one-function file's chunk and its
        # symbol can embed identically, and either may come first)
        assert approx[0][0] == exact[0][0] or np.isclose(approx[0][1], exact[0][1], atol=1e-3)
        assert {r for r, _ in approx} == {r for r, _ in exact} or np.isclose(
            sorted(s for _, s in approx)[0], sorted(s for _, s in exact)[0], atol=1e-3)
        np.testing.assert_allclose([s for _, s in approx], [s for _, s in exact], atol=2e-3)


def test_ann_results_equal_exact_results_also_after_an_incremental_patch(git_repo, monkeypatch):
    monkeypatch.setattr(ann, "ANN_THRESHOLD", 0)
    git_repo.write_many(CODE)
    git_repo.write_many({f"gen/m{i}.py": f"def handler_{i}(event):\n    return event.kind == {i}\n"
                         for i in range(40)})
    git_repo.commit("init")
    _build(git_repo.path)
    with open_index(git_repo.path) as view:
        _ann_matches_exact(view)
        assert vector_artifact(view).meta["ann_build"] == "full"
    git_repo.write("gen/m3.py", "def handler_3(event):\n    return event.kind != 3\n")
    _build(git_repo.path)
    with open_index(git_repo.path) as view:
        art = vector_artifact(view)
        assert art.meta["ann_build"] == "patched" and art.meta["deleted"] == 1
        _ann_matches_exact(view)
        row = art.row_of("gen/m3.py", "s", 0)
        assert row is not None and art.item(row) == ("gen/m3.py", "s", 0)
        assert art.nearest(np.asarray(art.matrix[row], dtype=np.float32), 1)[0][0] == row
        hits = semantic_search(view, "handler_3 event kind", limit=1).results
        assert hits[0].name == "handler_3" and hits[0].path == "gen/m3.py"



def test_a_small_ann_index_is_byte_identical_across_builds(git_repo, tmp_path, monkeypatch):
    monkeypatch.setattr(ann, "ANN_THRESHOLD", 0)
    git_repo.write_many({f"gen/m{i}.py": f"def handler_{i}(event):\n    return event.kind == {i}\n"
                         for i in range(40)})
    git_repo.commit("init")
    files = []
    for name in ("a", "b"):
        build(BuildOptions(repo=git_repo.path, store_dir=tmp_path / name, jobs=1, embedder="hash"))
        files += list((tmp_path / name / "assembled").glob(f"*/{ann.fmt.ANN_FILE}"))
    assert len(files) == 2 and files[0].read_bytes() == files[1].read_bytes()


# A small labelled set over real code every machine has: natural-language descriptions,
# written from the documentation, of standard-library functions.
STDLIB_FILES = ("shutil", "tempfile", "glob", "fnmatch", "base64", "textwrap", "gzip", "csv",
                "heapq", "bisect", "difflib", "filecmp")
LABELLED = {
    "delete a directory tree recursively": "rmtree", "copy file permission bits": "copymode",
    "move a file or directory to another location": "move",
    "find an executable on the PATH": "which", "create a temporary directory": "mkdtemp",
    "unique temporary file name": "mkstemp", "expand wildcards in a path": "glob",
    "escape special characters in a pattern": "escape",
    "shell-style pattern match on a filename": "fnmatch", "encode bytes to base64": "b64encode",
    "decode url-safe base64": "urlsafe_b64decode", "wrap a paragraph to a fixed width": "wrap",
    "remove common leading whitespace": "dedent", "compress data with gzip": "compress",
    "open a gzip file": "open", "read rows from a comma separated file": "reader",
    "merge several sorted inputs": "merge", "n largest elements": "nlargest",
    "insert into a sorted list keeping order": "insort_right",
    "binary search for insertion point": "bisect_left",
    "similarity ratio between two sequences": "ratio", "unified diff of two files": "unified_diff",
    "close matches for a word": "get_close_matches", "compare two directories": "dircmp",
    "compare two files": "cmp", "disk usage statistics": "disk_usage",
    "register an archive format": "register_archive_format",
    "unpack an archive file": "unpack_archive",
}


def _mrr(view, mode: str) -> float:
    total = 0.0
    for query, want in LABELLED.items():
        names = [h.name for h in search(view, SearchRequest(query, mode=mode, limit=10)).results]
        total += 1.0 / (names.index(want) + 1) if want in names else 0.0
    return total / len(LABELLED)


def test_hybrid_beats_bm25_and_vectors_alone_on_a_labelled_set(git_repo):
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in STDLIB_FILES:
        shutil.copyfile(stdlib / f"{name}.py", git_repo.path / f"{name}.py")
    git_repo.commit("stdlib subset")
    _build(git_repo.path)
    with open_index(git_repo.path) as view:
        scores = {mode: _mrr(view, mode) for mode in ("text", "semantic", "hybrid")}
    assert scores["hybrid"] > max(scores["text"], scores["semantic"]), scores


def test_cli_similar_and_search_semantic_weight(code_repo, cli):
    out = cli("similar", "delete_file", "--limit", "2", "--json", cwd=code_repo.path, check=True)
    import json

    names = [r["name"] for r in json.loads(out.stdout)["results"]]
    assert names[0] == "erase_file"
    lexical = cli("search", "erase a file", "--mode", "hybrid", "--semantic-weight", "0",
                  "--json", cwd=code_repo.path, check=True)
    assert json.loads(lexical.stdout)["results"]
    bad = cli("search", "x", "--semantic-weight", "2", cwd=code_repo.path)
    assert bad.returncode == 2 and "semantic-weight" in bad.stderr


def test_moving_a_file_reuses_the_ann_index_and_keeps_results_exact(git_repo, monkeypatch):
    monkeypatch.setattr(ann, "ANN_THRESHOLD", 0)
    git_repo.write_many(CODE)
    git_repo.commit("init")
    _build(git_repo.path)
    git_repo.move("app/net.py", "lib/network.py")
    _build(git_repo.path)
    with open_index(git_repo.path) as view:
        art = vector_artifact(view)
        assert art.meta["ann_build"] == "reused" and art.meta["deleted"] == 0
        _ann_matches_exact(view)
        hits = semantic_search(view, "connect to a server port", limit=1).results
        assert (hits[0].name, hits[0].path) == ("open_connection", "lib/network.py")


def test_a_chunk_hit_s_snippet_is_cut_from_the_resident_texts(code_repo):
    """A chunk whose text the assembly keeps NULL (a slice of its file) shows the first 200
    characters of that slice, read from the resident texts (the assembly keeps no other copy
    of the files' texts), or from the file's shard when the texts' array is damaged."""
    from codeagent.format import resident
    from codeagent.query.assembly_check import _verified

    code_repo.write_many({"docs/long.md": "# Héllo wörld\n\n" + "Ünïcode sentences about storage. " * 20 + "\n"})
    code_repo.commit("long doc")
    _build(code_repo.path)
    for damaged in (False, True):
        for long_lived in (False, True):
            with open_index(code_repo.path) as view:
                view.keep_text_in_memory = long_lived
                hits = [h for h in semantic_search(view, "storage files unicode", limit=20).results
                        if h.result_type != "symbol"]
                assert {h.path for h in hits} >= {"docs/README.md", "docs/long.md"}
                for h in hits:
                    path, ordinal = h.result_id.split("#c")
                    (start, end, stored), = view.sql("SELECT start_byte, end_byte, text IS NOT NULL FROM chunks "
                                                     "WHERE path = ? AND ordinal = ?", [path, int(ordinal)])
                    want = (code_repo.path / path).read_bytes()[start:end].decode()[:200]
                    assert h.snippet == want.strip() and not stored
                assert max(len(h.snippet) for h in hits) == 200
                blocks = view.path.parent / resident.file_name("texts", "blocks")
        if not damaged:
            blocks.write_bytes(blocks.read_bytes()[:-100])
            _verified.clear()  # checked by this process while intact
