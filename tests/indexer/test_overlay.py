"""Work-tree overlays (indexer/assemble/overlay.py, format/overlay.py): what a one-file edit
writes, and that overlay + base answers exactly what a clean build of the same tree answers."""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from codeagent import format as fmt
from codeagent.format.manifest import load_manifest, paths_changed
from codeagent.format.overlay import MERGED_TABLES, OVERLAY_FILE, OVERLAY_MARKER
from codeagent.indexer.assemble import overlay
from codeagent.indexer.build import BuildOptions, build
from codeagent.indexer.maintenance import verify_store
from codeagent.format import resident
from codeagent.format.folded import fold_key
from codeagent.query import callees, callers, grep, open_index, search, SearchRequest
from codeagent.query import IndexFollower
from codeagent.query.memtext import resident_texts, texts_of
from codeagent.query.overlay_arrays import LAYERED, MERGES, changed_rows, graph_changed, overlay_arrays, since_previous
from codeagent.query.symbol_table import SymbolTable, load_sql
from codeagent.store import Store
from repo_helpers import examples

# Modules whose functions call each other by plain and imported names, so an edit in one file
# changes how calls in the others resolve (the graph part of the overlay).
NAMES = ["alpha", "beta", "gamma", "delta"]
FILES = ["a.py", "b.py", "pkg/__init__.py", "pkg/c.py", "pkg/d.py", "notes.md"]


def _module(defs: list[str], calls: list[str], imports: list[str]) -> str:
    lines = [f"from pkg.c import {name}" for name in imports]
    for i, name in enumerate(defs):
        body = "\n".join(f"    {c}()" for c in calls) or "    pass"
        lines.append(f"def {name}():\n{body}\n")
        if i == 0:
            lines.append(f"class K{name.title()}:\n    def {name}(self):\n        return {name}()\n")
    return "\n".join(lines) + "\n"


SUBSETS = st.lists(st.sampled_from(NAMES), max_size=3, unique=True)
CONTENT = st.one_of(
    st.builds(_module, SUBSETS, SUBSETS, SUBSETS),
    st.sampled_from(["# Notes\n\nalpha beta words\n", "X = 1\n", "def broken(:\n"]),
)
EDIT = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(FILES), CONTENT),
    st.tuples(st.just("delete"), st.sampled_from(FILES), st.just("")),
    st.tuples(st.just("rename"), st.sampled_from(FILES), st.sampled_from(FILES)),
)
SUPPRESS = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


def _apply(root: Path, edit: tuple[str, str, str]) -> None:
    kind, path, arg = edit
    target = root / path
    if kind == "write":
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(arg)
    elif kind == "delete":
        target.unlink(missing_ok=True)
    elif target.exists() and arg != path:
        (root / arg).parent.mkdir(parents=True, exist_ok=True)
        target.replace(root / arg)


def _tables(view) -> dict[str, list[tuple]]:
    """Every row of every table the queries read, as a sorted multiset."""
    return {t: sorted(view.sql(f"SELECT * FROM {t}"), key=repr) for t in MERGED_TABLES}


def _answers(view) -> dict[str, object]:
    """What the engine answers: symbol, text and regex search, grep, callers and callees."""
    out: dict[str, object] = {}
    for name in NAMES:
        for mode in ("symbol", "text"):
            resp = search(view, SearchRequest(name, mode=mode, limit=50))
            out[f"{mode}:{name}"] = sorted((h.path, h.line_start, h.line_end, h.kind, h.name,
                                            round(h.score, 6)) for h in resp.results)
        for fn in (callers, callees):
            try:
                resp = fn(view, name)
            except Exception as exc:  # ambiguous or unknown: the same error both ways
                out[f"{fn.__name__}:{name}"] = type(exc).__name__
                continue
            out[f"{fn.__name__}:{name}"] = sorted(
                (e.path, e.line, e.kind, e.confidence, e.target, e.dst_path) for e in resp.edges)
    # a long-lived reader scans its mapped texts (textscan.py), a one-shot one runs SQL
    for pattern, regex, case_sensitive in [(r"def (alpha|beta)\b", True, True), (r"^\s+return \w+\(\)", True, True),
                                           ("ALPHA", False, False), ("words", False, True)]:
        r = grep(view, pattern, regex=regex, case_sensitive=case_sensitive, context=1)
        out[f"grep:{pattern}"] = ([m.to_dict() for m in r.matches], r.total_matches, r.files_matched,
                                  r.files_searched, r.truncated)
    return out


