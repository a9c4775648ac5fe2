"""The `hash` embedder: no model; identifier sub-words, character trigrams and a small code
thesaurus hashed into `dim` signed buckets."""

from __future__ import annotations

import math
import zlib
from collections import Counter

from ..tokenize import _WORD, tokenize
from .base import EMBED_COUNTER, MAX_TEXT_CHARS, embedder_id, normalize_rows

# Weights (part of the embedder's version: change them, bump HashingEmbedder.version).
TITLE_WEIGHT = 3.0
GRAM_WEIGHT = 0.6
CONCEPT_WEIGHT = 0.8
STOP_WEIGHT = 0.15

# Words with (roughly) one meaning in code share a concept feature: `remove` finds `delete`.
_CONCEPTS = [
    "delete remove erase drop unlink discard purge rm del",
    "create make new build construct spawn instantiate",
    "get fetch read load retrieve obtain",
    "save write store dump persist flush",
    "find search lookup locate query seek grep",
    "parse decode deserialize unmarshal loads scan",
    "serialize encode marshal dumps",
    "format render pretty stringify repr",
    "start begin open launch init initialize setup boot",
    "stop end close finish terminate shutdown teardown kill halt",
    "error exception failure fault err exc raise",
    "check validate verify assert ensure test",
    "compare diff equal eq match cmp",
    "copy clone duplicate dup",
    "send emit post publish transmit write",
    "receive recv accept consume listen",
    "sort order rank sorted",
    "count size length len total number num",
    "hash digest checksum crc md5 sha",
    "compress zip deflate gzip zlib bz2 lzma",
    "decompress unzip inflate extract",
    "encrypt cipher crypt ssl tls",
    "time date clock timestamp datetime timeout",
    "path file filename directory folder dir",
    "thread concurrent parallel async await pool worker",
    "lock mutex semaphore synchronize",
    "http url web request response uri",
    "socket sock network connection conn tcp udp",
    "print log display show output echo",
    "config configuration settings options preferences cfg conf",
    "temp temporary tmp scratch",
    "random rand shuffle choice sample",
    "wait sleep delay pause",
    "split tokenize separate partition",
    "join concat concatenate merge combine",
    "list array sequence seq vector",
    "dict map mapping table dictionary hashmap",
    "iterate iter loop generator next",
    "env environment environ",
    "user account login",
    "string str text",
    "integer int",
    "argument arg args param parameter",
    "message msg",
    "buffer buf",
    "context ctx",
    "index idx",
    "value val",
    "object obj",
    "source src",
    "destination dst dest target",
    "previous prev",
    "attribute attr",
    "address addr",
    "function func fn callable",
    "character char",
    "database db sql",
    "repository repo",
    "exit quit",
    "resize reshape scale",
    "convert cast transform",
    "update modify change set mutate",
    "insert add append push put",
    "pop dequeue shift",
    "cache memoize memo",
]
_CONCEPT_OF: dict[str, int] = {}
for _n, _line in enumerate(_CONCEPTS):
    for _w in _line.split():
        _CONCEPT_OF.setdefault(_w, _n)

_STOP = frozenset(
    "self cls def return if else elif for while in is not and or none true false import from as "
    "with try except finally pass class lambda yield the an of to it this that be are var let "
    "const function public private static void new null nil this end do then".split()
)


class HashingEmbedder:
    """Signed feature hashing of sub-words, character trigrams and concepts (no model).

    A text's first line is its title (a symbol's kind and qualified name) and weighs more.
    """

    name = "hash"
    version = 1

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self._token_ids: dict[str, int] = {}
        # Features of every token seen so far, CSR-style: token t owns _fidx/_fval[_start[t]:_end[t]].
        self._start: list[int] = []
        self._end: list[int] = []
        self._fidx: list[int] = []
        self._fval: list[float] = []
        self._word_tokens: dict[str, list[str]] = {}

    @property
    def id(self) -> str:
        return embedder_id(self.name, self.version, self.dim)

    def _add_token(self, token: str) -> int:
        start = len(self._fidx)

        def add(feature: str, weight: float) -> None:
            h = zlib.crc32(feature.encode("utf-8"))
            self._fidx.append(h % self.dim)
            self._fval.append(weight if (h >> 24) & 1 else -weight)

        add("w:" + token, 1.0)
        padded = f"<{token}>"
        grams = [padded[i:i + 3] for i in range(len(padded) - 2)]
        for g in grams:
            add("g:" + g, GRAM_WEIGHT / math.sqrt(len(grams)))
        concept = _CONCEPT_OF.get(token)
        if concept is not None:
            add(f"c:{concept}", CONCEPT_WEIGHT)
        tid = len(self._start)
        self._start.append(start)
        self._end.append(len(self._fidx))
        self._token_ids[token] = tid
        return tid

    def _arrays(self) -> tuple:
        """The feature table as numpy arrays, extended with the tokens added since last time."""
        import numpy as np

        cached = getattr(self, "_np", None)
        if cached is None or len(cached[2]) > len(self._start):
            cached = tuple(np.zeros(0, dtype=d) for d in (np.int64, np.float64, np.int64, np.int64))
        lists = (self._fidx, self._fval, self._start, self._end)
        self._np = tuple(
            a if len(a) == len(lst) else np.concatenate([a, np.asarray(lst[len(a):], dtype=a.dtype)])
            for a, lst in zip(cached, lists))
        return self._np

    def _tokens(self, text: str) -> list[str]:
        """`tokenize(text)`, memoised per word (code repeats its words)."""
        out: list[str] = []
        cache = self._word_tokens
        for word in _WORD.findall(text):
            toks = cache.get(word)
            if toks is None:
                toks = cache[word] = tokenize(word)
            out.extend(toks)
        return out

    def _weights(self, text: str) -> Counter[str]:
        title, _, body = text[:MAX_TEXT_CHARS].partition("\n")
        counts: Counter[str] = Counter()  # float weights, not counts
        for tok in self._tokens(title):
            counts[tok] += TITLE_WEIGHT
        counts.update(self._tokens(body))
        return counts

    def embed(self, texts: list[str]) -> "np.ndarray":
        """Vectors (len(texts) x dim, float32, unit length; zero for empty texts)."""
        import numpy as np

        EMBED_COUNTER[self.id] += len(texts)
        if len(self._token_ids) > 200_000:  # bound memory on huge vocabularies
            self.__init__(self.dim)  # type: ignore[misc]
        rows: list[int] = []
        tids: list[int] = []
        weights: list[float] = []
        ids = self._token_ids
        for r, text in enumerate(texts):
            for tok, tf in self._weights(text).items():
                tid = ids.get(tok)
                tids.append(self._add_token(tok) if tid is None else tid)
                rows.append(r)
                weights.append((1.0 + math.log(tf)) * (STOP_WEIGHT if tok in _STOP else 1.0))
        fidx, fval, start, end = self._arrays()
        t = np.asarray(tids, dtype=np.int64)
        starts = start[t]
        lens = end[t] - starts
        total = int(lens.sum())
        offsets = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(total)
        flat = np.repeat(np.asarray(rows, dtype=np.int64), lens) * self.dim + fidx[offsets]
        vals = fval[offsets] * np.repeat(np.asarray(weights), lens)
        out = np.bincount(flat, weights=vals, minlength=len(texts) * self.dim)
        return normalize_rows(out.reshape(len(texts), self.dim))
