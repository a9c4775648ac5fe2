"""Pure extraction: (bytes, language) -> Extraction. No I/O, no paths.

Dispatch: Markdown/RST -> document sections; languages tree-sitter can parse -> the
tree-sitter extractor (definitions, references, syntax-aware chunks); anything else ->
line-window text chunks.
"""

from __future__ import annotations

from ...types import Extraction
from ..languages import MARKDOWN, RST, TEXT
from .text import doc_sections, line_chunks


def extract(source: bytes, language: str) -> Extraction:
    """Extract symbols, references and chunks from UTF-8 `source` in `language`."""
    if language in (MARKDOWN, RST):
        return Extraction(chunks=doc_sections(source.decode("utf-8"), language))
    if language != TEXT:
        from .treesitter import extract_tree  # heavy import only when there is code to parse

        result = extract_tree(source, language)  # works on the bytes: no decode of the file
        if result is not None:
            return result
    return Extraction(chunks=line_chunks(source.decode("utf-8")))