def _clean(tree: Path, into: Path):
    shutil.copytree(tree, into, ignore=shutil.ignore_patterns(".codeagent"))
    build(BuildOptions(repo=into, jobs=1))
    return open_index(into)


def _kinds(store: Store) -> set[str]:
    """`overlay` / `full` for each assembled directory of the store (`chain` too for an
    overlay with layers beneath its top)."""
    out = set()
    for d in (store.root / fmt.ASSEMBLED_DIR).iterdir():
        out.add("overlay" if (d / OVERLAY_MARKER).exists() else "full")
        if (d / OVERLAY_MARKER).exists() and json.loads((d / OVERLAY_MARKER).read_text()).get("layers"):
            out.add("chain")
    return out


def _plain(table) -> dict[str, list]:
    """A table's columns as Python lists (dictionary-encoded ones decoded)."""
    return {n: table.column(n).to_pylist() for n in table.column_names}


def _resident_parts_agree(view) -> None:
    """Each resident structure an overlay merges from its base's arrays holds exactly the
    arrays built from its merged views (what a full assembly of its manifest writes)."""
    sqls = {"symbols": load_sql(view), "refs": resident.REFS_SQL, "edges": resident.EDGES_SQL,
            "texts": resident.TEXT_SHARDS_SQL, "postings": resident.POSTINGS_SQL, "names": resident.NAMES_SQL}
    assert set(sqls) == set(MERGES) | {"names"}
    for structure, sql in sqls.items():
        if structure in LAYERED:  # never merged: read layered (below)
            assert overlay_arrays(view, structure, sql) is None
            continue
        merged = overlay_arrays(view, structure, sql)
        built = resident.STRUCTURES[structure][0](view.cursor().sql(sql).to_arrow_table())
        assert merged is not None and set(merged) == set(built)
        for part in built:
            assert _plain(merged[part]) == _plain(built[part]), f"{structure}.{part} differs"
        if structure == "symbols":
            _lazy_indexes_agree(view, built)
    read = texts_of(view, view.cursor().sql(resident.TEXT_SHARDS_SQL).to_arrow_table())
    texts = dict(zip(read.column("path").to_pylist(), read.column("text").to_pylist()))
    every = set(texts) | view.masked_paths("files") | {r[0] for r in view.sql("SELECT path FROM base.main.files")}
    layered = resident_texts(view)
    assert {p: layered.get(p) for p in every} == {p: texts.get(p) for p in every}


def _lazy_indexes_agree(view, built: dict) -> None:
    """The symbol table's key indexes merged on first use (by this reader's look-ups, or
    all at once) are those built from the merged views."""
    lazy = overlay_arrays(view, "symbols", load_sql(view), lazy=True)
    assert _plain(lazy["rows"]) == _plain(built["rows"])
    table = SymbolTable.load(view)
    for part in resident.SYMBOL_INDEXES:
        assert callable(lazy[part])
        assert _plain(lazy[part]()) == _plain(built[part]), f"lazy symbols.{part} differs"
        index = table._index[part]
        made = index.made() if hasattr(index, "made") else index
        rows = built[part].column("row").to_pylist()
        if "key" in built[part].column_names:
            keys = built[part].column("key").to_pylist()
        elif part in resident.FOLDED:  # folded: no keys stored, the rows' column folded
            keys = [fold_key(_value(built["rows"], resident.FOLDED[part], i)) for i in rows]
        else:  # permuted: no keys stored
            keys = [_value(built["rows"], part, i) for i in rows]
        assert made.key_array.to_pylist() == keys
        assert list(made.keys) == keys
        assert made.rows.tolist() == rows


