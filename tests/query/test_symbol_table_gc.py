"""A follower's in-memory tables stay out of the cyclic GC while a view holds them, and are
freed with the view (gc.freeze is global, so this module keeps no other view open)."""

from __future__ import annotations

import gc
import weakref

from codeagent.indexer.build import BuildOptions, build
from codeagent.query import IndexFollower, get_symbol, open_index
from codeagent.query.symbol_table import SymbolTable, resident_table



def test_follower_table_follows_a_ref_swap(git_repo):
    git_repo.write("m.py", "def alpha():\n    pass\n")
    git_repo.commit()
    build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    follower = IndexFollower(git_repo.path, ref="main")
    try:
        with follower.view() as old:
            before = SymbolTable.load(old)
            assert get_symbol(old, "m.alpha").symbol.name == "alpha"
            assert resident_table(old) is before
        git_repo.write("m.py", "def alpha():\n    pass\n\n\ndef beta():\n    return 2\n")
        git_repo.commit()
        second = build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
        with follower.view() as new:
            assert new.manifest_id == second.manifest_id
            after = resident_table(new)
            assert after is not None and after is not before
            d = get_symbol(new, "m.beta")
            assert (d.symbol.name, d.symbol.line_start, d.spans[0].text) == ("beta", 5, "def beta():\n    return 2")
        assert "beta" not in {r.name for r in before.rows}
        assert {r.name for r in after.rows} == {"alpha", "beta"}
        assert gc.get_freeze_count() > 0  # rows out of the cyclic GC's way...
        old_table = weakref.ref(before)
        del before, old
        gc.collect()
        assert old_table() is None  # ...yet the retired manifest's table is freed
    finally:
        follower.close()
    assert gc.get_freeze_count() == 0


def test_closing_one_of_two_settled_views_keeps_the_other_frozen(git_repo):
    """A follower's watcher and a request can each open a view of the new manifest and load
    its tables; the one retired and closed first must not unfreeze the one that stays."""
    git_repo.write("m.py", "def alpha():\n    pass\n")
    git_repo.commit()
    build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    first, second = open_index(git_repo.path, ref="main"), open_index(git_repo.path, ref="main")
    try:
        for view in (first, second):
            view.keep_text_in_memory = True
            SymbolTable.load(view)
        first.close()
        assert gc.get_freeze_count() > 0
        first.close()  # closing twice changes nothing
        assert gc.get_freeze_count() > 0
    finally:
        first.close()
        second.close()
    assert gc.get_freeze_count() == 0


def test_a_damaged_resident_file_is_refused_before_it_is_mapped(git_repo):
    """Resident arrays are re-hashed against SUMS when a long-lived view first maps them (not
    at open: a request pays only for what it reads); a damaged one is refused, not read."""
    import pytest

    from codeagent.errors import StoreCorrupt
    from codeagent.format.resident import file_name

    git_repo.write("m.py", "def alpha():\n    pass\n")
    git_repo.commit()
    build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    with open_index(git_repo.path, ref="main") as view:
        path = view.path.parent / file_name("symbols", "rows")
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
        assert get_symbol(view, "m.alpha").symbol.name == "alpha"  # a one-shot view reads SQL
        view.keep_text_in_memory = True
        with pytest.raises(StoreCorrupt, match="resident.symbols.rows.arrow"):
            SymbolTable.load(view)
