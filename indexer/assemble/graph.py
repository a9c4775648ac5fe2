"""The symbol graph of a manifest: module names, full qualified names and resolved edges.

A derived assembly step (pipeline.DERIVED_STEPS). It maintains these tables (and graph_version,
whose number says when their shape changed):

  modules(path, language, module, package, sep, declared)   one row per indexed file
  symbol_names(symbol_id, path, module, fq_name, fq_key, name, kind, language, qkey,
               parent_id, parent_kind, start_line, encl_class)   one row per symbol
      fq_name = module + sep + in-file qualified name (sep "." or "::" for Rust); fq_key is
      the same with every separator folded to "." (lookups: `WHERE fq_key = 'a.b.C.m'`).
  import_bindings(path, ordinal, local, fq_key, mkey, file)    what each import binds
      (local "*" for a wildcard; file: the repository file a C/C++/Ruby include names)
  edges(src_id, src_path, src_line, dst_id, dst_path, kind, confidence, target)

Resolution of each reference, first tier that finds something wins (`exact`):
  1. the enclosing scopes of the same file (Python: class bodies are not scopes of methods),
  2. `self.` / `cls.` / `this.` members of the enclosing class, then of its resolved bases,
  3. import bindings (`import x`, `from x import y as z`; re-exports followed),
  4. wildcard imports, 5. the same module/package in other files (Go, Java...).
Of equally ranked exact targets, only those nearest the reference's file (graph_near.py).
Otherwise (`name`): definitions with the same last name segment and a fitting kind (Python
bare calls: functions and classes; `x.m()` calls: members), of copies of one definition the
nearest; at most NAME_CAP of them, and when a name has more definitions than that only
those in the reference's own file. Names
bound by an import of a module outside the repo are not name-matched (`np.array` says
nothing about the repo's `array`).

Incremental: when assemble reports the changed paths (temp tables delta_removed and
delta_added) and no other file's module name changed, only the affected rows are
recomputed (graph_sql.py says which); otherwise everything is. When the changed paths' rows
the graph reads (_INPUTS) are the old ones, nothing is.
"""

from __future__ import annotations

import posixpath
import re
import time

from ...format.assembly import GRAPH_TABLES_SQL, GRAPH_VERSION
from ...format.manifest import Manifest
from ...format.shard import shard_text_pairs
from ...store import Store
from .graph_sql import edges_sql, kind_rows, names_sql
from .module_names import (DECLARED_PACKAGE, FILE_IMPORTS, PACKAGE_KINDS, FileModule, file_module,
                           declared_package, go_import_dir, go_package, import_binding, include_file, key, python_packages)

NAME_CAP = 10
# A full recompute is cheaper when more than this share of the files (and > FULL_MIN) changed.
FULL_FRACTION = 0.25
FULL_MIN = 100
LAST_TIMINGS: dict[str, float] = {}
_OWN_TABLES = ("modules", "symbol_names", "import_bindings", "edges", "graph_version")
# The columns of the per-path tables that the graph reads.
_INPUTS = {
    "files": "path, language, status",
    "symbols": "path, language, ordinal, symbol_id, kind, name, qualified_name, start_line, parent, parent_id",
    "refs": "path, language, ordinal, kind, target, module, alias, source, source_id, start_line, tkey, head, last",
}


def _modules(con) -> list[tuple]:
    """One module row per indexed file."""
    kinds = ", ".join(f"'{k}'" for k in PACKAGE_KINDS)
    rows = con.execute(f"""
        SELECT f.path, f.language, d.names FROM files f
        LEFT JOIN (SELECT path, list(qualified_name ORDER BY ordinal) AS names FROM symbols
                   WHERE parent < 0 AND kind IN ({kinds}) GROUP BY path) d USING (path)
        WHERE f.status = 'indexed'""").fetchall()
    packages = python_packages(p for p, lang, _ in rows if lang == "python")
    out = []
    for path, lang, names in rows:
        fm = file_module(path, lang, packages, declared_package(names or ()))
        out.append((fm.path, fm.language, fm.module, fm.package, fm.sep,
                    lang in DECLARED_PACKAGE, key(fm.module)))
    return out


def _bindings(con, modules: list[tuple], store: Store | None) -> list[tuple]:
    """(path, ordinal, local, fq_key, mkey, file) for each import reference of the changed
    paths; `file` for languages whose imports name files (C, C++, Ruby)."""
    by_path = {m[0]: m for m in modules}
    module_keys = {m[6] for m in modules if m[6]}
    by_name: dict[str, list[str]] = {}
    if any(m[1] in FILE_IMPORTS for m in modules):
        for p in by_path:
            by_name.setdefault(posixpath.basename(p), []).append(p)
    roots = _go_roots(con, store) if any(m[1] == "go" for m in modules) else []
    out = []
    for path, ordinal, target, module, alias in con.execute(
            """SELECT path, ordinal, target, module, alias FROM refs WHERE kind = 'import'
               AND path IN (SELECT path FROM g_changed)""").fetchall():
        m = by_path.get(path)
        if m is None:
            continue
        fm = FileModule(m[0], m[1], m[2], m[3], m[4])
        if roots and fm.language == "go":
            spec = (module or target or "").strip('"')
            target, module, alias = go_import_dir(spec, roots), "", alias or go_package(spec)
        b = import_binding(fm, target or "", module or "", alias or "", module_keys)
        file = include_file(target or "", path, fm.language, by_name) if fm.language in FILE_IMPORTS else ""
        out.append((path, ordinal, b.local, key(b.fq) if fm.language != "go" else b.fq, b.module, file))
    return out


