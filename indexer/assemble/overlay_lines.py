"""An overlay's graph carried across an edit that moves lines only (overlay.py, two-phase).

Most one-file edits an agent or an editor saves change no definition, import or reference:
a comment, a docstring, a literal, lines added or removed inside a body. The graph step
(graph.py over overlay_graph.py's copy-on-write views) still costs a fixed ~0.8 s of CPU on
the standard library for such an edit: ~120 statements, each reading the base's tables. This
step decides from the changed paths' own rows, before any graph statement runs, whether the
graph the overlay carries (that of the previous build, `carried`) is already the new
manifest's, up to line numbers:

- the paths changed since `carried` are the same paths (none added or removed, no go.mod,
  whose text names Go import roots), and
- their graph inputs (graph._INPUTS: files, symbols and references, inert references
  left out) are equal row for row except start_line, and per path the old start lines map to the new ones by one strictly
  increasing function (lines were inserted or removed, nothing was reordered).

A reference is compared only when it can take part in the graph: an import, or one whose
last name segment (`last`) some symbol of the index is named. Any other (a call of a builtin
or a library function, `len(x)`, `print(...)`) is inert: the graph step projects only
references whose `last` names a symbol (graph_sql._project) and reads import bindings from
import references only, so an inert reference yields no row and changes no other's
resolution; adding or removing one changes no graph row. Nor does its position: a
reference's ordinal is read only through an import's binding, so it is compared for imports
only. (Names are looked up in the base's and the carried graph's symbol_names, masks
ignored: a superset of the index's names, so a reference is never wrongly taken for inert.)

Then every resolution is the same: symbol_id does not depend on the line (tables._symbol_id),
no tier reads another file's start_line except to order one file's definitions, and every
comparison of lines within a file (a Python module-level call sees the last definition
before it, a class body's names) keeps its outcome under an increasing map. The graph rows
that change are exactly the changed paths' own: symbol_names.start_line and the src_line of
the edges they are the source of (every such line is a start line of that path's symbols or
references). They are rewritten through the map, and written to the overlay only where they
differ from the base's (as overlay_graph._write_differing writes them), so the overlay holds
the graph tables a full graph step would give it, and is published with its graph complete.
Otherwise nothing is written here and the overlay is published before its graph, as before.
"""

from __future__ import annotations

import pyarrow as pa

from ...format.assembly import sql_literals
from ...format.overlay import BASE_DB, OVERLAY_DB
from .graph import _INPUTS
from .overlay_graph import _path_digests

# The graph tables holding a line of their path's rows: (path column, line column).
LINED = {"symbol_names": ("path", "start_line"), "edges": ("src_path", "src_line")}


def carried_graph_fits(con, change: tuple[set[str], list], old: str | None, cache: dict | None = None) -> bool:
    """True when the graph rows the overlay (OVERLAY_DB) carries, those of the manifest the
    `change` (removed paths, inserted entries) starts from, were brought up to date here for
    the new manifest (module doc); False: they are left as they are, and a graph step must
    run. `old`: the database (a previous overlay's, its chain flattened) holding, under its
    masks, the per-path rows of that manifest; None: the base's rows are those. `cache`: the
    rows compared, kept for a later check of the same change (overlay_refs.py)."""
    paths = same_paths(con, change)
    if not paths:
        return paths is not None
    maps = _line_maps(con, old, sql_literals(paths), cache=cache)  # literals: DuckDB prunes row groups on them
    if maps is None:
        return False
    moved = {p: m for p, m in maps.items() if any(a != b for a, b in m)}
    return not moved or _remap(con, moved)


def same_paths(con, change: tuple[set[str], list]) -> list[str] | None:
    """The changed paths, sorted, when the change removes and inserts the same paths, none is
    a go.mod (whose text names Go import roots) and the overlay's top (OVERLAY_DB) holds the
    per-path rows of each; else None. (A change since a graph that never landed may span a
    layer kept beneath the top, whose paths' rows the top does not hold: read as the base's,
    they would look unchanged.)"""
    remove, insert = change
    paths = sorted(f.path for f in insert)
    if set(paths) != remove or any(p == "go.mod" or p.endswith("/go.mod") for p in paths):
        return None
    if paths and con.execute(f"SELECT count(DISTINCT path) FROM {OVERLAY_DB}.main.mask_files "
                             f"WHERE path IN ({sql_literals(paths)})").fetchone()[0] != len(paths):
        return None
    return paths


