"""A work-tree overlay: a manifest assembled as the changed paths' rows on top of the assembled
database of another manifest (its base), read together as one index.

Layout of `assembled/<manifest id>/` for an overlay (instead of index.duckdb):
  OVERLAY_MARKER  JSON {"version": OVERLAY_VERSION, "base": <base manifest id>}; the base's
                  assembled directory is kept (not pruned) while an overlay names it.
  OVERLAY_FILE    a DuckDB file holding, for every table of MERGED_TABLES, the rows of the
                  paths it replaces (same columns as the base's table) and mask_<table>(path):
                  the paths whose base rows it hides; meta (the overlay's manifest, with
                  overlay_version and base_manifest_id).
  SUMS, COMPLETE  as for every assembly.
  GRAPH_PART/     (version 2, an overlay published before its graph: the marker's "graph" names
                  the manifest whose graph rows OVERLAY_FILE carries, the previous build's) once
                  the graph step has run: GRAPH_FILE holding the graph tables of MERGED_TABLES
                  (rows and masks, as above) for the overlay's own manifest, and its own SUMS
                  and COMPLETE. Renamed into place whole: a reader reads the graph tables from
                  it when it is complete, else from OVERLAY_FILE, and says the graph is
                  `indexing` (query/overlay.py).

A reader attaches the base (BASE_DB) and the overlay (OVERLAY_DB) read-only and creates one
view per table (merged_views_sql): the base's rows outside the mask, then the overlay's. The
per-path tables (files, chunks, symbols, refs, term_postings, docs) mask every path whose
manifest entry differs from the base's; the graph tables mask the paths (edges: src_path)
whose rows differ from the base's, so an edit that changes how references in other files
resolve carries those files' edges too. The views of TABLES_SQL (postings, term_df, corpus)
are created again over the merged tables: BM25 statistics are those of the overlay's manifest,
exactly as a full assembly computes them.

Layers (version 3): OVERLAY_FILE may be the top of a short chain. The marker's "layers" names,
bottom first, the files beneath it in the same directory (LAYER_FILE: hard links to the files
of the overlays it was built after, so a layer is never copied, and it lives as long as any
overlay whose directory links it; SUMS covers them like every file of the directory). Each
layer's per-path tables (PER_PATH_TABLES) hold the rows of the paths it masks, and its masks
hide those paths' rows in the base and in every layer beneath it: a path's rows are those of
the topmost layer masking it, else the base's. A layer may mask a path whose rows equal the
base's (an edit undone): it is read the same. The graph tables and meta are read from the
top file only (each top holds every graph row that differs from the base, as in version 2).
A reader attaches the layers (LAYER_DB i, TOP_DB the top) and creates in an in-memory
OVERLAY_DB views flattening them (flattened_views_sql): every reader of OVERLAY_DB's tables
and masks reads the chain as one overlay. The writer bounds the chain (MAX_LAYERS).

OVERLAY_VERSION history:
  1: per-table masks and rows as above.
  2: the marker's "graph" and GRAPH_PART (an overlay published in two phases); version 1
     overlays are read as ones whose graph is complete.
  3: the marker's "layers" (a chain of per-path layers); versions 1 and 2 are read as chains
     of one (no "layers").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from .assembly import GRAPH_TABLES_SQL, TABLES_SQL, sql_literals

OVERLAY_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
OVERLAY_FILE = "overlay.duckdb"
OVERLAY_MARKER = "OVERLAY"
GRAPH_PART = "graph"
GRAPH_FILE = "graph.duckdb"
BASE_DB = "base"
OVERLAY_DB = "overlay"
GRAPH_DB = "graph_part"
TOP_DB = "overlay_top"
LAYERS = "layers"
# The most files a chain holds (its top included): a build that would pass it writes one
# flattened overlay (indexer/assemble/overlay.py).
MAX_LAYERS = 8

# Table -> the column naming the path its rows belong to.
MERGED_TABLES = {
    "files": "path", "chunks": "path", "symbols": "path", "refs": "path",
    "term_postings": "path", "docs": "path",
    "symbol_names": "path", "modules": "path", "import_bindings": "path", "edges": "src_path",
}
PER_PATH_TABLES = ("files", "chunks", "symbols", "refs", "term_postings", "docs")
GRAPH_TABLES = ("symbol_names", "modules", "import_bindings", "edges")
# Read from the base as they are (the graph's layout version).
BASE_ONLY_TABLES = ("graph_version",)


def table_views() -> list[str]:
    """The CREATE VIEW statements of TABLES_SQL (views over the per-path tables)."""
    return [s.strip() + ";" for s in TABLES_SQL.split(";") if re.match(r"\s*CREATE VIEW", s)]


def layer_file(i: int) -> str:
    """The name of the `i`th layer beneath the top (format doc: Layers)."""
    return f"layer-{i}.duckdb"


def layer_db(i: int) -> str:
    return f"overlay_layer_{i}"


def marker_layers(marker: dict) -> list[str]:
    """The file names of the layers beneath an overlay's top, bottom first ([] before version 3)."""
    return [str(name) for name in marker.get(LAYERS) or []]