_GO_MODULE = re.compile(r"^module\s+\"?([^\s\"]+)", re.M)


def _go_roots(con, store: Store | None) -> list[tuple[str, str]]:
    """(module path, directory) of each go.mod, longest module path first: an import of the
    repository's own module names a directory of it (the root's `github.com/go-chi/chi/v5`).
    The texts are read from the go.mod files' shards in `store` (None: none read)."""
    if store is None:
        return []
    mods = con.execute("""SELECT path, shard FROM files WHERE status = 'indexed'
            AND (path = 'go.mod' OR ends_with(path, '/go.mod')) ORDER BY path""").fetchall()
    roots = []
    for path, text in shard_text_pairs(mods, store.get):
        found = _GO_MODULE.search(text)
        if found:
            roots.append((found.group(1), posixpath.dirname(path)))
    return sorted(roots, key=lambda r: -len(r[0]))


def _register(con, name: str, columns: list[str], rows: list[tuple]) -> None:
    import pyarrow as pa

    cols = list(zip(*rows)) if rows else [[] for _ in columns]
    table = pa.table({c: pa.array(list(v), type=pa.bool_() if c == "declared" else
                                  pa.int32() if c == "ordinal" else pa.string())
                      for c, v in zip(columns, cols)})
    con.register(f"{name}_arrow", table)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM {name}_arrow")
    con.unregister(f"{name}_arrow")


def _tables(con) -> set[str]:
    return {r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "OR temporary").fetchall()}


def _inputs_unchanged(con) -> bool:
    """True when the changed paths are the same paths with the same graph inputs as before
    (an edit of comments or bodies that moves no line, definition or reference): every
    graph table already holds the new manifest's rows."""
    tables = _tables(con)
    needed = set(_OWN_TABLES) | {"delta_removed", "delta_added"} | {f"delta_old_{t}" for t in _INPUTS}
    if not needed <= tables or con.execute(
            "SELECT max(version) FROM graph_version").fetchone()[0] != GRAPH_VERSION:
        return False
    differs = ["(SELECT path FROM delta_removed EXCEPT SELECT path FROM delta_added) UNION ALL "
               "(SELECT path FROM delta_added EXCEPT SELECT path FROM delta_removed)"]
    for table, columns in _INPUTS.items():
        old = f"SELECT {columns} FROM delta_old_{table}"
        new = f"SELECT {columns} FROM {table} WHERE path IN (SELECT path FROM delta_added)"
        differs.append(f"({old} EXCEPT {new}) UNION ALL ({new} EXCEPT {old})")
    return not con.execute("SELECT " + " OR ".join(f"EXISTS ({d})" for d in differs)).fetchone()[0]


def _plan_changed(con) -> bool:
    """Create temp table g_changed; True when everything must be recomputed."""
    tables = _tables(con)
    incremental = set(_OWN_TABLES) | {"delta_removed", "delta_added"} <= tables
    if incremental:
        incremental = con.execute("SELECT max(version) FROM graph_version").fetchone()[0] == GRAPH_VERSION
    if incremental:
        con.execute("""CREATE OR REPLACE TEMP TABLE g_changed AS
            SELECT path FROM delta_removed UNION SELECT path FROM delta_added""")
        changed, total, moved = con.execute("""SELECT
            (SELECT count(*) FROM g_changed), (SELECT count(*) FROM g_modules),
            (SELECT count(*) FROM g_modules g FULL JOIN modules m USING (path)
             WHERE path NOT IN (SELECT path FROM g_changed)
               AND (g.module IS DISTINCT FROM m.module OR g.package IS DISTINCT FROM m.package))
            """).fetchone()
        incremental = moved == 0 and (changed <= FULL_FRACTION * total or changed <= FULL_MIN)
    if not incremental:
        con.execute(GRAPH_TABLES_SQL)
        con.execute("CREATE OR REPLACE TEMP TABLE g_changed AS SELECT path FROM files")
    return not incremental


def symbol_graph(con, manifest: Manifest | None, store: Store | None = None) -> None:
    """Bring modules, symbol_names, import_bindings and edges up to date with the manifest
    (`store`: where the go.mod files' texts are read, in their shards)."""
    t0 = time.perf_counter()
    LAST_TIMINGS.clear()
    if _inputs_unchanged(con):
        LAST_TIMINGS.update(full=0.0, unchanged=1.0, total=time.perf_counter() - t0)
        return
    modules = _modules(con)
    _register(con, "g_modules", ["path", "language", "module", "package", "sep", "declared", "mkey"],
              modules)
    _register(con, "g_kinds", ["ref_kind", "sym_kind"], kind_rows())
    full = _plan_changed(con)
    t1 = time.perf_counter()
    con.execute(names_sql(full))
    t2 = time.perf_counter()
    _register(con, "g_bind_new", ["path", "ordinal", "local", "fq_key", "mkey", "file"],
              _bindings(con, modules, store))
    t3 = time.perf_counter()
    con.execute(edges_sql(full).replace("$CAP", str(NAME_CAP)))
    t4 = time.perf_counter()
    for t in ("g_modules", "g_kinds", "g_bind_new", "g_changed"):
        con.execute(f"DROP TABLE IF EXISTS {t}")
    LAST_TIMINGS.update(full=float(full), unchanged=0.0, plan=t1 - t0, names=t2 - t1, bindings=t3 - t2,
                        edges=t4 - t3, total=t4 - t0)
