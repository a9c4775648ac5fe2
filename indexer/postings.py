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
from operator import attrgetter

import numpy as np
import pyarrow as pa

from .. import kernels
from ..tokenize import word_tokens
from ..types import NO_PARENT, Extraction, Symbol


def body_pieces(symbols: list[Symbol]) -> list[list[tuple[int, int]]]:
    """Each symbol's own body as byte ranges: its span with its child symbols' spans cut out
    (children defined elsewhere, like Go receivers or C++ `A::f`, cut nothing)."""
    cut = _parent_pieces(symbols)
    return [cut.get(i) or [(s.span.start_byte, s.span.end_byte)] for i, s in enumerate(symbols)]


def _parent_pieces(symbols: list[Symbol]) -> dict[int, list[tuple[int, int]]]:
    """`body_pieces` of the symbols that have children."""
    children: dict[int, list[tuple[int, int]]] = {}
    for s in symbols:
        if s.parent != NO_PARENT:
            children.setdefault(s.parent, []).append((s.span.start_byte, s.span.end_byte))
    out = {}
    for i, kids in children.items():
        span = symbols[i].span
        start, end = span.start_byte, span.end_byte
        pieces, pos = [], start
        for a, b in sorted(kids):
            if a < start or b > end or b <= pos:
                continue
            if a > pos:
                pieces.append((pos, a))
            pos = b
        pieces.append((pos, end))
        out[i] = pieces
    return out


_CLASS = np.zeros(256, np.uint8)  # of each byte: 0 no word character, 1 digit, 3 letter or _
_CLASS[48:58], _CLASS[65:91], _CLASS[97:123], _CLASS[95] = 1, 3, 3, 3
_NON_WORD = bytes(i for i in range(256) if not _CLASS[i])


def _scan(data: bytes) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """Start and end offsets of the matches of tokenize's word pattern in `data`, in order,
    and the matched words as a binary array (built from the bytes without a Python object
    per word). A run of word characters is one match, or two when it opens with digits and
    goes on with a letter; every word character is in exactly one match."""
    if not data:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), pa.array([], pa.binary())
    cls = _CLASS.take(np.frombuffer(b" " + data + b" ", np.uint8))
    step = cls[1:] - cls[:-1]  # at each offset of `data`: its class minus the previous one's, mod 256
    edges = (step & 1).view(bool).nonzero()[0]  # odd: a run of word characters starts or ends
    starts, ends = edges[0::2], edges[1::2]
    # a letter right after the digits that open a run starts a second match (rare: 0x1F, 2to3)
    second = (step == 2).nonzero()[0]
    if len(second):
        run = np.searchsorted(starts, second, "right") - 1
        first = np.concatenate(([True], run[1:] != run[:-1]))
        second = second[first & (cls[starts[run] + 1] == 1)]
        if len(second):
            starts = np.sort(np.concatenate((starts, second)))
            ends = np.sort(np.concatenate((ends, second)))
    offsets = np.concatenate(([0], np.cumsum(ends - starts))).astype(np.int32)
    words = pa.Array.from_buffers(pa.binary(), len(starts), [
        None, pa.py_buffer(offsets), pa.py_buffer(data.translate(None, _NON_WORD))])
    return starts, ends, words


_SPAN_BYTES = attrgetter("span.start_byte", "span.end_byte")
_HEAD = attrgetter("name", "qualified_name", "signature", "doc")


def _documents(extraction: Extraction,
               source: bytes) -> tuple[np.ndarray, bytes, np.ndarray, list[int], list[str]]:
    """The file's documents (symbols are docs 0..S-1, chunks S.. in order): their
    (doc, start, end) source ranges; the symbols' heads (name, qualified name, signature and
    doc, one line each) as one block and each symbol's byte length in it; the docs and
    strings of the other texts."""
    symbols = extraction.symbols
    n_symbols = len(symbols)
    spans = np.fromiter(chain.from_iterable(map(_SPAN_BYTES, symbols)), np.int64, 2 * n_symbols)
    leaf = np.ones(n_symbols, bool)
    cut = _parent_pieces(symbols)
    leaf[list(cut)] = False
    ranges = [(i, a, b) for i, pieces in cut.items() for a, b in pieces]
    fields = list(chain.from_iterable(map(_HEAD, symbols)))
    head = "\n".join(fields)
    if head.isascii():
        heads, field_len = head.encode("ascii"), np.fromiter(map(len, fields), np.int64, len(fields))
    else:
        heads = head.encode("utf-8", "surrogatepass")
        field_len = np.fromiter((len(f.encode("utf-8", "surrogatepass")) for f in fields),
                                np.int64, len(fields))
    text_docs: list[int] = []
    texts: list[str] = []
    n = len(source)
    for i, c in enumerate(extraction.chunks, n_symbols):
        if c.heading:
            text_docs.append(i)
            texts.append(c.heading)
        a, b = c.span.start_byte, c.span.end_byte
        if 0 <= a <= b <= n and source[a:b] == c.text.encode("utf-8", "surrogatepass"):
            ranges.append((i, a, b))
        else:
            text_docs.append(i)
            texts.append(c.text)
    leaves = leaf.nonzero()[0]
    r = np.concatenate((leaves[:, None], spans.reshape(-1, 2)[leaves]), axis=1)
    r = np.concatenate((r, np.array(ranges, np.int64).reshape(-1, 3)))
    return r, heads, field_len.reshape(-1, 4).sum(axis=1) + 3, text_docs, texts


