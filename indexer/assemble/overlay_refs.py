"""An overlay's graph brought up to date in place across an edit that changes references only
(overlay.py, two-phase; after overlay_lines.py, which carries edits that change none).

Adding or removing a call of a function the repository defines (`helper()`, `obj.method()`)
changed a resolved reference, so the graph step ran over the whole base (~120 statements
over overlay_graph.py's copy-on-write views, 0.7 s of CPU on the standard library) to
change a few edges of one file. This step resolves instead only the edited files'
references, from rows the overlay and the base already hold, when the edit changed nothing
another file's resolution reads:

- the paths changed since the graph the overlay carries (`carried`) are the same paths (none
  added or removed, no go.mod), none of a language whose files share one namespace
  unimported (graph_sql.SHARED_NAMESPACE: a type of any file is looked up by name), and
- their files and symbols rows, their import references and their inherit/implement
  references are those `carried` read, row for row except start_line, and per path the old
  start lines map to the new ones by one strictly increasing function (overlay_lines.py).
  Other references (calls, references, type references) may differ in any way.

Then modules, symbol_names (lines aside) and import_bindings are `carried`'s: they are
computed from files, symbols and import references (graph.py), and paths only. No
definition, binding or module changed, so no other file's reference is resolved again by the
incremental graph step (graph_sql._REDO_WHY), and the edited files' inherits and implements
edges come out as they were (their references, and every row their resolution reads, are
the same), so no class's ancestry changes. A reference's edges depend on other references
only through the typed-receiver tier, which reads its own file's edges. So the graph rows
that change are the edited paths' own: symbol_names' start lines and the contains, imports,
overrides, inherits and implements edges' source lines (remapped as overlay_lines.py does),
and their calls and references edges, which are resolved again here by the graph step's own
statements (graph_sql._RESOLVE and _TYPED, through graph_candidates' restriction), in the
order its incremental step runs them after the first ancestry closure, with the edited
paths' references as the only ones to resolve, less the statements that can read no row
for them (_reachable: a tier none of them meets, the typed tier, the ancestry). They read
temp tables and views made here
over the base's graph rows merged with the overlay's: symbol_names holds only the rows
those statements can read for these references (_names), g_export only the names they can
look up (_exports), g_local only their paths' bindings. The rows are written to the overlay
only where they differ from the base's, as overlay_graph._write_differing writes them: the
overlay holds the graph tables a full graph step would give it, and is published complete.

On the standard library a fresh `codeagent build` after adding a call of a function of the
edited file costs ~0.7 s of CPU where the graph step's path cost ~1.3 s; this step is ~0.2 s
of it (67 statements on json/encoder.py), mostly the fixed cost of planning graph_sql's
statements, not their rows, and reading the base's symbol_names (docs/benchmarks/edit.md). A differential check (random call lines duplicated,
deleted or swapped in rich, express, cobra, clap and retrofit, the graph compared with the
graph step's) and the property of tests/indexer/test_overlay_lines.py hold it to the graph
step's rows.
"""

from __future__ import annotations

from ...format.assembly import sql_literals
from ...format.overlay import BASE_DB, OVERLAY_DB, layered_sql
from .graph import NAME_CAP, _register
from .graph_ancestry import FIRST_NEED, TYPED_NEED, DROP as DROP_INHERITS, close_sql
from .graph_bounded import only_tiers
from .graph_candidates import over_candidates
from .graph_paths import PATH_KEY
from .graph_sql import (_ANC_TABLE, _EXPORT_HOP, _EXPORTS, _INHERIT_FILTER, _RESOLVE, _TYPED, RESOLVE_KINDS,
                        SHARED_NAMESPACE, _project, _raw_refs, kind_rows, sql_in)
from .module_names import key
from .overlay_lines import _line_maps, drop_lines_tables, lines_tables, same_paths, write_lined

# The references compared (start lines aside): those whose rows another file's resolution or
# the ancestry of classes reads.
_KEPT_REFS = "WHERE kind IN ('import', 'inherit', 'implement')"
# The edges resolved again: those of the references that may differ (an inherits or implements
# edge's reference and every row its resolution reads are the same: it is carried, lines remapped).
_RESOLVED = tuple(k for k in RESOLVE_KINDS if k not in ("inherits", "implements"))
# The views and tables the graph step's statements read, made here over the merged rows.
_VIEWS = ("g_all_names", "import_bindings")
_TEMPS = ("refs", "edges", "symbol_names", "g_modules", "g_kinds", "g_refs", "g_rebased", "g_anc", "g_export",
          "g_local", "g_exact", "g_named", "g_inherits", "g_inherits_down")
# graph_sql._EXPORTS split: g_export's rows (then its hops), g_local.
_EXPORT_ALL, _LOCAL = _EXPORTS.replace(_EXPORT_HOP * 2, "").replace("symbol_names", "g_all_names").split(
    "CREATE OR REPLACE TEMP TABLE g_local")