def _value(rows, name: str, i: int):
    """Row i's `name` (a column of the rows, or one kept in parts: resident.JOINED)."""
    column = resident.rows_column(rows, name)
    return column[i] if isinstance(column, resident.READ_COLUMNS) else column[i].as_py()


def _follows(follower: IndexFollower, root: Path) -> None:
    """A long-lived reader that followed every manifest so far answers as a one-shot reader
    of the current one (its resident structures merged from the base's arrays)."""
    with follower.view() as view, open_index(root) as fresh:
        assert view.manifest_id == fresh.manifest_id
        if view.base_id is not None:
            _resident_parts_agree(view)
        assert _answers(view) == _answers(fresh)


def _check_sequence(start: dict[str, str], edits: list[tuple[str, str, str]],
                    watching: bool = False, later: list[bool] = ()) -> set[str]:
    """Build after each edit (the i-th with graph_later when `later[i]`: published before its
    graph step, which the next build runs), then once more, and compare with a clean build."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        root.mkdir()
        for path, content in start.items():
            _apply(root, ("write", path, content))
        build(BuildOptions(repo=root, jobs=1))
        kinds = set()
        follower = IndexFollower(root)
        follower.warm_on_swap = watching  # its watcher: inotify, warm loads, a spare connection
        try:
            for i, edit in enumerate(edits):
                _apply(root, edit)
                done = build(BuildOptions(repo=root, jobs=1, graph_later=i < len(later) and later[i]))
                kinds |= _kinds(Store(root / ".codeagent"))
                with open_index(root) as view:
                    assert view.graph_pending == done.graph_pending
                    kinds |= {"pending"} if done.graph_pending else set()
                _follows(follower, root)
            assert not build(BuildOptions(repo=root, jobs=1)).graph_pending
            _follows(follower, root)
        finally:
            follower.close()
        with open_index(root) as got, _clean(root, Path(tmp) / "clean") as want:
            # the same files and header; the ids differ when the work tree's manifest is a delta
            assert (load_manifest(got.store, got.manifest_id).to_dict()
                    == load_manifest(want.store, want.manifest_id).to_dict())
            got_tables, want_tables = _tables(got), _tables(want)
            for table in MERGED_TABLES:
                assert got_tables[table] == want_tables[table], f"{table} differs after {edits}"
            assert _answers(got) == _answers(want), f"answers differ after {edits}"
        assert verify_store(Store(root / ".codeagent")).ok
        return kinds


START = st.fixed_dictionaries({p: CONTENT for p in FILES[:4]})


# One property draws both reader modes and any mix of graph_later builds: the three it merged
# (plain, watching, graph_later) ran 8 examples each, every example a start tree and up to four
# edits built one by one beside a clean build (~3 s each on 2 cores). The fast tier runs half
# of what it ran here and in the two below (6, 4, 4: 43 s less of CI's 10 minutes; hypothesis
# draws new examples on every run); CODEAGENT_LONG=1 runs 60, 40 and 40.
@given(start=START, edits=st.lists(EDIT, min_size=1, max_size=4), watching=st.booleans(),
       later=st.lists(st.booleans(), max_size=4))
@settings(max_examples=examples(6, long=60), deadline=None, suppress_health_check=SUPPRESS)
def test_overlay_answers_what_a_clean_build_answers(start, edits, watching, later):
    """Any edits, each built as an overlay, answer what a clean build of the tree answers, to
    a one-shot reader and to a long-lived one. `watching`: the long-lived reader's watcher warms
    each new manifest as the build swaps the ref, racing the reader's own requests. `later`:
    builds that publish before the graph step (graph_later) and leave it to the next build, in
    any order with ones that run it: once it has run, the same answers."""
    _check_sequence(start, edits, watching=watching, later=later)


@given(start=START, edits=st.lists(EDIT, min_size=2, max_size=5))
@settings(max_examples=examples(4, long=40), deadline=None, suppress_health_check=SUPPRESS)
def test_consolidation_answers_what_a_clean_build_answers(start, edits):
    """With overlays of at most one file, sequences cross consolidations too."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(overlay, "OVERLAY_MAX_FILES", 1)
        _check_sequence(start, edits)


