"""Key indexes that hold no keys: their keys are read from a column of the rows they index
(format/resident.KeyIndex): as they are (`PermutedKeys`), or folded (`FoldedKeys`).

The symbols' `qualified_key` index (every row's qualified name, folded) and `fq_key` index
(the fully qualified name, folded, where that fold differs) held their keys: 8.4 MB of the
standard library's 175k keys, each a copy of a column of the rows lower-cased with its
separators made dots. Now, like the permuted indexes, they hold only the row numbers in key
order, and a reader folds the rows' column (`fold_key`) as its binary search reads it.

The keys were folded by DuckDB (`lower` and `replace`, format/resident._FOLD). Python's
`str.lower` agrees with it on ASCII but may not on every other character, and a binary
search over keys that disagree with the order they were sorted in would miss rows. So an
index is written without its keys only when `folds_exactly`: every key equals `fold_key` of
its column's value (`fold_array`, checked in Python for non-ASCII values only); otherwise it
keeps its `key` column, which readers read as before.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: format/resident.py is imported by the CLI's quick commands
    import numpy as np
    import pyarrow as pa

SEPARATORS = ("::", "->", "#", "/", "\\")  # made '.', in this order (as resident._FOLD)
STRIDE = 64  # FoldedKeys.span: the sampled keys' spacing
WALK = 4  # FoldedKeys.span: the entries of a key read one by one before a second search


def fold_key(value: str) -> str:
    """`value` lower-cased, its separators made '.': the key DuckDB's fold of it gives
    (wherever `folds_exactly` held at the assembly)."""
    out = value.lower()
    for sep in SEPARATORS:
        out = out.replace(sep, ".")
    return out


def fold_array(values: pa.Array) -> pa.Array:
    """`fold_key` of every value (None stays None): Arrow's kernels for ASCII values, Python's
    for the others."""
    import numpy as np  # with kernels (pyarrow): only when arrays are built or merged
    import pyarrow as pa

    from .. import kernels

    try:
        from pyarrow._compute import ReplaceSubstringOptions
    except ImportError:  # a pyarrow that moved it: the public module has it
        from pyarrow.compute import ReplaceSubstringOptions
    call = kernels.call_function
    out = call("utf8_lower", [values])
    for sep in SEPARATORS:
        out = call("replace_substring", [out], ReplaceSubstringOptions(sep, "."))
    ascii_ = call("coalesce", [call("string_is_ascii", [values]), pa.scalar(True)])
    other = np.flatnonzero(~ascii_.to_numpy(zero_copy_only=False))
    if len(other):
        folded = pa.array([fold_key(values[int(i)].as_py()) for i in other], pa.string())
        mask = call("invert", [ascii_])
        out = call("replace_with_mask", [out, mask, folded])
    return out


def folds_exactly(keys: pa.Array, values: pa.Array) -> bool:
    """Is every non-None key `fold_key` of its value (so a reader may fold the values)?"""
    import pyarrow as pa  # with kernels: only when arrays are built

    from .. import kernels

    same = kernels.call_function("equal", [fold_array(values), keys])
    valid = kernels.call_function("is_valid", [keys])
    bad = kernels.call_function("and_kleene", [valid, kernels.call_function("invert", [same])])
    return not kernels.call_function("coalesce", [bad, pa.scalar(True)]).to_numpy(zero_copy_only=False).any()


class FoldedKeys:
    """A folded index's keys in order: fold_key(column[rows[i]]) (what the binary search reads;
    `column` a StringColumn)."""

    __slots__ = ("_column", "_rows", "_array", "_every")

    def __init__(self, column, rows: np.ndarray, array: pa.Array) -> None:
        self._column, self._rows, self._array = column, rows, array
        self._every: list | None = None  # every STRIDE-th key, folded on the first look-up

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i: int) -> str | None:
        value = self._column[int(self._rows[i])]
        return None if value is None else fold_key(value)

    def __iter__(self) -> Iterator[str | None]:
        return (self[i] for i in range(len(self._rows)))

    def span(self, key: str) -> tuple[int, int]:
        """Where `key`'s entries are (KeyIndex.span). Folding a key costs ~4x reading one, so
        the search starts in a sample of every STRIDE-th key (bisected in C) and ends in
        its stride, then walks a few entries before it bisects again: ~8 keys folded, not 36."""
        every, n = self._every, len(self._rows)
        if every is None:  # built twice at worst (by racing threads): the same list
            every = self._every = [self[i] for i in range(0, n, STRIDE)]
        j = bisect.bisect_left(every, key)
        lo = hi = bisect.bisect_left(self, key, max(0, (j - 1) * STRIDE), min(n, j * STRIDE))
        while hi < n and hi - lo < WALK and self[hi] == key:
            hi += 1
        if hi - lo == WALK:  # a key of many entries
            hi = bisect.bisect_right(self, key, hi, min(n, bisect.bisect_right(every, key) * STRIDE))
        return lo, hi

    def key_array(self) -> pa.Array:
        """The keys in order, as one array."""
        from .columns import take_column  # imports pyarrow: only when a reader asks for the whole array

        return fold_array(take_column(self._array, self._rows))


class PermutedKeys:
    """A permuted index's keys in order: column[rows[i]] (what the binary search reads)."""

    __slots__ = ("_column", "_rows")

    def __init__(self, column, rows: np.ndarray) -> None:
        self._column, self._rows = column, rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i: int) -> str | None:
        return self._column[int(self._rows[i])]

    def __iter__(self) -> Iterator[str | None]:
        return (self[i] for i in range(len(self._rows)))