_LOCAL = "CREATE OR REPLACE TEMP TABLE g_local" + _LOCAL
_LOCAL_FROM = "FROM import_bindings b WHERE b.local <> ''"
_ALL_ALIASES = "WHERE alias NOT IN (SELECT fq_key FROM g_all_names) GROUP BY alias"
_NEEDED = ("WHERE alias IN ({need}) AND alias NOT IN (SELECT fq_key FROM g_all_names WHERE fq_key IN ({need}) "
           "OR fq_key IS NULL) GROUP BY alias")
_STAR_NAMES = "g_all_names d"  # the star branch's names: only those an alias needed can end with
# The ancestry's inheritance edges (graph_ancestry._INHERITS) are read from the merged rows: the
# temp `edges` holds only the resolved edges (their one other reader, the typed tier, reads calls
# and references edges of the file).
_INHERITS_FROM = "SELECT src_id, dst_id, confidence FROM edges\n"
if (_LOCAL_FROM not in _LOCAL or _ALL_ALIASES not in _EXPORT_ALL or _EXPORT_ALL.count(_STAR_NAMES) != 1
        or close_sql(FIRST_NEED, first=True).count(_INHERITS_FROM) != 1):
    raise ImportError("graph_sql._EXPORTS or graph_ancestry._INHERITS no longer has the shape overlay_refs reads")
# The columns of symbol_names the resolution reads (not module and fq_name: graph_sql._SYMBOL_NAMES
# makes them, and fq_key is what every lookup reads).
_READ = "symbol_id, path, fq_key, name, kind, language, qkey, parent_id, parent_kind, start_line, encl_class"
# How many times the names needed (_exports) may grow by their targets before g_export is made whole.
EXPORT_ROUNDS = 6


def refs_resolved(con, change: tuple[set[str], list], old: str | None, cache: dict | None = None) -> bool:
    """True when the graph rows the overlay (OVERLAY_DB) carries, those of the manifest the
    `change` starts from, were brought up to date here for the new manifest by resolving the
    changed paths' references again (module doc); False: nothing was written (a graph step
    must run). `old`, `cache`: as for overlay_lines.carried_graph_fits."""
    paths = same_paths(con, change)
    if not paths:
        return paths is not None
    listed = sql_literals(paths)
    languages = {r[0] for r in con.execute(
        f"SELECT DISTINCT language FROM ({layered_sql('files', BASE_DB, [OVERLAY_DB])}) WHERE path IN ({listed})"
    ).fetchall()}
    if languages & set(SHARED_NAMESPACE):
        return False
    maps = _line_maps(con, old, listed, _KEPT_REFS, cache)
    if maps is None:
        return False
    try:
        if not lines_tables(con, maps, listed, f"AND kind NOT IN {sql_in(_RESOLVED)}"):
            return False
        write_lined(con, "symbol_names", listed)  # before resolving: the same file's lines rank its targets
        _resolve(con, listed)
        con.execute(f"""INSERT INTO lines_edges SELECT * FROM edges
            WHERE src_path IN ({listed}) AND kind IN {sql_in(_RESOLVED)}""")
        write_lined(con, "edges", listed)
        return True
    finally:
        drop_lines_tables(con)
        for name in _VIEWS:
            con.execute(f"DROP VIEW IF EXISTS temp.{name}")
        for name in _TEMPS:
            con.execute(f"DROP TABLE IF EXISTS temp.{name}")


def _resolve(con, listed: str) -> None:
    """Resolve the references of the paths `listed` (their rows in the overlay) other than
    inherit and implement ones into a temp table `edges`, with graph_sql's statements, in the
    order of its incremental step after its first closure (edges_sql), over the rows they can
    read (_names; the ancestry's inheritance edges: _INHERITS_FROM), less those that can read
    no row here (_reachable)."""
    con.execute(f"CREATE OR REPLACE TEMP VIEW import_bindings AS {layered_sql('import_bindings', BASE_DB, [OVERLAY_DB])}")
    con.execute(f"CREATE OR REPLACE TEMP VIEW g_all_names AS {layered_sql('symbol_names', BASE_DB, [OVERLAY_DB])}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE refs AS SELECT * FROM {OVERLAY_DB}.main.refs WHERE path IN ({listed})")
    modules = con.execute(
        f"SELECT path, language, module, package, sep, declared FROM ({layered_sql('modules', BASE_DB, [OVERLAY_DB])})"
    ).fetchall()
    _register(con, "g_modules", ["path", "language", "module", "package", "sep", "declared", "mkey"],
              [(*m, key(m[2])) for m in modules])
    _register(con, "g_kinds", ["ref_kind", "sym_kind"], kind_rows())
    con.execute(_LOCAL.replace(_LOCAL_FROM, f"{_LOCAL_FROM} AND b.path IN ({listed})"))  # read for these paths only
    _names(con, listed, *_exports(con))
    others = f"NOT ({_INHERIT_FILTER})"
    con.execute(f"""CREATE OR REPLACE TEMP TABLE g_refs AS {_project('(' + _raw_refs(others) + ')')};
        CREATE OR REPLACE TEMP TABLE g_rebased(source_id VARCHAR);  -- no class's bases changed
        {_ANC_TABLE}""")
    tiers, typed = _reachable(con)
    ancestry = 2 in tiers or typed  # g_anc's readers: tier 2 and the typed tier
    con.execute(f"CREATE OR REPLACE TEMP TABLE edges AS SELECT * FROM {BASE_DB}.main.edges LIMIT 0")
    first = close_sql(FIRST_NEED, first=True).replace(
        _INHERITS_FROM, f"SELECT src_id, dst_id, confidence FROM ({layered_sql('edges', BASE_DB, [OVERLAY_DB])})\n")
    sql = ((first if ancestry else "")
           + over_candidates(only_tiers(_RESOLVE.replace("$FILTER", others), tiers), others)
           + (_TYPED.replace("$CLOSE_TYPED", close_sql(TYPED_NEED)) if typed else "")
           + (DROP_INHERITS if ancestry else ""))
    con.execute(sql.replace("$CAP", str(NAME_CAP)))