def layered_sql(table: str, base: str | None, layers: Sequence[str], *, rowid: bool = False) -> str:
    """A SELECT of `table`'s rows over `base` (None: no base) and `layers` (database names,
    bottom first): each one's rows outside the masks of those above it. With `rowid`, a
    column rowid unique over all (the writer's graph step names rows by it)."""
    column = MERGED_TABLES[table]
    sources = ([base] if base else []) + list(layers)
    first = 1 if base else 0
    parts = []
    for i, db in enumerate(sources):
        above = layers[i + 1 - first:]
        ids = f", rowid + {i << 40} AS rowid" if rowid else ""
        where = (" WHERE " + " AND ".join(f"{column} NOT IN (SELECT path FROM {a}.main.mask_{table})" for a in above)
                 if above else "")
        parts.append(f"SELECT *{ids} FROM {db}.main.{table}{where}")
    return " UNION ALL ".join(parts)


def merged_view_sql(table: str, base: str = BASE_DB, overlay: str | Sequence[str] = OVERLAY_DB, *,
                    rowid: bool = False) -> str:
    """The view `table` over the base's rows outside the mask and the overlay's rows (or a
    chain's, `overlay` a sequence of layers, bottom first); with `rowid`, a column rowid
    unique over all (the writer's graph step names rows by it)."""
    layers = [overlay] if isinstance(overlay, str) else list(overlay)
    return f"CREATE OR REPLACE VIEW {table} AS {layered_sql(table, base, layers, rowid=rowid)};"


def flattened_views_sql(target: str, layers: Sequence[str]) -> str:
    """Views in database `target` reading the chain `layers` (bottom first; the last is the top)
    as one overlay (format doc: Layers): per-path tables and masks flattened, graph tables,
    their masks and meta the top's."""
    top, out = layers[-1], []
    for table in MERGED_TABLES:
        if table in PER_PATH_TABLES:
            rows = layered_sql(table, None, layers)
            mask = " UNION ".join(f"SELECT path FROM {db}.main.mask_{table}" for db in layers)
        else:
            rows, mask = f"SELECT * FROM {top}.main.{table}", f"SELECT path FROM {top}.main.mask_{table}"
        out.append(f"CREATE OR REPLACE VIEW {target}.main.{table} AS {rows};")
        out.append(f"CREATE OR REPLACE VIEW {target}.main.mask_{table} AS {mask};")
    out.append(f"CREATE OR REPLACE VIEW {target}.main.meta AS SELECT * FROM {top}.main.meta;")
    return "\n".join(out)