def _rows(table: str, db: str, columns: str, under: str | None, listed: str, column: str = "path") -> str:
    """The rows of `table` whose `column` is a path of `listed` (SQL literals): `db`'s where
    its mask has the path, else (`under` given) `under`'s."""
    where = f"{column} IN ({listed})"
    masked = f"{column} IN (SELECT path FROM {db}.main.mask_{table})"
    sql = f"SELECT {columns} FROM {db}.main.{table} WHERE {where} AND {masked}"
    if under is not None:
        sql += f" UNION ALL SELECT {columns} FROM {under}.main.{table} WHERE {where} AND NOT {masked}"
    return sql


def _old_rows(table: str, columns: str, old: str | None, listed: str) -> str:
    if old is None:
        return f"SELECT {columns} FROM {BASE_DB}.main.{table} WHERE path IN ({listed})"
    return _rows(table, old, columns, BASE_DB, listed)


_IMPORT_ORDINAL = "CASE WHEN kind = 'import' THEN ordinal END AS ordinal"


def _named_refs(con, old: str | None, listed: str) -> str:
    """A WHERE clause keeping the references that are not inert (module doc): imports, and
    those whose `last` a symbol of the base or of the carried graph (OVERLAY_DB's
    symbol_names, masks ignored) is named. The names are looked up once, for the `last`
    values of the changed paths' references, old and new, and inlined as literals."""
    lasts = sorted({r[0] for r in con.execute(
        f"SELECT DISTINCT last FROM ({_old_rows('refs', 'last', old, listed)}) "
        f"UNION SELECT DISTINCT last FROM ({_rows('refs', OVERLAY_DB, 'last', BASE_DB, listed)})").fetchall()
        if r[0] is not None})
    found = {r[0] for r in con.execute(
        f"SELECT DISTINCT name FROM {BASE_DB}.main.symbol_names WHERE name IN ({sql_literals(lasts)}) UNION "
        f"SELECT DISTINCT name FROM {OVERLAY_DB}.main.symbol_names WHERE name IN ({sql_literals(lasts)})"
    ).fetchall()} if lasts else set()
    return f"WHERE kind = 'import' OR last IN ({sql_literals(sorted(found))})" if found else "WHERE kind = 'import'"


def _matched(con, table: str, old: str | None, listed: str, keep: str = "") -> list[tuple] | None:
    """(path, old start line, new start line) of `table`'s graph-input rows of the changed
    paths (`keep`: a WHERE clause on them), paired in order; None when the rows differ
    otherwise (start_line aside; an ordinal for imports only, module doc)."""
    columns = _INPUTS[table]
    cols = [c.strip() for c in columns.split(",") if c.strip() != "start_line"]
    lined = "start_line" in columns
    if table == "refs":
        cols = [_IMPORT_ORDINAL if c == "ordinal" else c for c in cols]
    select = ", ".join(cols + (["start_line"] if lined else []))
    before = con.execute(f"SELECT * FROM ({_old_rows(table, select, old, listed)}) {keep} ORDER BY ALL").fetchall()
    new = _rows(table, OVERLAY_DB, select, BASE_DB, listed)
    after = con.execute(f"SELECT * FROM ({new}) {keep} ORDER BY ALL").fetchall()
    if len(before) != len(after):
        return None
    out = []
    for x, y in zip(before, after):
        if x[:-1] != y[:-1] if lined else x != y:
            return None
        if lined:
            out.append((x[0], x[-1], y[-1]))
    return out


def _line_maps(con, old: str | None, listed: str, refs_keep: str | None = None,
               cache: dict | None = None) -> dict[str, list[tuple[int, int]]] | None:
    """Per changed path, the (old, new) start lines of its rows, sorted; None when the graph
    inputs differ otherwise or the lines do not map by one increasing function. References
    are compared all first, then (when they differ) without the inert ones: the names are
    looked up only for an edit that changed a reference. `refs_keep`: a WHERE clause
    choosing the references compared (then only those). `cache`: each comparison's outcome by
    (table, filter), read and added to (one change's: the same `old` and `listed`)."""
    pairs: dict[str, set[tuple[int, int]]] = {}
    cache = {} if cache is None else cache

    def matched(table: str, keep: str = "") -> list[tuple] | None:
        if (table, keep) not in cache:
            cache[(table, keep)] = _matched(con, table, old, listed, keep)
        return cache[(table, keep)]

    for table in _INPUTS:
        found = matched(table, refs_keep if table == "refs" and refs_keep else "")
        if found is None and table == "refs" and refs_keep is None:
            found = matched(table, _named_refs(con, old, listed))
        if found is None:
            return None
        for path, x, y in found:
            pairs.setdefault(path, set()).add((x, y))
    maps = {}
    for path, found in pairs.items():
        if any((x is None) != (y is None) for x, y in found):
            return None
        known = sorted((x, y) for x, y in found if x is not None)
        if len({x for x, _ in known}) != len(known) or any(a[1] >= b[1] for a, b in zip(known, known[1:])):
            return None
        maps[path] = known
    return maps


