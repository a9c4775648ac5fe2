"""Inspection: file outlines, symbol detail, source spans; resolving a symbol handle."""

from __future__ import annotations

from ..errors import InvalidParameter, NotFound, Withheld
from ..format import SKIP_SECRET
from .index import IndexView
from ..model import Outline, SourceSpan, SymbolDetail, SymbolInfo
from .sourcetext import lines_of, span_text
from .edge_table import EdgeTable
from .symbol_table import has_fq_keys, has_names, resident_table

SYMBOL_COLUMNS = ("s.symbol_id, s.stable_id, s.path, s.language, s.kind, s.name, s.qualified_name, "
                  "coalesce(s.signature, ''), coalesce(s.doc, ''), coalesce(s.visibility, ''), "
                  "coalesce(s.modifiers, []), s.start_line, s.end_line, s.start_col, s.end_col, "
                  "s.name_line, s.parent_id, coalesce(s.body_hash, ''), "
                  "coalesce({fq}, s.qualified_name)")
MAX_SPAN_LINES = 400


def symbol_info(row: tuple) -> SymbolInfo:
    return SymbolInfo(
        symbol_id=row[0], symbol_stable_id=row[1], path=row[2], language=row[3], kind=row[4],
        name=row[5], qualified_name=row[6], signature=row[7], doc=row[8], visibility=row[9],
        modifiers=list(row[10]), line_start=row[11], line_end=row[12], col_start=row[13],
        col_end=row[14], name_line=row[15], parent_id=row[16], body_hash=row[17], fq_name=row[18])


def symbols_where(view: IndexView, where: str, params: list, limit: int = 50) -> list[SymbolInfo]:
    """Symbols meeting a SQL condition on the `symbols` table, with their module-qualified
    names; the condition is applied before the join."""
    named = has_names(view)
    join = "LEFT JOIN symbol_names n USING (symbol_id)" if named else ""
    columns = SYMBOL_COLUMNS.format(fq="n.fq_name" if named else "NULL::VARCHAR")
    rows = view.sql(f"""WITH s AS (SELECT * FROM symbols WHERE {where}
                                  ORDER BY path, start_line, ordinal LIMIT {int(limit)})
        SELECT {columns} FROM s {join} ORDER BY s.path, s.start_line, s.ordinal""", params)
    return [symbol_info(r) for r in rows]


def symbols_with(view: IndexView, column: str, value: str, limit: int = 50) -> list[SymbolInfo]:
    """Symbols whose `column` (symbol_table.COLUMNS) equals `value`, in (path, line, ordinal)
    order: from the view's in-memory symbol table when it keeps one, else through SQL."""
    table = resident_table(view)
    if table is not None:
        return table.infos(table.where(column, value)[:limit])
    return symbols_where(view, f"{column} = ?", [value], limit)


def _by_module_name(view: IndexView, handle: str, limit: int) -> list[SymbolInfo]:
    table = resident_table(view)
    if table is not None:
        return table.infos(table.fq_matches(handle)[:limit])
    return symbols_where(view, "symbol_id IN (SELECT symbol_id FROM symbol_names WHERE fq_name = ? "
                               "OR fq_key = replace(replace(?, '::', '.'), '#', '.'))",
                         [handle, handle], limit)


def _by_name_suffix(view: IndexView, handle: str, limit: int) -> list[SymbolInfo]:
    """Symbols whose module-qualified name ends with the dotted (or `::`) `handle`:
    `context.spawn` finds `tokio::runtime::context::spawn`, as search would."""
    folded = handle.replace("::", ".").replace("#", ".").strip(".")
    if "." not in folded:
        return []
    return symbols_where(view, "symbol_id IN (SELECT symbol_id FROM symbol_names WHERE "
                               "ends_with(fq_key, ?))", ["." + folded], limit)


def _describe(cands: list[SymbolInfo]) -> str:
    return "; ".join(f"{c.qualified_name} ({c.kind}, {c.path}:{c.line_start}, id {c.symbol_id})"
                     for c in cands[:10])


