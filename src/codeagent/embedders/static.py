"""The `static` embedder: hash features plus a static word-piece table derived from MiniLM.

No model runs and nothing is downloaded: `minilm_static.npz` (shipped in this package, made
once by `derive_static.py`) holds a 128-d vector per MiniLM word piece. A text's vector is the
hash embedder's (exact sub-words, trigrams, thesaurus) next to the weighted mean of its word
pieces' vectors (meaning: `download` lands near `fetch`), each half unit length.

Version history: 1 = hash-v1 (256) + static word pieces (128), halves weighted 1 : STATIC_SHARE.
"""

from __future__ import annotations

import math
import threading
import unicodedata
from pathlib import Path

import numpy as np

from .base import EMBED_COUNTER, MAX_TEXT_CHARS, embedder_id, normalize_rows
from .hashing import _STOP, TITLE_WEIGHT, HashingEmbedder
from ..errors import InvalidParameter
from ..tokenize import _WORD, split_identifier

TABLE = Path(__file__).with_name("minilm_static.npz")
STATIC_SHARE = 1.0
MAX_PIECES_PER_WORD = 8
_ENGLISH_STOP = frozenset("a an the of to in on for and or is are be by with as at it this that "
                          "from into its if then else not".split())
_lock = threading.Lock()
_table: dict[str, object] = {}


def _load_table() -> tuple[np.ndarray, dict[str, int]]:
    with _lock:
        if "matrix" not in _table:
            if not TABLE.exists():
                raise InvalidParameter(f"the static embedder's table {TABLE.name} is missing",
                                       hint="reinstall codeagent, or use --embedder hash")
            data = np.load(TABLE)
            matrix = data["table"].astype(np.float32) * data["scale"][:, None]
            _table["matrix"] = matrix
            _table["vocab"] = {w: i for i, w in enumerate(data["vocab"].tolist())}
    return _table["matrix"], _table["vocab"]  # type: ignore[return-value]


def word_pieces(word: str, vocab: dict[str, int]) -> list[int]:
    """Greedy longest-match-first WordPiece (BERT uncased) of one lower-case word."""
    word = "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")
    out: list[int] = []
    start = 0
    while start < len(word) and len(out) < MAX_PIECES_PER_WORD:
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                out.append(vocab[piece])
                break
            end -= 1
        if end == start:
            return []  # unknown character: BERT maps the whole word to [UNK]; we drop it
        start = end
    return out


class StaticEmbedder:
    """Hash features (256) next to mean MiniLM word-piece vectors (128): 384 dimensions."""

    name = "static"
    version = 1

    def __init__(self) -> None:
        self.hash = HashingEmbedder()
        self.matrix, self.vocab = _load_table()
        self.dim = self.hash.dim + self.matrix.shape[1]
        self._pieces: dict[str, list[int]] = {}

    @property
    def id(self) -> str:
        return embedder_id(self.name, self.version, self.dim)

    def _word(self, word: str) -> list[int]:
        cached = self._pieces.get(word)
        if cached is None:
            pieces: list[int] = []
            for sub in split_identifier(word) or [word.lower()]:
                if sub not in _STOP and sub not in _ENGLISH_STOP and len(sub) > 1:
                    pieces.extend(word_pieces(sub, self.vocab))
            cached = self._pieces[word] = pieces
        return cached

    def _static(self, text: str) -> np.ndarray:
        title, _, body = text[:MAX_TEXT_CHARS].partition("\n")
        weights: dict[int, float] = {}
        for part, w in ((title, TITLE_WEIGHT), (body, 1.0)):
            for word in _WORD.findall(part):
                for piece in self._word(word):
                    weights[piece] = weights.get(piece, 0.0) + w
        if not weights:
            return np.zeros(self.matrix.shape[1], dtype=np.float32)
        ids = np.fromiter(weights, dtype=np.int64, count=len(weights))
        w = np.asarray([1.0 + math.log(v) if v >= 1 else v for v in weights.values()], dtype=np.float32)
        return w @ self.matrix[ids]

    def embed(self, texts: list[str]) -> np.ndarray:
        EMBED_COUNTER[self.id] += len(texts)
        lexical = self.hash.embed(texts)
        EMBED_COUNTER[self.hash.id] -= len(texts)
        semantic = normalize_rows(np.stack([self._static(t) for t in texts]) if texts
                                  else np.zeros((0, self.matrix.shape[1]), dtype=np.float32))
        return normalize_rows(np.concatenate([lexical, STATIC_SHARE * semantic], axis=1))