def _expand(first: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Concatenated aranges first[k] .. first[k] + length[k]."""
    offsets = length.cumsum()
    total = int(offsets[-1]) if len(offsets) else 0
    offsets -= length
    return (first - offsets).repeat(length) + np.arange(total)


def _doc_words(extraction: Extraction, source: bytes) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """(doc, match index) of every word occurrence of every document, and the words."""
    r, heads, head_len, text_docs, texts = _documents(extraction, source)
    n_symbols = len(head_len)
    while True:
        block = "\n".join(texts)
        if block.isascii():
            blocks = [block.encode("ascii")] if texts else []
            text_len = np.fromiter(map(len, texts), np.int64, len(texts))
        else:
            blocks = [t.encode("utf-8", "surrogatepass") for t in texts]
            text_len = np.fromiter(map(len, blocks), np.int64, len(blocks))
        data = b"\n".join([source, heads, *blocks] if n_symbols else [source, *blocks])
        # the strings follow the source, each after a newline, so no word spans two of them
        starts, ends, words = _scan(data)
        at = starts.searchsorted(r[:, 1:], "left")  # the first word at or after each end
        if not len(starts):
            break
        cut = ((at > 0) & (ends[at - 1] > r[:, 1:])).any(axis=1)
        if not cut.any():
            break
        for k in cut.nonzero()[0]:
            doc, a, b = (int(x) for x in r[k])
            text_docs.append(doc)
            texts.append(source[a:b].decode("utf-8", "replace"))
        r = r[~cut]
    text_ends = len(source) + 1 + (np.concatenate((head_len, text_len)) + 1).cumsum()
    n_source = int(starts.searchsorted(len(source)))
    text_doc = np.concatenate((np.arange(n_symbols), np.array(text_docs, np.int64)))
    t_doc = text_doc[text_ends.searchsorted(starts[n_source:], "right")]
    length = at[:, 1] - at[:, 0]
    doc = np.concatenate((r[:, 0].repeat(length), t_doc))
    match = np.concatenate((_expand(at[:, 0], length), np.arange(n_source, len(starts))))
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
    encoded = kernels.dictionary_encode(words)
    word_id = encoded.indices.to_numpy(zero_copy_only=False)
    tokens = _tokens_of(encoded.dictionary.to_pylist())
    tok_len = np.fromiter(map(len, tokens), np.int64, len(tokens))
    terms = sorted(set(chain.from_iterable(tokens)))
    rank = dict(zip(terms, range(len(terms))))
    tok_rank = np.fromiter(map(rank.__getitem__, chain.from_iterable(tokens)), np.int64, int(tok_len.sum()))
    return word_id, tok_len, tok_rank, pa.array(terms, pa.string())


def _count(key: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys (all in 0..size-1), sorted, and how often each occurs."""
    if size <= 4 * len(key) + 1024:
        counts = np.bincount(key, minlength=size)
        distinct = counts.nonzero()[0]
        return distinct, counts[distinct]
    return np.unique(key, return_counts=True)


def postings_array(extraction: Extraction, source: bytes, list_type: pa.DataType) -> pa.Array:
    """The file's postings as one list<struct<doc_kind, doc, term, tf>> value: per document
    (symbols, then chunks, in order) its terms in sorted order with their counts."""
    doc, match, words = _doc_words(extraction, source)
    word_id, tok_len, tok_flat, terms = _word_terms(words)
    n_terms = max(len(terms), 1)
    occ_word = word_id[match]
    n_tok = tok_len[occ_word]
    term = tok_flat[_expand((tok_len.cumsum() - tok_len)[occ_word], n_tok)]
    n_symbols = len(extraction.symbols)
    key, tf = _count(doc.repeat(n_tok) * n_terms + term,
                     (n_symbols + len(extraction.chunks)) * n_terms)
    doc_out = key // n_terms
    term_out = key - doc_out * n_terms
    n_symbol_rows = int(doc_out.searchsorted(n_symbols))
    doc_out[n_symbol_rows:] -= n_symbols
    kinds = pa.Array.from_buffers(pa.string(), len(key), [
        None, pa.py_buffer(np.arange(len(key) + 1, dtype=np.int32)),
        pa.py_buffer(b"s" * n_symbol_rows + b"c" * (len(key) - n_symbol_rows))])
    return kernels.one_list(list_type, [kinds, kernels.from_numpy(doc_out.astype(np.int32)),
                                kernels.take(terms, term_out), kernels.from_numpy(tf.astype(np.int32))])
