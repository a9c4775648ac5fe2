"""Navigation tools: one symbol in full, its source spans, a file's outline (adapters over
`codeagent.query.navigate`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ...errors import InvalidParameter
from ...query import file_outline, get_symbol, resolve_symbol, source_spans
from ..schemas import FileOutline, Span, SpanList, SymbolDetailOut, symbol_of
from ..state import ServerState, metadata_of
from .search import QUERY_TIMEOUT, Handle, Ref


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
            return SymbolDetailOut(symbol=symbol_of(d.symbol),
                                   children=[symbol_of(c) for c in d.children],
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
    ) -> FileOutline:
        """The symbols a file defines, in line order, with signatures and spans (no
        source). Use it to see a file's structure before reading parts of it."""
        rel = self.state.sandbox.normalize(path)
        self.state.sandbox.check_lexical(rel)
        if not rel:
            raise InvalidParameter("path names the repository root, not a file")
        with self.state.view(ref) as view, view.deadline(QUERY_TIMEOUT):
            o = file_outline(view, rel)
            return FileOutline(path=o.path, language=o.language, line_count=o.line_count,
                               symbols=[symbol_of(s) for s in o.symbols],
                               metadata=metadata_of(view))