def _reachable(con) -> tuple[set[int], bool]:
    """(the exact tiers of _RESOLVE that can join a row for g_refs' references, whether the
    typed tier can): each test is implied by its tier's own joins and conditions, so a tier
    left out would have added no candidate (and one statement planned costs ~1-5 ms, more
    than its rows here)."""
    row = con.execute(f"""SELECT bool_or(recv <> ''),
            EXISTS (SELECT 1 FROM g_refs r JOIN g_local b ON b.path = r.path AND b.local = r.head),
            EXISTS (SELECT 1 FROM g_local b WHERE b.local = '*' AND b.path IN (SELECT path FROM g_refs)),
            EXISTS (SELECT 1 FROM g_modules m WHERE m.mkey <> '' AND m.path IN (SELECT path FROM g_refs)),
            bool_or(path_key <> '' AND (recv = '' OR language = 'rust')), bool_or(path_tail <> ''),
            bool_or(rtype <> '')
        FROM g_refs""").fetchone()
    return {n for n, hit in zip(range(2, 8), row) if hit}, bool(row[6])


def _exports(con) -> tuple[set[str], set[str], set[str]]:
    """g_export (graph_sql._EXPORTS) for the names the edited references can look up and the
    names those re-export, transitively: a row's target after the hops depends only on the
    rows its target chain reaches, all of them here (the whole table when the chain is longer
    than EXPORT_ROUNDS). (The names needed, with every target; the references' last name
    segments; their own modules' keys: read in one statement with the names needed, for _names.)"""
    found: dict[int, set[str]] = {0: set(), 1: set(), 2: set()}
    for side, value in con.execute(f"""
            SELECT 0, a FROM (SELECT b.fq_key || substr(r.tkey, length(r.head) + 1) AS a FROM refs r
                JOIN g_local b ON b.path = r.path AND b.local = r.head
                UNION SELECT b.fq_key || '.' || r.tkey FROM refs r JOIN g_local b ON b.path = r.path AND b.local = '*'
                UNION SELECT {PATH_KEY} FROM refs r0 LEFT JOIN g_modules m ON m.path = r0.path)
            UNION SELECT 1, last FROM refs
            UNION SELECT 2, m.mkey || '.' || r.tkey FROM refs r JOIN g_modules m ON m.path = r.path""").fetchall():
        if value is not None:
            found[side].add(value)
    need, rows = found[0], [None]
    for _ in range(EXPORT_ROUNDS):
        suffixes = {n.split(".", i)[-1] for n in need for i in range(n.count(".") + 1)}
        con.execute(_EXPORT_ALL.replace(_ALL_ALIASES, _NEEDED.format(need=_literals(need))).replace(
            _STAR_NAMES, f"(SELECT path, name, fq_key, parent_id FROM g_all_names WHERE name IN ({_literals(suffixes)})) d"))
        rows = con.execute("SELECT DISTINCT target FROM g_export").fetchall()
        added = {r[0] for r in rows if r[0] is not None}
        if added <= need:
            break
        need |= added
    else:
        con.execute(_EXPORT_ALL)
    if rows:  # an empty g_export has no hop to follow
        con.execute(_EXPORT_HOP * 2)
    return need, found[1], found[2]


def _literals(values) -> str:
    return sql_literals(sorted(values)) if values else "NULL"


def _names(con, listed: str, need: set[str], lasts: set[str], keys: set[str]) -> None:
    """symbol_names: the merged rows graph_sql's statements can read for the edited
    references (graph_candidates.py): of the edited paths (their references' sources, their
    classes), bearing a last name segment of theirs (every row of such a name: the by-name
    tier counts them), an fq_key they can look up (`need`, which holds g_export's targets,
    and their module's keys), and every module, namespace, impl and extension row (tier 7
    and the typed tier read those whole). Inlined as literals: DuckDB prunes on them. Only the
    columns they read (_READ): a column of long distinct strings costs a scan most of its time.
    `lasts`, `keys`: the references' last name segments and their modules' keys (_exports)."""
    keys = need | keys
    con.execute(f"""CREATE OR REPLACE TEMP TABLE symbol_names AS SELECT {_READ} FROM g_all_names
        WHERE path IN ({listed}) OR name IN ({_literals(lasts)}) OR fq_key IN ({_literals(keys)})
            OR kind IN ('module', 'namespace', 'impl', 'extension')""")
