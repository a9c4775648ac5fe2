"""Inspection: file outlines, symbol detail, source spans; resolving a symbol handle."""

from __future__ import annotations

from .index import IndexView
from .results import Outline, SourceSpan, SymbolDetail, SymbolInfo


def resolve_symbol(view: IndexView, handle: str) -> SymbolInfo:
    """A symbol by symbol_id, symbol_stable_id, or an unambiguous qualified name / name.

    Raises NotFound, or InvalidParameter listing candidates when a name is ambiguous.
    """
    raise NotImplementedError


def get_symbol(view: IndexView, handle: str) -> SymbolDetail:
    """Full metadata of one symbol with its children, source spans and reference count."""
    raise NotImplementedError


def source_spans(view: IndexView, handle: str, *, with_text: bool = True) -> list[SourceSpan]:
    """Every source location of a symbol, primary first (several for same-named definitions)."""
    raise NotImplementedError


def file_outline(view: IndexView, path: str) -> Outline:
    """Symbols defined in `path`, in line order (NotFound for a path not in the manifest)."""
    raise NotImplementedError


def read_lines(view: IndexView, path: str, line_start: int, line_end: int) -> str:
    """Lines [line_start, line_end] (1-based, inclusive) of an indexed file, from the index."""
    raise NotImplementedError
