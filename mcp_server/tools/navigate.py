"""Navigation tools: one symbol in full, its source spans, a file's outline (adapters over
`codeagent.query.navigate`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ...errors import InvalidParameter
from ...query import file_outline, get_symbol, read_lines, resolve_symbol, source_spans
from ..facts import symbol_facts
from ..schemas import FileOutline, Span, SpanList, Symbol, SymbolDetailOut, symbol_of
from ..state import ServerState, metadata_of
from .graph import first_line
from .search import QUERY_TIMEOUT, Handle, Ref


COLLAPSE_AT = 12  # a symbol with more descendants lists their counts until expanded
SMALL_OUTLINE = 40  # symbols of an outline shown whole; a larger one collapses every class
DATA_KINDS = frozenset({"constant", "variable", "field", "property"})  # counted in a large outline


def collapse(symbols: list[Symbol], expand: set[str]) -> tuple[list[Symbol], dict[str, int]]:
    """(`symbols` (line order) without the descendants of symbols with more than COLLAPSE_AT
    of them, each of those saying in `collapsed` how many of each kind it holds; in a large
    outline the module-level constants and variables counted by kind instead of listed)."""
    if "*" in expand:
        return symbols, {}
    limit = COLLAPSE_AT if len(symbols) <= SMALL_OUTLINE else 0
    parent = {s.symbol_id: s.parent_id for s in symbols}
    by_id = {s.symbol_id: s for s in symbols}
    below: dict[str, list[Symbol]] = {}
    for s in symbols:
        up = s.parent_id
        while up in by_id:
            below.setdefault(up, []).append(s)
            up = parent[up]
    hidden: set[str] = set()
    for sid, members in below.items():
        s = by_id[sid]
        if len(members) <= limit or sid in hidden or expand & {s.name, s.qualified_name}:
            continue
        counts: dict[str, int] = {}
        for m in members:
            counts[m.kind] = counts.get(m.kind, 0) + 1
            hidden.add(m.symbol_id)
        s.collapsed = counts
    top: dict[str, int] = {}
    if len(symbols) > SMALL_OUTLINE and not expand & DATA_KINDS:
        for s in symbols:
            if s.parent_id not in by_id and s.kind in DATA_KINDS:
                top[s.kind] = top.get(s.kind, 0) + 1
                hidden.add(s.symbol_id)
    return [s for s in symbols if s.symbol_id not in hidden], top


def span(s, with_text: bool) -> Span:
    return Span.model_validate(s.to_dict() if with_text else {**s.to_dict(), "text": ""})


class NavigationTools:
    def __init__(self, state: ServerState) -> None:
        self.state = state

    def get_symbol(self, symbol_id: Handle, include_source: bool = False,
                   ref: Ref = None) -> SymbolDetailOut:
        """One symbol in full: signature, doc, spans, children and reference count (its
        source with include_source). Use it on a symbol_id from a search to understand an API
        before reading its source."""
        with self.state.view(ref) as view, view.deadline(QUERY_TIMEOUT):
            d = get_symbol(view, symbol_id)
            children = [symbol_of(c) for c in d.children]
            for c in children:  # each child's own get_symbol has the rest
                c.doc, c.signature = first_line(c.doc), first_line(c.signature, 160)
                if c.path == d.symbol.path:
                    c.path = c.language = ""
            sym = symbol_of(d.symbol)
            header = sym.signature
            if header.endswith("…") or ("(" in header and ")" not in header):  # cut when stored
                header = read_lines(view, d.symbol.path, d.symbol.line_start,
                                    min(d.symbol.line_end, d.symbol.line_start + 40))
            return SymbolDetailOut(symbol=sym, children=children, **symbol_facts(sym, header),
                                   spans=[span(s, include_source) for s in d.spans],
                                   reference_count=d.reference_count, metadata=metadata_of(view))

    def get_source_spans(self, symbol_id: Handle, with_text: bool = True, ref: Ref = None) -> SpanList:
        """Every source location of a symbol, primary first; with_text adds the
        source. Use it to read a symbol's code without knowing its file and lines."""
        with self.state.view(ref) as view, view.deadline(QUERY_TIMEOUT):
            sym = resolve_symbol(view, symbol_id)
            spans = source_spans(view, sym.symbol_id, with_text=with_text)
            return SpanList(symbol_id=sym.symbol_id, spans=[Span.model_validate(s.to_dict()) for s in spans],
                            metadata=metadata_of(view))

    def get_file_outline(
        self,
        path: Annotated[str, Field(min_length=1, max_length=4096,
                                   description="Repository-relative file path")],
        ref: Ref = None,
        expand: Annotated[list[str] | None, Field(
            description="Classes to list whole (\"*\": all; \"constant\": module data)")] = None,
    ) -> FileOutline:
        """The symbols a file defines, in line order, with signatures (no source); large
        classes' members counted until `expand`ed. Use it to see a file's structure before
        reading parts of it."""
        rel = self.state.sandbox.normalize(path)
        self.state.sandbox.check_lexical(rel)
        if not rel:
            raise InvalidParameter("path names the repository root, not a file")
        with self.state.view(ref) as view, view.deadline(QUERY_TIMEOUT):
            o = file_outline(view, rel)
            symbols, top = collapse([symbol_of(s) for s in o.symbols], set(expand or ()))
            for s in symbols:  # the outline's own path and language: said once, above them;
                s.path = s.language = ""  # a doc's first line (get_symbol has it whole)
                s.doc, s.signature = first_line(s.doc), first_line(s.signature, 160)
            return FileOutline(path=o.path, language=o.language, line_count=o.line_count,
                               symbols=symbols, collapsed=top or None, metadata=metadata_of(view))