def _remap(con, moved: dict[str, list[tuple[int, int]]]) -> bool:
    """Rewrite the lines of the `moved` paths' rows of symbol_names and edges in the overlay
    through their maps, keeping rows and masks only for paths that then differ from the base's;
    False (nothing written) when a row's line is not in its path's map."""
    listed = sql_literals(sorted(moved))
    try:
        if not lines_tables(con, moved, listed):
            return False
        for table in LINED:
            write_lined(con, table, listed)
        return True
    finally:
        drop_lines_tables(con)


def lines_tables(con, maps: dict[str, list[tuple[int, int]]], listed: str, edges_where: str = "") -> bool:
    """Temp tables lines_<table> (LINED) holding the overlay's rows of the paths `listed` (the
    keys of `maps`; `edges_where`: an AND condition on the edges kept), their lines rewritten
    through `maps`; False when a row's line is not in its path's map."""
    pairs = [(p, a, b) for p, m in maps.items() for a, b in m]
    con.register("lines_pairs", pa.table({"path": pa.array([r[0] for r in pairs], pa.string()),
                                          "old": pa.array([r[1] for r in pairs], pa.int32()),
                                          "new": pa.array([r[2] for r in pairs], pa.int32())}))
    con.execute("CREATE OR REPLACE TEMP TABLE lines_map AS SELECT * FROM lines_pairs")  # executemany: ~0.1 ms a row
    con.unregister("lines_pairs")
    for table, (column, line) in LINED.items():
        rows = _rows(table, OVERLAY_DB, "*", BASE_DB, listed, column)
        where = edges_where if table == "edges" else ""
        con.execute(f"CREATE OR REPLACE TEMP TABLE lines_{table} AS SELECT * FROM ({rows}) WHERE TRUE {where}")
        unmapped = con.execute(f"""SELECT count(*) FROM lines_{table} t WHERE t.{line} IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM lines_map m WHERE m.path = t.{column} AND m.old = t.{line})""")
        if unmapped.fetchone()[0]:
            return False
    for table, (column, line) in LINED.items():
        con.execute(f"""UPDATE lines_{table} SET {line} = m.new FROM lines_map m
            WHERE m.path = lines_{table}.{column} AND m.old = lines_{table}.{line}""")
    return True


def write_lined(con, table: str, listed: str) -> None:
    """Replace the overlay's rows and mask of `table` for the paths `listed` with those of
    lines_<table>, kept only for the paths whose rows then differ from the base's."""
    column = LINED[table][0]
    where = f"WHERE {column} IN ({listed})"
    con.execute(f"DELETE FROM {OVERLAY_DB}.main.{table} {where}")
    con.execute(f"DELETE FROM {OVERLAY_DB}.main.mask_{table} WHERE path IN ({listed})")
    con.execute(f"""INSERT INTO {OVERLAY_DB}.main.mask_{table} SELECT path FROM
        ({_path_digests(f"{BASE_DB}.main.{table}", column, where)}) o
        FULL JOIN ({_path_digests(f"lines_{table}", column, where)}) n USING (path)
        WHERE o.n IS DISTINCT FROM n.n OR o.h IS DISTINCT FROM n.h""")
    con.execute(f"""INSERT INTO {OVERLAY_DB}.main.{table} SELECT * FROM lines_{table}
        WHERE {column} IN (SELECT path FROM {OVERLAY_DB}.main.mask_{table})""")


def drop_lines_tables(con) -> None:
    for name in ("lines_map", *(f"lines_{t}" for t in LINED)):
        con.execute(f"DROP TABLE IF EXISTS {name}")
