"""Core value types shared by the build side (`indexer`) and the read side (`query`).

Extraction types are path-independent: they describe one file's bytes in one language and
go into its content-addressed shard. Path-dependent facts (module-qualified names, symbol
ids, resolved edges) are derived per manifest at assembly time.

The value types are named tuples: immutable like frozen dataclasses, and a file's hundreds of
thousands of them can be made without a Python call each (`tuple.__new__(Span, row)`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

NO_PARENT = -1


class Span(NamedTuple):
    """Lines are 1-based inclusive; columns and bytes are 0-based, end exclusive."""

    start_line: int
    start_col: int
    end_line: int
    end_col: int
    start_byte: int
    end_byte: int


class Symbol(NamedTuple):
    """A definition. `parent` is the index of the enclosing symbol in `Extraction.symbols`."""

    kind: str
    name: str
    qualified_name: str
    span: Span
    name_span: Span
    parent: int = NO_PARENT
    signature: str = ""
    doc: str = ""
    visibility: str = ""
    modifiers: tuple[str, ...] = ()
    body_hash: str = ""


class Reference(NamedTuple):
    """A use of a name: kind is call | import | inherit | implement | type_ref | reference.

    `source` is the index of the innermost enclosing symbol (NO_PARENT at top level).
    `target` is the name as written (`os.path.join`, `Base`); `module` names the imported
    module for imports (`os.path` for `from os.path import join`) and, for a call on a
    receiver whose type the source writes (`x: Foo` ... `x.m()`), that type's name.
    """

    kind: str
    target: str
    span: Span
    source: int = NO_PARENT
    module: str = ""
    alias: str = ""


class Chunk(NamedTuple):
    """A piece of a file for full-text search: kind is code | text | doc_section.

    For doc sections `heading` is the heading path joined by " > ".
    """

    kind: str
    span: Span
    text: str
    heading: str = ""
    symbol: int = NO_PARENT


@dataclass
class Extraction:
    symbols: list[Symbol] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