def resolve_symbol(view: IndexView, handle: str) -> SymbolInfo:
    """A symbol by symbol_id, symbol_stable_id, or an unambiguous qualified name / name.

    Raises NotFound, or InvalidParameter listing candidates when a name is ambiguous.
    """
    handle = handle.strip()
    if not handle:
        raise InvalidParameter("empty symbol handle")
    for column in ("symbol_id", "stable_id"):
        found = symbols_with(view, column, handle, limit=1)
        if found:
            return found[0]
    folded = handle.replace("::", ".").replace("#", ".")  # `Type::method` as documented
    tiers = [lambda: symbols_with(view, "qualified_name", handle),
             lambda: symbols_with(view, "name", handle)]
    if folded != handle:
        tiers.insert(1, lambda: symbols_with(view, "qualified_name", folded))
    if has_fq_keys(view):
        tiers.insert(0, lambda: _by_module_name(view, handle, 50))
        tiers.append(lambda: _by_name_suffix(view, handle, 50))
    for tier in tiers:
        found = tier()
        if len(found) == 1:
            return found[0]
        if found:
            raise InvalidParameter(
                f"{handle!r} names {len(found)} symbols: {_describe(found)}",
                hint="pass a symbol_id (from `codeagent search`) to choose one")
    if view.count("symbols") == 0:
        raise NotFound(f"no symbol {handle!r}: this index has no symbols (no extractor for its "
                       "languages yet)", hint="use `codeagent search --mode text` instead")
    raise NotFound(f"no symbol {handle!r} in manifest {view.manifest_id[:12]}",
                   hint=f"find it with `codeagent search {handle} --mode symbol`")


def source_spans(view: IndexView, handle: str, *, with_text: bool = True) -> list[SourceSpan]:
    """Every source location of a symbol, primary first: the same stable id may be defined in
    several files (or several times in one), e.g. platform variants or overloads."""
    sym = resolve_symbol(view, handle)
    same = symbols_with(view, "stable_id", sym.symbol_stable_id, limit=100)
    same.sort(key=lambda s: (s.symbol_id != sym.symbol_id, s.path, s.line_start))
    spans = []
    for s in same:
        text = ""
        if with_text:
            lines = lines_of(view, s.path)
            text = span_text(lines, s.line_start, min(s.line_end, s.line_start + MAX_SPAN_LINES - 1))
        spans.append(SourceSpan(s.path, s.line_start, s.line_end, s.symbol_id == sym.symbol_id, text))
    return spans


def reference_count(view: IndexView, sym: SymbolInfo) -> int:
    table = resident_table(view)
    if table is not None and view.has_table("edges") and sym.symbol_id in table.by_id:
        return EdgeTable.load(view).count_into(sym.symbol_id)  # resident: see edge_table.py
    if view.has_table("edges"):
        return view.sql("SELECT count(*) FROM edges WHERE dst_id = ? AND kind <> 'contains'",
                        [sym.symbol_id])[0][0]
    return view.sql("SELECT count(*) FROM refs WHERE target = ? OR ends_with(target, ?)",
                    [sym.name, "." + sym.name])[0][0]


def get_symbol(view: IndexView, handle: str) -> SymbolDetail:
    """Full metadata of one symbol with its children, source spans and reference count."""
    sym = resolve_symbol(view, handle)
    children = symbols_with(view, "parent_id", sym.symbol_id, limit=500)
    return SymbolDetail(symbol=sym, children=children, spans=source_spans(view, sym.symbol_id),
                        reference_count=reference_count(view, sym), metadata=view.metadata())


def file_outline(view: IndexView, path: str) -> Outline:
    """Symbols defined in `path`, in line order (NotFound for a path not in the manifest)."""
    path = path.strip().lstrip("./") if path.startswith("./") else path.strip()
    row = view.sql("SELECT language, line_count, status, reason FROM files WHERE path = ?", [path])
    if not row:
        raise NotFound(f"{path} is not in manifest {view.manifest_id[:12]}",
                       hint="paths are repository-relative with '/' separators")
    language, line_count, status, reason = row[0]
    if reason == SKIP_SECRET:
        raise Withheld(f"{path} holds what looks like a secret; the index withheld it")
    symbols = symbols_with(view, "path", path, limit=100_000)
    completeness = "complete" if status == "indexed" else "partial"
    return Outline(path=path, language=language, line_count=line_count or 0, symbols=symbols,
                   metadata=view.metadata(completeness))


def read_lines(view: IndexView, path: str, line_start: int, line_end: int) -> str:
    """Lines [line_start, line_end] (1-based, inclusive) of an indexed file, from the index."""
    if line_start < 1 or line_end < line_start:
        raise InvalidParameter(f"bad line range {line_start}-{line_end}")
    return span_text(lines_of(view, path), line_start, line_end)
