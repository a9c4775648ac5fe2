"""The `names` structure's trigram pairs, built from integer codes.

A cold build of the standard library writes ~940k (trigram key, name) pairs. Building them
as Python tuples and f-strings, then two Arrow string arrays, then sorting those strings and
dictionary-encoding the sorted columns cost ~7% of the build's CPU (2.0 s of 37). Here the
trigrams are integers cut from one array of code points (numpy), the pairs are sorted as
integers, and only the distinct keys become strings: the same table, value for value and chunk
for chunk, as `resident.pairs_table` of the string pairs makes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: pyarrow is imported when a table is built
    import pyarrow as pa


def trigrams(word: str) -> set[str]:
    padded = f"\x02\x02{word}\x03\x03"
    return {padded[i:i + 3] for i in range(len(padded) - 2)}


def trigram_key(gram: str, length: int) -> str:
    return f"{gram}\x00{length}"


def trigram_table(names: set[str]) -> pa.Table:
    """(key: a padded trigram and a name length (`trigram_key`), name: a lower-cased
    name of that length holding it), sorted: the fuzzy name search's candidates."""
    import numpy as np  # loaded when a table is built, not by resident's importers

    ordered = sorted(names)  # a name's code is its rank
    padded_len = np.fromiter(map(len, ordered), dtype=np.int64, count=len(ordered)) + 4
    # Every code point of every padded name, as one array (a code point < 2**21).
    points = np.frombuffer("".join(f"\x02\x02{n}\x03\x03" for n in ordered).encode("utf-32-le"),
                           dtype=np.uint32).astype(np.uint64)
    per_name = padded_len - 2
    name = np.repeat(np.arange(len(ordered), dtype=np.int64), per_name)
    pos = (np.arange(len(name), dtype=np.int64) - np.repeat(np.cumsum(per_name) - per_name, per_name)
           + np.repeat(np.cumsum(padded_len) - padded_len, per_name))
    # A trigram as one integer, ordered as its code points are (first one highest).
    gram = (points[pos] << np.uint64(42)) | (points[pos + 1] << np.uint64(21)) | points[pos + 2]
    order = np.lexsort((gram, name))  # a name's trigram set: its repeats dropped
    name, gram = name[order], gram[order]
    keep = np.ones(len(name), dtype=bool)
    keep[1:] = (name[1:] != name[:-1]) | (gram[1:] != gram[:-1])
    name, gram = name[keep], gram[keep]
    length = padded_len[name] - 4
    # The key `gram\x00length` sorts by gram, then by the length's decimal string.
    lengths = np.sort(length)  # distinct: np.unique without return_* imports numpy.ma (numpy 2.3+)
    if len(lengths):
        first = np.ones(len(lengths), dtype=bool)
        first[1:] = lengths[1:] != lengths[:-1]
        lengths = lengths[first]
    text_rank = np.empty(int(lengths.max()) + 1 if len(lengths) else 0, dtype=np.int64)
    text_rank[lengths] = np.argsort(np.argsort([str(n) for n in lengths.tolist()], kind="stable"))
    order = np.lexsort((name, text_rank[length], gram))
    name, gram, length = name[order], gram[order], length[order]
    new = np.ones(len(name), dtype=bool)
    new[1:] = (gram[1:] != gram[:-1]) | (length[1:] != length[:-1])
    keys = [trigram_key(f"{chr(g >> 42)}{chr((g >> 21) & 0x1FFFFF)}{chr(g & 0x1FFFFF)}", n)
            for g, n in zip(gram[new].tolist(), length[new].tolist())]
    return sorted_pairs_table(keys, np.cumsum(new) - 1, ordered, name)


def sorted_pairs_table(keys: list[str], key_rank, names: list[str], name_rank) -> pa.Table:
    """The dictionary-encoded pair table of pairs already sorted by (key, name), given as ranks
    into the sorted distinct `keys` (every one used) and `names`: the key column's dictionary
    is the keys in order, the name column's the names in the order they first appear in it
    (as `dictionary_encode` of the sorted string columns makes them)."""
    import numpy as np  # numpy, pyarrow: loaded when a table is built, not by resident's importers
    import pyarrow as pa

    from .. import kernels  # imports pyarrow: only when a table is built

    key_col = pa.DictionaryArray.from_arrays(kernels.from_numpy(np.asarray(key_rank, dtype=np.int32)),
                                             pa.array(keys, pa.string()))
    present, first = np.unique(name_rank, return_index=True)
    by_first = present[np.argsort(first, kind="stable")]
    code_of = np.empty(len(names), dtype=np.int32)
    code_of[by_first] = np.arange(len(by_first), dtype=np.int32)
    name_col = pa.DictionaryArray.from_arrays(kernels.from_numpy(code_of[name_rank]),
                                              pa.array([names[i] for i in by_first.tolist()], pa.string()))
    return pa.table({"key": key_col, "name": name_col})
