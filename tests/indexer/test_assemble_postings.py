"""assemble.term_postings.postings_rows against a per-posting reference: docs and term_postings rows, whatever
the order of a shard's postings (a document's postings split in two runs, chunks first)."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa

from codeagent.indexer.assemble.term_postings import postings_rows
from codeagent.format.shard import POSTING_TYPE, SHARD_SCHEMA


def _shards(per_entry: list[list[tuple[str, int, str, int]]]) -> pa.Table:
    postings = pa.array([[dict(zip(("doc_kind", "doc", "term", "tf"), p)) for p in rows]
                         for rows in per_entry], pa.list_(POSTING_TYPE))
    columns = {f.name: pa.nulls(len(per_entry), f.type) for f in SHARD_SCHEMA}
    columns["postings"] = postings
    return pa.table(columns, schema=SHARD_SCHEMA)


def _reference(paths: list[str], per_entry) -> tuple[Counter, Counter]:
    length: Counter = Counter()
    for path, rows in zip(paths, per_entry):
        for kind, doc, _term, tf in rows:
            length[path, kind, doc] += tf
    docs = Counter((p, k, d, n) for (p, k, d), n in length.items())
    postings = Counter((term, path, kind, doc, tf, length[path, kind, doc])
                       for path, rows in zip(paths, per_entry) for kind, doc, term, tf in rows)
    return docs, postings


def test_postings_match_a_per_posting_reference():
    per_entry = [
        [("s", 0, "b", 2), ("s", 0, "a", 1), ("s", 1, "a", 3), ("c", 0, "z", 1), ("c", 0, "a", 2)],
        [],
        [("c", 2, "a", 1), ("c", 0, "q", 4), ("s", 0, "a", 1), ("c", 2, "b", 5)],  # c first, doc 2 split
        [("s", 5, "a", 1), ("c", 5, "a", 1)],  # same doc number, two kinds, adjacent
    ]
    paths = ["a.py", "empty.py", "b.py", "c.py"]
    postings, docs = postings_rows(_shards(per_entry), pa.array(paths))
    want_docs, want_postings = _reference(paths, per_entry)
    assert Counter(tuple(r.values()) for r in docs.to_pylist()) == want_docs
    rows = postings.to_pylist()
    assert Counter(tuple(r.values()) for r in rows) == want_postings
    terms = [r["term"] for r in rows]
    assert terms == sorted(terms)


def test_no_postings():
    postings, docs = postings_rows(_shards([[], []]), pa.array(["a.py", "b.py"]))
    assert postings.num_rows == 0 and docs.num_rows == 0
