"""BM25 postings in the assembly: term_postings rows sorted by term and docs (document
lengths) from the shards' postings; an incremental assembly appends an unsorted tail and
re-sorts it past POSTINGS_TAIL_FRACTION."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from ... import kernels
from .tables import flatten

# The appended (unsorted) tail of term_postings may grow to this fraction of the table before
# an incremental assembly re-sorts it.
POSTINGS_TAIL_FRACTION = 0.15


def postings_rows(shards, paths):
    """(term_postings rows sorted by term, docs rows) of the entries' postings; a document's
    length is the sum of its terms' tf."""
    flat = flatten(shards, "postings")
    e, doc, tf = (flat.column(c).to_numpy() for c in ("e", "doc", "tf"))
    doc_kind = flat.column("doc_kind").chunk(0)
    # A shard lists a document's postings together: documents are found per run of equal
    # (entry, doc_kind, doc), not per posting (a repeated run lands in the same slot).
    starts = _run_starts(e, doc, doc_kind)
    run = np.repeat(np.arange(len(starts), dtype=np.int32), np.diff(np.append(starts, len(e))))
    kinds = kernels.dictionary_encode(kernels.take(doc_kind, starts))
    run_kind = kinds.indices.to_numpy()
    slot, slot_entry, slot_kind, slot_doc = _doc_slots(e[starts], run_kind, len(kinds.dictionary), doc[starts])
    run_tf = np.add.reduceat(tf, starts) if len(starts) else np.zeros(0, np.int64)
    sums = np.bincount(slot, weights=run_tf, minlength=len(slot_entry))
    present = np.flatnonzero(np.bincount(slot, minlength=len(slot_entry)))
    length = sums.astype(np.int32)
    arrow = kernels.from_numpy
    docs = pa.table({
        "path": pa.DictionaryArray.from_arrays(arrow(slot_entry[present]), paths),
        "doc_kind": pa.DictionaryArray.from_arrays(arrow(slot_kind[present]), kinds.dictionary),
        "doc": arrow(slot_doc[present]), "length": arrow(length[present])})
    terms = kernels.dictionary_encode(flat.column("term").chunk(0))
    rank = kernels.dense_rank(terms.dictionary).to_numpy()
    order = stable_order(rank[terms.indices.to_numpy()].astype(np.uint32))
    run = run[order]
    postings = pa.table({
        "term": pa.DictionaryArray.from_arrays(kernels.take(terms.indices, order), terms.dictionary),
        "path": pa.DictionaryArray.from_arrays(arrow(e[order]), paths),
        "doc_kind": pa.DictionaryArray.from_arrays(arrow(run_kind[run]), kinds.dictionary),
        "doc": arrow(doc[order]), "tf": arrow(tf[order]), "length": arrow(length[slot][run])})
    return postings, docs


def _run_starts(entry, doc, doc_kind):
    """Index of the first posting of each run of equal (entry, doc, doc_kind)."""
    if not len(entry):
        return np.zeros(0, np.int64)
    change = np.empty(len(entry), bool)
    change[0] = True
    np.not_equal(entry[1:], entry[:-1], out=change[1:])
    change[1:] |= doc[1:] != doc[:-1]
    differs = kernels.not_equal(doc_kind.slice(1), doc_kind.slice(0, len(doc_kind) - 1))
    change[1:] |= kernels.fill_null(differs, True).to_numpy(zero_copy_only=False)
    return np.flatnonzero(change)


def stable_order(keys):
    """np.argsort(keys, kind="stable") of uint32 keys, as two 16-bit passes (numpy's radix
    sort; on 32-bit keys it falls back to timsort, 2-3x slower)."""
    order = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    if len(keys) and int(keys.max()) > 0xFFFF:
        order = order[np.argsort((keys >> 16).astype(np.uint16)[order], kind="stable")]
    return order


def _doc_slots(entry, kind, n_kinds: int, doc):
    """A dense slot per (entry, kind, doc) of each posting, and each slot's entry, kind, doc
    (slots no posting names included: the caller keeps those with postings)."""
    if not len(entry):
        empty = np.zeros(0, np.int32)
        return empty, empty, empty, empty
    n_entries = int(entry[-1]) + 1
    starts = np.concatenate(([0], np.flatnonzero(entry[1:] != entry[:-1]) + 1))
    lo = np.zeros(n_entries, np.int64)
    hi = np.full(n_entries, -1, np.int64)
    lo[entry[starts]] = np.minimum.reduceat(doc, starts)
    hi[entry[starts]] = np.maximum.reduceat(doc, starts)
    width = hi - lo + 1
    size = width * n_kinds
    base = np.concatenate(([0], np.cumsum(size)[:-1]))
    slot = base[entry] + kind.astype(np.int64) * width[entry] + (doc - lo[entry])
    slot_entry = np.repeat(np.arange(n_entries, dtype=np.int32), size)
    rest = np.arange(int(size.sum()), dtype=np.int64) - base[slot_entry]
    slot_kind = (rest // np.maximum(width, 1)[slot_entry]).astype(np.int32)
    slot_doc = (rest % np.maximum(width, 1)[slot_entry] + lo[slot_entry]).astype(np.int32)
    return slot, slot_entry, slot_kind, slot_doc


def insert_postings(con, shards, paths, spool: Callable[[pa.Table], int] | None = None) -> int:
    """Insert the entries' docs and term_postings rows; returns the term_postings rows.
    `spool`: takes the term_postings rows instead (postings_merge.PostingsRuns.add)."""
    postings, docs = postings_rows(shards, paths)
    con.register("e_docs", docs)
    con.execute("INSERT INTO docs SELECT path, doc_kind, doc, length FROM e_docs")
    con.unregister("e_docs")
    if spool is not None:
        return spool(postings)
    # Sorted by term, so BM25 reads only the row groups of the query's terms (zone maps).
    con.register("e_postings", postings)
    con.execute("INSERT INTO term_postings SELECT term, path, doc_kind, doc, tf, length FROM e_postings")
    con.unregister("e_postings")
    return len(postings)


def _meta_value(con, key: str) -> str | None:
    rows = con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchall()
    return rows[0][0] if rows else None


def postings_tail(con, full: bool, inserted: int) -> int:
    """Rows appended to term_postings since it was last sorted (`inserted` now); re-sorts
    past the threshold."""
    if full:
        return 0
    appended = int(_meta_value(con, "postings_tail_rows") or 0) + inserted
    total = con.execute("SELECT count(*) FROM term_postings").fetchall()[0][0]
    if appended <= POSTINGS_TAIL_FRACTION * total:
        return appended
    sort_postings(con)
    return 0


def sort_postings(con) -> None:
    con.execute("CREATE TABLE term_postings_sorted AS SELECT * FROM term_postings ORDER BY term")
    con.execute("DROP TABLE term_postings")
    con.execute("ALTER TABLE term_postings_sorted RENAME TO term_postings")
