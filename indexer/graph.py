"""The symbol graph of a manifest: module names, full qualified names and resolved edges.

A derived assembly step (see assemble.py). It (re)creates three tables:

  modules(path, language, module, package, sep, declared)   one row per indexed file
  symbol_names(symbol_id, path, module, fq_name, fq_key)     one row per symbol
      fq_name = module + sep + in-file qualified name (sep "." or "::" for Rust); fq_key is
      the same with every separator folded to "." (lookups: `WHERE fq_key = 'a.b.C.m'`).
  edges(src_id, src_path, src_line, dst_id, dst_path, kind, confidence, target)

Resolution of each reference, first tier that finds something wins (`exact`):
  1. the enclosing scopes of the same file (Python: class bodies are not scopes of methods),
  2. `self.` / `cls.` / `this.` members of the enclosing class, then of its resolved bases,
  3. import bindings (`import x`, `from x import y as z`, re-exports followed 3 hops),
  4. wildcard imports, 5. the same module/package in other files (Go, Java...).
Otherwise (`name`): definitions with the same last name segment and a fitting kind; at
most NAME_CAP of them, and when a name has more definitions than that only those in the
reference's directory. Names bound by an import of a module outside the repo are not
name-matched (`np.array` says nothing about the repo's `array`).
"""

from __future__ import annotations

import time

from ..manifest import Manifest
from .assemble import derived_step
from .graph_sql import EDGES_SQL, NAMES_SQL, kind_rows
from .module_names import (DECLARED_PACKAGE, PACKAGE_KINDS, file_module, import_binding, key,
                           python_packages)

NAME_CAP = 10
LAST_TIMINGS: dict[str, float] = {}


def _modules(con) -> list[tuple]:
    """One module row per indexed file (pure apart from reading `files`/`symbols`)."""
    kinds = ", ".join(f"'{k}'" for k in PACKAGE_KINDS)
    rows = con.execute(f"""
        SELECT f.path, f.language, d.qn FROM files f
        LEFT JOIN (SELECT path, arg_min(qualified_name, ordinal) AS qn FROM symbols
                   WHERE parent < 0 AND kind IN ({kinds}) GROUP BY path) d USING (path)
        WHERE f.status = 'indexed'""").fetchall()
    packages = python_packages(p for p, lang, _ in rows if lang == "python")
    out = []
    for path, lang, declared in rows:
        fm = file_module(path, lang, packages, declared or "")
        out.append((fm.path, fm.language, fm.module, fm.package, fm.sep,
                    lang in DECLARED_PACKAGE, key(fm.module)))
    return out


def _bindings(con, modules: list[tuple]) -> list[tuple]:
    """(path, ordinal, local, fq_key, module_key) for every import reference."""
    by_path = {m[0]: m for m in modules}
    module_keys = {m[6] for m in modules if m[6]}
    from .module_names import FileModule

    out = []
    for path, ordinal, target, module, alias in con.execute(
            "SELECT path, ordinal, target, module, alias FROM refs WHERE kind = 'import'").fetchall():
        m = by_path.get(path)
        if m is None:
            continue
        fm = FileModule(m[0], m[1], m[2], m[3], m[4])
        b = import_binding(fm, target or "", module or "", alias or "", module_keys)
        out.append((path, ordinal, b.local, key(b.fq) if fm.language != "go" else b.fq, b.module))
    return out


def _register(con, name: str, columns: list[str], rows: list[tuple]) -> None:
    import pyarrow as pa

    cols = list(zip(*rows)) if rows else [[] for _ in columns]
    table = pa.table({c: pa.array(list(v), type=pa.bool_() if c == "declared" else
                                  pa.int32() if c == "ordinal" else pa.string())
                      for c, v in zip(columns, cols)})
    con.register(f"{name}_arrow", table)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM {name}_arrow")
    con.unregister(f"{name}_arrow")


@derived_step
def symbol_graph(con, manifest: Manifest) -> None:
    """(Re)create modules, symbol_names and edges for the whole manifest."""
    t0 = time.perf_counter()
    modules = _modules(con)
    _register(con, "g_modules", ["path", "language", "module", "package", "sep", "declared", "mkey"],
              modules)
    _register(con, "g_kinds", ["ref_kind", "sym_kind"], kind_rows())
    t1 = time.perf_counter()
    con.execute(NAMES_SQL)
    t2 = time.perf_counter()
    _register(con, "g_bind_raw", ["path", "ordinal", "local", "fq_key", "mkey"],
              _bindings(con, modules))
    t3 = time.perf_counter()
    con.execute(EDGES_SQL.replace("$CAP", str(NAME_CAP)))
    t4 = time.perf_counter()
    for t in ("g_modules", "g_kinds", "g_bind_raw"):
        con.execute(f"DROP TABLE IF EXISTS {t}")
    LAST_TIMINGS.update(modules=t1 - t0, names=t2 - t1, bindings=t3 - t2, edges=t4 - t3,
                        total=t4 - t0)