def attach_chain_sql(directory: Path, marker: dict, top_alias: str, target: str, prefix: str = "") -> list[str]:
    """Statements attaching, read-only, the overlay chain in `directory` (its marker `marker`):
    without layers its top as `target`; else the layers (`prefix` + layer_db(i)), the top as
    `top_alias` and in-memory `target` flattening them (flattened_views_sql)."""
    names = marker_layers(marker)
    top = str(directory / OVERLAY_FILE)
    if not names:
        return [f"ATTACH {sql_literals([top])} AS {target} (READ_ONLY)"]
    aliases = [prefix + layer_db(i) for i in range(len(names))]
    out = [f"ATTACH {sql_literals([str(directory / n)])} AS {a} (READ_ONLY)" for n, a in zip(names, aliases)]
    out += [f"ATTACH {sql_literals([top])} AS {top_alias} (READ_ONLY)", f"ATTACH ':memory:' AS {target}",
            flattened_views_sql(target, [*aliases, top_alias])]
    return out


def merged_views_sql(tables: tuple[str, ...] | None = None, base: str = BASE_DB,
                     overlay: str = OVERLAY_DB, graph: str | None = None) -> str:
    """Views, in the connection's own (in-memory) database, that read `base` and `overlay`
    as one index: `tables` (default all of MERGED_TABLES) merged, meta from the overlay,
    graph_version from the base, then the views of TABLES_SQL. `graph`: the database the
    graph tables' rows and masks are read from (a landed GRAPH_PART) instead of `overlay`."""
    names = tuple(MERGED_TABLES) if tables is None else tables
    out = [merged_view_sql(t, base, graph if graph and t in GRAPH_TABLES else overlay) for t in names]
    out.append(f"CREATE OR REPLACE VIEW meta AS SELECT * FROM {overlay}.main.meta;")
    out += [f"CREATE OR REPLACE VIEW {t} AS SELECT * FROM {base}.main.{t};" for t in BASE_ONLY_TABLES]
    out += table_views()
    return "\n".join(out)


def restricted_view_sql(schema: str, table: str, column: str, listed: str, unmasked: str | None,
                        base: str = BASE_DB, overlay: str = OVERLAY_DB) -> str:
    """The view `schema`.`table`: the rows of the merged `table` whose `column` is one of
    `listed` (SQL literals). A reader's cursor with `schema` first on its search path reads
    only those rows (query/overlay_arrays.py: the rows of an overlay's masked paths). A
    listed path the table's mask holds has only the overlay's rows, so the base is read only
    for `unmasked` (the listed paths outside the mask; None: none, and no scan of the base)."""
    from_base = (f"SELECT * FROM {base}.main.{table} WHERE {column} IN ({unmasked}) UNION ALL "
                 if unmasked else "")
    return (f"CREATE OR REPLACE VIEW {schema}.{table} AS {from_base}"
            f"SELECT * FROM {overlay}.main.{table} WHERE {column} IN ({listed})")


def overlay_tables_sql() -> str:
    """The overlay file's tables: those of an assembly (no views) and the masks."""
    tables = [s.strip() + ";" for s in (TABLES_SQL + GRAPH_TABLES_SQL).split(";")
              if s.strip() and not re.match(r"\s*CREATE VIEW", s)]
    return "\n".join(tables + [f"CREATE TABLE mask_{t}(path VARCHAR);" for t in MERGED_TABLES])


def overlay_problem(marker: dict) -> str | None:
    """Why a reader of this codeagent cannot read an overlay with this marker, or None."""
    if marker.get("version") not in READABLE_VERSIONS:
        return (f"index overlay version {marker.get('version')}, this codeagent reads "
                f"{' and '.join(map(str, READABLE_VERSIONS))}")
    return None


def graph_of(marker: dict, manifest_id: str, landed: bool) -> str:
    """The manifest whose graph an overlay with this marker answers from: its own, unless it
    was published before its graph (the marker's "graph") and GRAPH_PART has not `landed`."""
    pending = marker.get("graph")
    return manifest_id if not pending or landed else str(pending)
