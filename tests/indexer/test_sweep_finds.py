"""Extraction faults the real-repository sweep (bench/sweep.py) found, each on a small source
of the same shape."""

from __future__ import annotations

from codeagent.indexer.extract import extract
from codeagent.types import NO_PARENT

# okhttp's Hpack.Reader: a primary constructor on the line after the class name, with an
# annotation on a line of its own; the class ended at its name and every member after it was
# nested in a symbol named `constructor`.
KOTLIN = """object Hpack {
  class Reader
    @JvmOverloads
    constructor(
      source: Source,
      private val headerTableSizeSetting: Int,
    ) {
      private val headerList = mutableListOf<Header>()

      fun getAndResetHeaderList(): List<Header> {
        return headerList.toList()
      }
    }
}
"""


def test_kotlin_constructor_after_an_annotation_line_keeps_the_class_whole() -> None:
    symbols = extract(KOTLIN.encode(), "kotlin").symbols
    outline = [(s.qualified_name, symbols[s.parent].qualified_name if s.parent != NO_PARENT else "")
               for s in symbols]
    assert ("Hpack.Reader.getAndResetHeaderList", "Hpack.Reader") in outline
    assert ("Hpack.Reader.headerList", "Hpack.Reader") in outline
    assert not any("constructor." in q for q, _ in outline)
    reader = next(s for s in symbols if s.qualified_name == "Hpack.Reader")
    assert (reader.span.start_line, reader.span.end_line) == (2, 13)
