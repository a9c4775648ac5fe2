"""A shard's BM25 postings, computed with one scan of the file's words.

Every document of a file (a symbol: its name, qualified name, signature, doc and own body
without its children's spans; a chunk: its heading and text) is, apart from a few short
strings, a set of byte ranges of the source. The source is scanned for words once; a
document's term counts are then its ranges' words, counted and expanded into tokens with
numpy. The result equals tokenising each document's text with `tokenize.term_counts` (the
words are ASCII, so the bytes and the decoded text have the same words, and a range that
cuts no word has the words of the whole scan inside it); a document whose range would cut a
word, or whose text is not a source slice, is scanned from its own text instead.
"""

from __future__ import annotations

from itertools import chain

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..tokenize import word_tokens
from ..types import NO_PARENT, Extraction, Span, Symbol

_KINDS = pa.array(["s", "c"], pa.string())


def body_pieces(symbols: list[Symbol]) -> list[list[tuple[int, int]]]:
    """Each symbol's own body as byte ranges: its span with its child symbols' spans cut out
    (children defined elsewhere, like Go receivers or C++ `A::f`, cut nothing)."""
    children: dict[int, list[Span]] = {}
    for s in symbols:
        if s.parent != NO_PARENT:
            children.setdefault(s.parent, []).append(s.span)
    out = []
    for i, sym in enumerate(symbols):
        start, end = sym.span.start_byte, sym.span.end_byte
        pieces, pos = [], start
        for c in sorted(children.get(i, ()), key=lambda c: (c.start_byte, c.end_byte)):
            if c.start_byte < start or c.end_byte > end or c.end_byte <= pos:
                continue
            if c.start_byte > pos:
                pieces.append((pos, c.start_byte))
            pos = c.end_byte
        pieces.append((pos, end))
        out.append(pieces)
    return out


def _scan(data: bytes) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """Start and end offsets of the matches of tokenize's word pattern in `data`, in order,
    and the matched words as a binary array (built from the bytes without a Python object
    per word). A run of word characters is one match, or two when it opens with digits and
    goes on with a letter; every word character is in exactly one match."""
    if not data:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), pa.array([], pa.binary())
    b = np.frombuffer(data, np.uint8)
    low = b | 32
    alpha = ((low >= 97) & (low <= 122)) | (b == 95)
    digit = (b >= 48) & (b <= 57)
    word = alpha | digit
    prev_word = np.concatenate(([False], word[:-1]))
    next_word = np.concatenate((word[1:], [False]))
    # a letter right after the digits that open a run starts a second match (rare: 0x1F, 2to3)
    second = [c for c in (np.flatnonzero(alpha[1:] & digit[:-1]) + 1).tolist() if _opens_run(data, c)]
    starts = np.flatnonzero(word & ~prev_word)
    ends = np.flatnonzero(word & ~next_word) + 1
    if second:
        starts = np.sort(np.concatenate((starts, second)))
        ends = np.sort(np.concatenate((ends, second)))
    offsets = np.concatenate(([0], np.cumsum(ends - starts))).astype(np.int32)
    words = pa.Array.from_buffers(pa.binary(), len(starts), [
        None, pa.py_buffer(offsets), pa.py_buffer(b[word].tobytes())])
    return starts, ends, words


def _opens_run(data: bytes, pos: int) -> bool:
    """Are the bytes before `pos` digits back to the start of their run of word characters?"""
    j = pos - 1
    while j >= 0 and 48 <= data[j] <= 57:
        j -= 1
    if j < 0:
        return True
    c = data[j] | 32
    return not (97 <= c <= 122 or data[j] == 95)


def _cuts_word(starts: np.ndarray, ends: np.ndarray, at: np.ndarray) -> np.ndarray:
    """For each offset in `at`: does it fall strictly inside a match?"""
    i = np.searchsorted(starts, at, "right") - 1
    ok = i >= 0
    j = np.maximum(i, 0)
    return ok & (starts[j] < at) & (at < ends[j]) if len(starts) else np.zeros(len(at), bool)


def _documents(extraction: Extraction, source: bytes) -> tuple[list[tuple[int, int, int]], list[tuple[int, str]]]:
    """(doc, start, end) source ranges and (doc, text) strings of the file's documents;
    symbols are docs 0..S-1, chunks S.. in order."""
    ranges: list[tuple[int, int, int]] = []
    texts: list[tuple[int, str]] = []
    for i, (sym, pieces) in enumerate(zip(extraction.symbols, body_pieces(extraction.symbols))):
        texts.append((i, "\n".join((sym.name, sym.qualified_name, sym.signature, sym.doc))))
        ranges.extend((i, a, b) for a, b in pieces)
    base = len(extraction.symbols)
    for i, c in enumerate(extraction.chunks, base):
        if c.heading:
            texts.append((i, c.heading))
        a, b = c.span.start_byte, c.span.end_byte
        if 0 <= a <= b <= len(source) and source[a:b] == c.text.encode("utf-8", "surrogatepass"):
            ranges.append((i, a, b))
        else:
            texts.append((i, c.text))
    return ranges, texts


