"""The trigram pairs built from integer codes are the table the string pairs make."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.format import resident
from codeagent.format.name_pairs import trigram_table


def string_pairs_table(names: set[str]):
    """The trigram table as it was built before: Python string pairs, sorted and encoded."""
    return resident.pairs_table([(resident.trigram_key(g, len(n)), n)
                                 for n in names for g in resident.trigrams(n)])


# Names of mixed lengths (9 and 10 sort "10" < "9" as key text), repeated letters (a name's
# repeated trigrams count once), and code points past the BMP (4 bytes in UTF-8).
NAMES = st.sets(st.text(st.sampled_from("aab_Zé\x00\u4e00\U0001F600"), max_size=12), max_size=40)


@settings(max_examples=200, deadline=None)
@given(NAMES)
def test_trigram_table_is_the_string_pairs_table(names: set[str]) -> None:
    built, expected = trigram_table(names), string_pairs_table(names)
    assert built.schema == expected.schema
    assert built.equals(expected)
    assert built.column("key").to_pylist() == expected.column("key").to_pylist()
    assert built.column("name").chunk(0).dictionary.to_pylist() == \
        expected.column("name").chunk(0).dictionary.to_pylist()


def test_trigram_table_rows() -> None:
    table = trigram_table({"ab", "aaaaaaaaaa"})
    pairs = list(zip(table.column("key").to_pylist(), table.column("name").to_pylist()))
    assert pairs == sorted(pairs)
    assert ("\x02\x02a\x002", "ab") in pairs and ("aaa\x0010", "aaaaaaaaaa") in pairs
    assert len(pairs) == 4 + 3 + 2  # "ab": 4 trigrams; the long name: 3 edge ones + "aaa" + 2 tail
    assert trigram_table(set()).num_rows == 0
