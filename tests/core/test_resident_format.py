"""The resident arrays (format/resident.py): a key index answers like the dictionary it
replaces, for any keys, and what a reader maps from the files is what was written."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.format import columns, resident
from codeagent.format.resident import KeyIndex, StringColumn
from codeagent.query.names import NameIndex, SymbolRow

# Few distinct keys (so they repeat), any code points (bytewise order must be str order).
KEYS = st.lists(st.one_of(st.none(), st.sampled_from(["", "a", "ab", "B", "é", "z\u4e2d", "a.b"]),
                          st.text(max_size=6)), max_size=60)


def _multimap(keys: list[str | None]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        if k is not None:
            out.setdefault(k, []).append(i)
    return out


def _mapped(table: pa.Table) -> pa.Table:
    """`table` written as a resident part and memory-mapped back."""
    with tempfile.TemporaryDirectory() as tmp:
        resident.write_arrays(Path(tmp), "test", {"part": table})
        path = Path(tmp) / resident.file_name("test", "part")
        return pa.ipc.open_file(pa.memory_map(str(path), "r")).read_all()


@settings(max_examples=150, deadline=None)
@given(KEYS, st.lists(st.text(max_size=4), max_size=5))
def test_key_index_answers_like_a_dictionary(keys, probes):
    expected = _multimap(keys)
    column = pa.array(keys, pa.string())
    permuted = [KeyIndex(KeyIndex.build(keys, permuted=True), column),  # keys read from the rows' column
                KeyIndex(_mapped(KeyIndex.build(keys, permuted=True)), column.dictionary_encode())]
    assert KeyIndex.build(keys, permuted=True).column_names == ["row"]  # no key stored
    assert all(list(p_.keys) == sorted(k for k in keys if k is not None) for p_ in permuted)
    for index in (KeyIndex(KeyIndex.build(keys)), KeyIndex(_mapped(KeyIndex.build(keys))), *permuted):
        for key in [*expected, *probes]:
            rows = expected.get(key, [])
            assert index.rows_of(key) == rows, key
            assert index.first(key) == (rows[0] if rows else None), key
            lo, hi = index.span(key)
            assert index.rows[lo:hi].tolist() == rows, key


@settings(max_examples=100, deadline=None)
@given(KEYS)
def test_string_column_reads_what_was_written(values):
    plain = pa.array(values, pa.string())
    table = pa.table({"plain": plain, "dict": plain.dictionary_encode()})
    for t in (table, _mapped(table)):
        for name in ("plain", "dict"):
            column = StringColumn(t.column(name))
            assert len(column) == len(values)
            assert list(column) == values, name
            assert resident.pylist(t.column(name)) == values, name  # a dictionary taken by its codes


HEX_IDS = st.lists(st.one_of(st.none(), st.binary(min_size=8, max_size=8).map(bytes.hex)), max_size=40)


@settings(max_examples=100, deadline=None)
@given(HEX_IDS, st.lists(st.text(alphabet="0123456789abcdefA", max_size=17), max_size=4),
       st.integers(0, 3))
def test_hex_ids_kept_as_bytes_read_back_as_the_strings(ids, probes, cut):
    """A HEX column of hex ids is kept as bytes and read back (per row, taken, through a
    permuted KeyIndex, after a slice) as the strings; a column with any other value is not."""
    table = resident.hexed(pa.table({"symbol_id": pa.array(ids, pa.string())}))
    assert pa.types.is_fixed_size_binary(table.column("symbol_id").type)
    for t in (table, _mapped(table)):
        column = resident.rows_column(t, "symbol_id")
        assert list(column) == ids
        assert resident.take_column(column, pa.array(range(len(ids))[::-1], pa.int64())).to_pylist() == ids[::-1]
        assert list(resident.HexColumn(resident.whole(t.column("symbol_id")).slice(cut))) == ids[cut:]
        index = KeyIndex(KeyIndex.build(ids, permuted=True), column)
        for key in [k for k in ids if k is not None] + probes:
            assert index.rows_of(key) == [i for i, k in enumerate(ids) if k == key]
    for other in ("0123456789ABCDEF", "0123", "", "0123456789abcdeg"):
        kept = resident.hexed(pa.table({"symbol_id": pa.array([*ids, other], pa.string())}))
        assert kept.column("symbol_id").type == pa.string()


@settings(max_examples=100, deadline=None)
@given(HEX_IDS, st.lists(st.integers(0, 45), max_size=12), st.integers(0, 3))
def test_hex_id_dictionaries_kept_as_bytes_read_back_as_the_strings(ids, taken, cut):
    """A dictionary-encoded HEX column (the edges' src_id) keeps its dictionary as bytes and
    its codes; read per row, through a permuted KeyIndex, as taken rows (`hex_rows`, which
    decodes only those) and merged with rows kept as strings (`same_hex`), it holds the
    strings."""
    table = resident.hexed(pa.table({"src_id": pa.array(ids, pa.string()).dictionary_encode()}))
    assert table.column("src_id").type.value_type == pa.binary(8)
    rows = pa.array([i for i in taken if i < len(ids)], pa.int64())
    for t in (table, _mapped(table)):
        column = resident.rows_column(t, "src_id")
        assert list(StringColumn(column)) == ids
        taken = resident.take_column(column, rows)
        assert resident.hex_rows(taken).to_pylist() == resident.pylist(taken) == [ids[i] for i in rows.to_pylist()]
        assert resident.hex_rows(resident.whole(column).slice(cut)).to_pylist() == ids[cut:]
        index = KeyIndex(KeyIndex.build(ids, permuted=True), column)
        assert index.key_array.to_pylist() == sorted(k for k in ids if k is not None)
        for key in {k for k in ids if k is not None}:
            assert index.rows_of(key) == [i for i, k in enumerate(ids) if k == key]
        other = pa.table({"src_id": pa.array(["file:a.py", None], pa.string()).dictionary_encode()})
        assert resident.hexed(other).column("src_id").type.value_type == pa.string()
        both = pa.concat_tables(columns.same_hex([t.replace_schema_metadata(None), other]),
                                promote_options="permissive").combine_chunks()
        assert both.column("src_id").to_pylist() == [*ids, "file:a.py", None]


def test_a_hex_id_dictionary_of_narrow_codes_finds_every_key():
    """5000 distinct ids: int16 codes once mapped, whose byte offsets (8 a value) pass 32767;
    rows taken from them read back as the ids, few or many."""
    ids = [(i * 2654435761 % (1 << 64)).to_bytes(8, "big").hex() for i in range(5000)] * 2
    table = _mapped(resident.hexed(pa.table({"dst_id": pa.array(ids, pa.string()).dictionary_encode()})))
    assert table.column("dst_id").type == pa.dictionary(pa.int16(), pa.binary(8))
    index = KeyIndex(KeyIndex.build(ids, permuted=True), resident.rows_column(table, "dst_id"))
    assert all(index.rows_of(ids[i]) == [i, i + 5000] for i in range(0, 5000, 7))
    for rows in (range(9990, 10000), range(0, 10000, 13)):  # decoded one by one, then as an array
        taken = resident.take_column(table.column("dst_id"), pa.array(rows, pa.int64()))
        assert resident.pylist(taken) == [ids[i] for i in rows]


def _brute_prefix(names: list[str], prefix: str, cap: int) -> list[str]:
    found = sorted({n.lower() for n in names if n.lower().startswith(prefix.lower())},
                   key=lambda n: (len(n), n))
    return found[:cap]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="abAB_é", min_size=1, max_size=5), min_size=1, max_size=40),
       st.text(alphabet="abAB_é", max_size=3), st.integers(1, 10))
def test_name_index_prefix_and_exact_match_the_brute_force(names, prefix, cap):
    rows = [SymbolRow(f"id{i}", f"s{i}", "p.py", "python", "function", n, f"m.{n}", f"m.{n}", "",
                      i + 1, i + 1, True, False) for i, n in enumerate(names)]
    keys = [(n.lower(), f"m.{n}".lower(), f"m.{n}".lower()) for n in names]
    index = NameIndex(rows, keys)
    assert index.prefix(prefix, cap) == _brute_prefix(names, prefix, cap)
    for n in names + [prefix]:
        assert index.exact_name(n) == [i for i, m in enumerate(names) if m.lower() == n.lower()]
        assert index.exact_qualified(f"M.{n}") == [i for i, m in enumerate(names) if m.lower() == n.lower()]
    assert index.names == sorted({n.lower() for n in names})


def test_map_arrays_refuses_another_version(tmp_path, monkeypatch):
    table = KeyIndex.build(["a", "b"])
    resident.write_arrays(tmp_path, "refs", {"rows": table})
    assert resident.map_arrays(tmp_path, "refs") is not None
    monkeypatch.setattr(resident, "RESIDENT_VERSION", resident.RESIDENT_VERSION + 1)
    assert resident.map_arrays(tmp_path, "refs") is None  # the reader builds them from SQL
    assert resident.map_arrays(tmp_path / "absent", "refs") is None


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="abAB_1é", min_size=1, max_size=8), min_size=1, max_size=30),
       st.lists(st.sampled_from(["a", "b", "ab", "1", "é", "ba"]), min_size=1, max_size=3))
def test_subtoken_names_match_the_brute_force(names, tokens):
    from codeagent.tokenize import split_identifier

    rows = [SymbolRow(f"id{i}", f"s{i}", "p.py", "python", "function", n, n, n, "", 1, 1, True, False)
            for i, n in enumerate(names)]
    index = NameIndex(rows, [(n.lower(), n.lower(), n.lower()) for n in names])
    def has(lower: str, token: str) -> bool:  # any spelling of the name has the sub-token
        return any(token in split_identifier(n) for n in names if n.lower() == lower)

    want = {n.lower() for n in names if all(has(n.lower(), t) for t in tokens)}
    found = index.subtoken_names(tokens)
    assert found == sorted(want, key=lambda n: (len(n), n))


def _dict_fuzzy(names: list[str], query: str, max_distance: int, cap: int) -> list[tuple[str, int]]:
    """The fuzzy search over a dictionary of trigram postings (what the resident table replaced)."""
    from collections import Counter

    from codeagent.query.names import MAX_FUZZY_GRAMS, damerau_levenshtein, trigrams

    q, distinct = query.lower(), sorted({n.lower() for n in names})
    tri: dict = {}
    for name in distinct:
        for g in trigrams(name):
            tri.setdefault((g, len(name)), []).append(name)
    lengths = range(max(len(q) - max_distance, 1), len(q) + max_distance + 1)
    postings = {g: [tri.get((g, n), ()) for n in lengths] for g in trigrams(q)}
    grams = sorted(postings, key=lambda g: sum(map(len, postings[g])))[:MAX_FUZZY_GRAMS]
    need = max(1, len(grams) - 4 * max_distance)
    counts: Counter = Counter()
    for g in grams:
        for found in postings[g]:
            counts.update(found)
    ranked = sorted((kv for kv in counts.items() if kv[1] >= need and kv[0] != q), key=lambda kv: -kv[1])
    out = [(n, d) for n, _ in ranked[:cap * 8] if (d := damerau_levenshtein(q, n, max_distance)) <= max_distance]
    return sorted(out, key=lambda nd: (nd[1], len(nd[0]), nd[0]))[:cap]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="abcdAé", min_size=1, max_size=7), min_size=1, max_size=40),
       st.text(alphabet="abcdAé", min_size=1, max_size=7), st.integers(1, 2))
def test_fuzzy_names_match_the_dictionary_search(names, query, distance):
    rows = [SymbolRow(f"id{i}", f"s{i}", "p.py", "python", "function", n, n, n, "", 1, 1, True, False)
            for i, n in enumerate(names)]
    index = NameIndex(rows, [(n.lower(), n.lower(), n.lower()) for n in names])
    assert index.fuzzy_names(query, distance, cap=500) == _dict_fuzzy(names, query, distance, cap=500)