@given(start=START, edits=st.lists(EDIT, min_size=3, max_size=6),
       later=st.lists(st.booleans(), max_size=6), bound=st.integers(2, 4))
@settings(max_examples=examples(4, long=40), deadline=None, suppress_health_check=SUPPRESS)
def test_overlay_chains_answer_what_a_clean_build_answers(start, edits, later, bound):
    """Chains of layers (each build writing only the change since the previous overlay),
    their merges and their flattening at a small bound, with builds published before their
    graph among them: the same rows and answers as a clean build."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(overlay, "MAX_LAYERS", bound)
        _check_sequence(start, edits, later=later)


def test_layers_kept_grows_the_chain_by_tiers_and_flattens_past_the_bound():
    assert overlay.layers_kept([], 1) == 0
    assert overlay.layers_kept([1], 1) == 0  # the top masks no more than the new layer: taken in
    assert overlay.layers_kept([2], 1) == 1
    assert overlay.layers_kept([4, 2], 1) == 2
    assert overlay.layers_kept([4, 2, 1], 1) == 0  # 1 + 1 takes in 2, then 4 (a binary counter)
    assert overlay.layers_kept([5, 2, 1], 1) == 1
    assert overlay.layers_kept([8, 4, 2, 1], 1) == 0
    assert overlay.layers_kept([9, 4, 2, 1], 1) == 1
    assert overlay.layers_kept([50, 40, 30, 20, 10, 5, 3], 1) == 7
    assert overlay.layers_kept([50, 40, 30, 20, 10, 5, 3, 2], 1) == 0  # a ninth file: flattened


def test_each_build_writes_only_its_change_as_a_layer_linked_to_the_previous_ones(git_repo):
    """Distinct-file edits grow a chain: each top masks the paths changed since the previous
    overlay (or those of the layers it took in), the layers beneath are the previous
    overlays' files linked, not copied; verify checks every layer, and the previous
    directories can go (gc) while the chain stays servable."""
    from codeagent.indexer.maintenance import gc_store

    git_repo.write_many({f"m{i}.py": f"def f{i}():\n    return f{(i + 1) % 30}()\n" for i in range(30)})
    build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    ids, tops = [], []
    for i in (3, 4, 5):
        git_repo.write(f"m{i}.py", f"def f{i}():\n    return 0\n\ndef added{i}():\n    pass\n")
        ids.append(build(BuildOptions(repo=git_repo.path, jobs=1)).manifest_id)
        tops.append(store.assembled_dir(ids[-1]) / OVERLAY_FILE)
    import duckdb

    def masks(path: Path) -> list[str]:
        with duckdb.connect(str(path), read_only=True) as con:
            return sorted(r[0] for r in con.execute("SELECT path FROM mask_files").fetchall())
    # m3 (1), m4 takes in m3 (1 <= 1): [m3, m4]; m5 keeps it beneath (2 > 1): [m3 m4] <- [m5]
    assert masks(tops[1]) == ["m3.py", "m4.py"] and masks(tops[2]) == ["m5.py"]
    directory = store.assembled_dir(ids[2])
    marker = json.loads((directory / OVERLAY_MARKER).read_text())
    assert marker["layers"] == ["layer-0.duckdb"] and marker["version"] == 3
    assert (directory / "layer-0.duckdb").stat().st_ino == tops[1].stat().st_ino
    with open_index(git_repo.path) as view:
        assert view.masked_paths("files") == {"m3.py", "m4.py", "m5.py"}
        assert sorted(r[0] for r in view.sql("SELECT name FROM symbols WHERE name LIKE 'added%'")) == \
            ["added3", "added4", "added5"]
        assert view.sql("SELECT count(*) FROM files") == [(30,)]
    assert verify_store(store).ok
    gc_store(store)
    assert not store.is_assembled(ids[1])  # the linked layer's first directory is gone...
    with open_index(git_repo.path) as view:  # ...and its rows are still read from the link
        assert view.sql("SELECT path FROM symbols WHERE name = 'added3'") == [("m3.py",)]
    assert verify_store(store).ok
    layer = directory / "layer-0.duckdb"
    data = bytearray(layer.read_bytes())
    data[len(data) // 2] ^= 0xFF
    layer.write_bytes(bytes(data))
    assert not verify_store(store).ok


def test_a_one_file_edit_writes_an_overlay_and_keeps_its_base(git_repo):
    git_repo.write_many({f"m{i}.py": f"def f{i}():\n    return f{(i + 1) % 30}()\n" for i in range(30)})
    first = build(BuildOptions(repo=git_repo.path, jobs=1))
    git_repo.write("m3.py", "def f3():\n    return f7()\n\ndef added():\n    pass\n")
    second = build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    directory = store.assembled_dir(second.manifest_id)
    marker = json.loads((directory / OVERLAY_MARKER).read_text())
    assert marker["base"] == first.manifest_id
    assert not (directory / fmt.DUCKDB_FILE).exists()
    assert (directory / OVERLAY_FILE).stat().st_size < 1 << 20
    with open_index(git_repo.path) as view:
        assert view.base_id == first.manifest_id
        assert [r[0] for r in view.sql("SELECT path FROM symbols WHERE name = 'added'")] == ["m3.py"]
        assert view.sql("SELECT count(*) FROM files")[0][0] == 30
        assert view.masked_paths("symbols") == {"m3.py"}
        assert view.sql("SELECT count(*) FROM overlay.main.symbols") == [(2,)]
    git_repo.write("m4.py", "def f4():\n    return 1\n")
    third = build(BuildOptions(repo=git_repo.path, jobs=1))
    assert json.loads((store.assembled_dir(third.manifest_id) / OVERLAY_MARKER).read_text())["base"] == first.manifest_id
    assert store.is_assembled(first.manifest_id)  # the base is kept while an overlay names it
    assert verify_store(store).ok


def test_gc_keeps_an_overlays_base_and_what_consolidating_it_reads(git_repo):
    from codeagent.indexer.maintenance import gc_store

    git_repo.write_many({"a.py": "def f():\n    return g()\n", "b.py": "def g():\n    return 1\n"})
    first = build(BuildOptions(repo=git_repo.path, jobs=1))
    git_repo.write("b.py", "def g():\n    return 2\n")
    build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    gc_store(store)
    assert store.is_assembled(first.manifest_id) and store.has(first.manifest_id)
    git_repo.write("a.py", "def f():\n    return 3\n")
    consolidated = build(BuildOptions(repo=git_repo.path, jobs=1, overlay=False))
    assert store.assembly_base(consolidated.manifest_id) is None
    with open_index(git_repo.path) as view:
        assert view.base_id is None
        assert resident_texts(view).get("b.py") == "def g():\n    return 2\n"
        assert view.sql("SELECT count(*) FROM edges WHERE kind = 'calls'") == [(0,)]
    assert verify_store(store).ok


def test_a_damaged_base_is_reported_and_the_next_build_mends_it(git_repo):
    from codeagent.query.status import store_status

    git_repo.write_many({"a.py": "def f():\n    return 1\n", "b.py": "def g():\n    return 2\n"})
    first = build(BuildOptions(repo=git_repo.path, jobs=1))
    git_repo.write("b.py", "def g():\n    return 3\n")
    build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    db = store.assembled_dir(first.manifest_id) / fmt.DUCKDB_FILE
    data = bytearray(db.read_bytes())
    data[len(data) // 3:len(data) // 3 + 64] = bytes(b ^ 0xFF for b in data[len(data) // 3:len(data) // 3 + 64])
    db.write_bytes(bytes(data))
    status = store_status(git_repo.path)
    assert status["worktree"]["state"] == "damaged", status["worktree"]
    git_repo.write("a.py", "def f():\n    return 4\n")
    mended = build(BuildOptions(repo=git_repo.path, jobs=1))
    assert store.assembly_base(mended.manifest_id) is None  # rebuilt whole, not on the damaged base
    with open_index(git_repo.path) as view:
        assert view.sql("SELECT name FROM symbols ORDER BY name") == [("f",), ("g",)]


def test_the_next_overlay_follows_only_the_change_since_the_previous_one(git_repo, monkeypatch):
    """An overlay after an overlay on the same base starts its graph step from the previous
    overlay's rows and follows only the change since that manifest; its graph is still the one
    a clean build of the tree has."""
    git_repo.write_many({"a.py": "from b import g\n\ndef f():\n    return g()\n",
                         "b.py": "def g():\n    return 1\n", "c.py": "def h():\n    return f()\n"})
    first = build(BuildOptions(repo=git_repo.path, jobs=1))
    git_repo.write("b.py", "def g():\n    return 2\n\ndef g2():\n    return g()\n")
    second = build(BuildOptions(repo=git_repo.path, jobs=1))
    seen = []
    layered_on = overlay._layered_on
    monkeypatch.setattr(overlay, "_layered_on", lambda *a: seen.append(layered_on(*a)) or seen[-1])
    git_repo.write("c.py", "from b import g2\n\ndef h():\n    return g2()\n")
    third = build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    assert store.assembly_base(third.manifest_id) == first.manifest_id
    (path, remove, insert, own_graph, *_), = seen
    assert path == store.assembled_dir(second.manifest_id) / OVERLAY_FILE and own_graph
    assert remove == {"c.py"} and [e.path for e in insert] == ["c.py"]
    with open_index(git_repo.path) as view:
        got = sorted(view.sql("SELECT src_path, kind, dst_path, target FROM edges WHERE kind <> 'contains'"))
    clean = Path(tempfile.mkdtemp()) / "clean"
    shutil.copytree(git_repo.path, clean, ignore=shutil.ignore_patterns(".codeagent"))
    build(BuildOptions(repo=clean, jobs=1))
    with open_index(clean) as view:
        assert got == sorted(view.sql("SELECT src_path, kind, dst_path, target FROM edges WHERE kind <> 'contains'"))
    assert ("c.py", "calls", "b.py", "g2") in got
    shutil.rmtree(clean.parent, ignore_errors=True)


def test_a_following_reader_merges_only_the_files_changed_since_its_last_view(git_repo):
    """A long-lived reader's next overlay view starts from the structures the view before it
    merged and merges in only the files changed since that view, not every file changed since
    the base; when the graph step lands, only the paths whose graph rows it changed."""
    git_repo.write_many({f"m{i}.py": f"def f{i}():\n    return f{(i + 1) % 30}()\n" for i in range(30)})
    build(BuildOptions(repo=git_repo.path, jobs=1))
    follower = IndexFollower(git_repo.path)
    follower.warm_on_swap = False
    sqls = {"symbols": None, "refs": resident.REFS_SQL, "postings": resident.POSTINGS_SQL,
            "edges": resident.EDGES_SQL}
    try:
        for i in range(4):
            if i < 3:  # a new caller of f7 in each: the graph step changes edges of other files
                git_repo.write(f"m{i}.py", f"def f{i}_new():\n    return f7()\n")
            assert build(BuildOptions(repo=git_repo.path, jobs=1, graph_later=i < 3)).graph_pending == (i < 3)
            with follower.view() as view:
                sqls["symbols"] = load_sql(view)
                assert view.masked_paths("files") == {f"m{k}.py" for k in range(min(i, 2) + 1)}
                assert view.graph_pending == (i < 3)
                for structure, sql in sqls.items():
                    before = view.previous.get((structure, sql))
                    assert (before is None) == (i == 0)
                    got = since_previous(view, structure, sql)
                    assert (got is None) == (i == 0)
                    if i:
                        changed = paths_changed(view.store, before.manifest_id, view.manifest_id)
                        assert changed == ({f"m{i}.py"} if i < 3 else set())
                        if i == 3 and structure in ("symbols", "edges"):  # the graph landed
                            moved = graph_changed(view, before.graph_file, list(MERGES[structure].masks[-1:]))
                            edited = {"m0.py", "m1.py", "m2.py"}  # and m29.py's call of f0, gone
                            assert moved == (edited if structure == "symbols" else edited | {"m29.py"})
                        view.previous[(structure, sql)] = before
                    again = overlay_arrays(view, structure, sql)  # kept in view.merged for the next view
                    built = resident.STRUCTURES[structure][0](view.cursor().sql(sql).to_arrow_table())
                    for part in built:
                        for merged in filter(None, (got, again)):
                            assert _plain(merged[part]) == _plain(built[part]), f"{structure}.{part} differs ({i})"
    finally:
        follower.close()


def test_a_view_whose_rows_did_not_change_hands_on_made_parts(git_repo):
    """A view whose rows equal the previous view's (here its graph step landed and changed
    no row) gets the previous view's parts, made when that view left them to be merged on
    first use and the new one asks for them made. (The edit adds an import: one that moved
    lines only would be published with its graph, overlay_lines.py, and one that changed calls
    only with its graph resolved in place, overlay_refs.py.)"""
    git_repo.write_many({f"m{i}.py": f"def f{i}():\n    return f{(i + 1) % 30}()\n" for i in range(30)})
    build(BuildOptions(repo=git_repo.path, jobs=1))
    git_repo.write("m0.py", "def f0():\n    f2()\n    return f1()\nimport m5\n")
    assert build(BuildOptions(repo=git_repo.path, jobs=1, graph_later=True)).graph_pending
    follower = IndexFollower(git_repo.path)
    follower.warm_on_swap = False
    try:
        with follower.view() as view:
            SymbolTable.load(view)  # its key indexes left to be merged on first use
            assert all(callable(v) for k, v in view.merged[("symbols", load_sql(view))].parts.items() if k != "rows")
        assert not build(BuildOptions(repo=git_repo.path, jobs=1)).graph_pending
        with follower.view() as view:
            sql = load_sql(view)
            assert graph_changed(view, view.previous[("symbols", sql)].graph_file, ["symbol_names"]) == set()
            got = overlay_arrays(view, "symbols", sql)
            built = resident.STRUCTURES["symbols"][0](view.cursor().sql(sql).to_arrow_table())
            for part in built:
                assert _plain(got[part]) == _plain(built[part]), f"symbols.{part} differs"
    finally:
        follower.close()


def test_two_threads_merging_one_structure_of_one_view_at_once(git_repo):
    """A request and the watcher's warming may merge the same structure of one overlay view at
    the same moment: both get the same rows, neither a DuckDB catalog conflict."""
    git_repo.write_many({f"m{i}.py": f"def f{i}():\n    return f{(i + 1) % 20}()\n" for i in range(20)})
    build(BuildOptions(repo=git_repo.path, jobs=1))
    git_repo.write("m3.py", "def f3_new():\n    return f7()\n")
    build(BuildOptions(repo=git_repo.path, jobs=1))
    with open_index(git_repo.path) as view:
        assert view.base_id is not None
        paths = frozenset().union(*(view.masked_paths(t) for t in MERGES["refs"].masks))
        rows = lambda: _plain(changed_rows(view, "refs", MERGES["refs"], paths, resident.REFS_SQL))  # noqa: E731
        expected = rows()
        assert "m3.py" in expected["path"]
        barrier, results, errors = threading.Barrier(2), [], []

        def merge() -> None:
            barrier.wait()
            try:
                for _ in range(25):
                    results.append(rows())
            except Exception as exc:
                errors.append(exc)
        threads = [threading.Thread(target=merge) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == [] and len(results) == 50 and all(r == expected for r in results)


def _as_assembly_7(directory: Path) -> None:
    """An assembled directory (full or overlay) as ASSEMBLY_VERSION 7 wrote it: its files
    tables with a `text` column, its meta and COMPLETE naming version 7."""
    import duckdb

    for name in (fmt.DUCKDB_FILE, OVERLAY_FILE):
        if (directory / name).exists():
            with duckdb.connect(str(directory / name)) as con:
                con.execute("ALTER TABLE files ADD COLUMN text VARCHAR")
                con.execute("UPDATE files SET text = 'old' WHERE status = 'indexed'")
                if con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'meta'").fetchone()[0]:
                    con.execute("UPDATE meta SET value = '7' WHERE key = 'assembly_version'")
    marker = directory / fmt.COMPLETE_MARKER
    marker.write_text(marker.read_text().replace(f"assembly {fmt.ASSEMBLY_VERSION} ", "assembly 7 "))


def test_a_store_of_assembly_version_7_is_said_then_repaired_overlay_included(git_repo):
    """ASSEMBLY_VERSION 8 dropped files.text: an overlay's views `SELECT *` over its base's
    tables and its own, so both must drop it at once. A store assembled by version 7 (a full
    assembly and an overlay on it): a reader names the build to run, and the next build of an
    edit assembles anew (not an overlay on the old base) with every answer of the new texts."""
    from codeagent.errors import IndexMissing

    git_repo.write_many({"a.py": "def f():\n    return g()\n", "b.py": "def g():\n    return 1\n"})
    first = build(BuildOptions(repo=git_repo.path, jobs=1))
    git_repo.write("b.py", "def g():\n    return 2\n")
    second = build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    assert store.assembly_base(second.manifest_id) == first.manifest_id
    for mid in (first.manifest_id, second.manifest_id):
        _as_assembly_7(store.assembled_dir(mid))
    with pytest.raises(IndexMissing) as said:
        open_index(git_repo.path).close()
    assert "not assembled" in said.value.message and "codeagent build" in str(said.value.hint)
    git_repo.write("a.py", "def f():\n    return g() + 3\n")
    third = build(BuildOptions(repo=git_repo.path, jobs=1))
    assert third.files_parsed == 1
    with open_index(git_repo.path) as view:
        assert view.manifest_id == third.manifest_id and view.base_id is None  # not on the old base
        assert [m.line for m in grep(view, r"return", context=0).matches] == ["    return g() + 3", "    return 2"]
    git_repo.write("b.py", "def g():\n    return 4\n")
    fourth = build(BuildOptions(repo=git_repo.path, jobs=1))
    with open_index(git_repo.path) as view:
        assert (view.manifest_id, view.base_id) == (fourth.manifest_id, third.manifest_id)  # an overlay again
        tables = view.sql("SELECT database_name, list(column_name) FROM duckdb_columns() "
                          "WHERE table_name = 'files' AND NOT internal GROUP BY ALL")
        assert len(tables) > 1 and all("text" not in columns for _, columns in tables), tables
        assert [m.line for m in grep(view, r"return", context=0).matches] == ["    return g() + 3", "    return 4"]