def _expand(first: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Concatenated aranges first[k] .. first[k] + length[k]."""
    total = int(length.sum())
    offsets = np.cumsum(length) - length
    return np.repeat(first - offsets, length) + np.arange(total)


def _doc_words(extraction: Extraction, source: bytes) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """(doc, match index) of every word occurrence of every document, and the words."""
    ranges, texts = _documents(extraction, source)
    r = np.array(ranges, np.int64).reshape(-1, 3)
    while True:
        blocks = [t.encode("utf-8", "surrogatepass") for _, t in texts]
        # the strings follow the source, each after a newline, so no word spans two of them
        starts, ends, words = _scan(b"\n".join([source, *blocks]))
        cut = _cuts_word(starts, ends, r[:, 1]) | _cuts_word(starts, ends, r[:, 2])
        if not cut.any():
            break
        for k in np.flatnonzero(cut):
            doc, a, b = (int(x) for x in r[k])
            texts.append((doc, source[a:b].decode("utf-8", "replace")))
        r = r[~cut]
    block_ends = len(source) + 1 + np.cumsum([len(t) + 1 for t in blocks], dtype=np.int64)
    n_source = int(np.searchsorted(starts, len(source)))
    h_doc = np.array([d for d, _ in texts], np.int64)[
        np.searchsorted(block_ends, starts[n_source:], "right")]
    i0 = np.searchsorted(starts, r[:, 1], "left")
    i1 = np.searchsorted(starts, r[:, 2], "left")
    length = i1 - i0
    doc = np.concatenate((np.repeat(r[:, 0], length), h_doc))
    match = np.concatenate((_expand(i0, length), np.arange(n_source, len(starts))))
    return doc, match, words


_WORD_TOKENS: dict[bytes, tuple[str, ...]] = {}  # per process: each word tokenised once
_MAX_WORDS = 1 << 19  # then start over (bounded memory on huge trees)


def _tokens_of(words: list[bytes]) -> list[tuple[str, ...]]:
    if len(_WORD_TOKENS) > _MAX_WORDS:
        _WORD_TOKENS.clear()
    found = list(map(_WORD_TOKENS.get, words))
    if None in found:
        for k, (f, w) in enumerate(zip(found, words)):
            if f is None:
                found[k] = _WORD_TOKENS[w] = word_tokens(w.decode("ascii"))
    return found


def _word_terms(words: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray, pa.Array]:
    """(word id of each occurrence, per distinct word its token count, the flat list of its
    tokens' ranks) and the file's terms in sorted order."""
    encoded = pc.dictionary_encode(words)
    word_id = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    tokens = _tokens_of(encoded.dictionary.to_pylist())
    tok_len = np.fromiter(map(len, tokens), np.int64, len(tokens))
    flat = pc.dictionary_encode(pa.array(list(chain.from_iterable(tokens)), pa.string()))
    order = pc.sort_indices(flat.dictionary).to_numpy()
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    local = flat.indices.to_numpy(zero_copy_only=False)
    return word_id, tok_len, rank[local], flat.dictionary.take(pa.array(order))


def _count(key: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys, sorted, and the summed weight of each."""
    if not len(key):
        return key, weight
    order = np.argsort(key, kind="stable")
    key, weight = key[order], weight[order]
    first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    return key[first], np.add.reduceat(weight, first)


def postings_array(extraction: Extraction, source: bytes, list_type: pa.DataType) -> pa.Array:
    """The file's postings as one list<struct<doc_kind, doc, term, tf>> value: per document
    (symbols, then chunks, in order) its terms in sorted order with their counts."""
    doc, match, words = _doc_words(extraction, source)
    word_id, tok_len, tok_flat, terms = _word_terms(words)
    n_words, n_terms = max(len(tok_len), 1), max(len(terms), 1)
    pairs, counts = np.unique(doc * n_words + word_id[match], return_counts=True)
    pair_word = pairs % n_words
    n_tok = tok_len[pair_word]
    term = tok_flat[_expand((np.cumsum(tok_len) - tok_len)[pair_word], n_tok)]
    key, tf = _count(np.repeat(pairs // n_words, n_tok) * n_terms + term, np.repeat(counts, n_tok))
    doc_out, term_out = key // n_terms, key % n_terms
    n_symbols = len(extraction.symbols)
    is_chunk = doc_out >= n_symbols
    values = pa.StructArray.from_arrays([
        _KINDS.take(pa.array(is_chunk.astype(np.int8))),
        pa.array(np.where(is_chunk, doc_out - n_symbols, doc_out).astype(np.int32)),
        terms.take(pa.array(term_out)),
        pa.array(tf.astype(np.int32)),
    ], fields=list(list_type.value_type))
    return pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values)
