"""The whole-file BM25 baseline: what a trivial approach reaches on the same queries.

Computed by the harness itself, independent of the query engine: one document per source-code
file (docs, configs and data left out by the caller; its path and its text, tokenised like the
index does: identifiers split), Okapi BM25 with k1=1.2, b=0.75.
Term counts are cached by content hash, so scoring hundreds of parent commits re-tokenises
only the files that changed.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable

from ..tokenize import term_frequencies, tokenize

K1 = 1.2
B = 0.75


class TermCountCache:
    """blob id -> term counts of the file's text."""

    def __init__(self) -> None:
        self._counts: dict[str, Counter[str]] = {}

    def get(self, blob: str, text: str) -> Counter[str]:
        counts = self._counts.get(blob)
        if counts is None:
            counts = self._counts[blob] = term_frequencies(text)
        return counts


class WholeFileBM25:
    """Okapi BM25 over whole files; `search` returns (path, score), best first."""

    def __init__(self, docs: Iterable[tuple[str, Counter[str]]]) -> None:
        self.paths: list[str] = []
        self.lengths: list[int] = []
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for n, (path, counts) in enumerate(docs):
            self.paths.append(path)
            self.lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self.postings[term].append((n, tf))
        total = len(self.paths)
        self.avgdl = (sum(self.lengths) / total) if total else 0.0
        self.idf = {t: math.log(1 + (total - len(p) + 0.5) / (len(p) + 0.5)) for t, p in self.postings.items()}

    @classmethod
    def from_files(cls, files: Iterable[tuple[str, str, str]], cache: TermCountCache) -> "WholeFileBM25":
        """From (path, blob id, text) triples; the path's own tokens count as part of the file."""
        return cls((path, cache.get(blob, text) + term_frequencies(path)) for path, blob, text in files)

    def search(self, query: str, limit: int = 10) -> list[tuple[str, float]]:
        scores: dict[int, float] = defaultdict(float)
        avgdl = self.avgdl or 1.0
        for term in dict.fromkeys(tokenize(query)):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for doc, tf in self.postings[term]:
                norm = K1 * (1 - B + B * self.lengths[doc] / avgdl)
                scores[doc] += idf * tf * (K1 + 1) / (tf + norm)
        ranked = sorted(scores.items(), key=lambda item: (-item[1], self.paths[item[0]]))
        return [(self.paths[doc], score) for doc, score in ranked[:limit]]
