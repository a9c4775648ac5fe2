"""Golden tests: each tests/indexer/golden/<language>/ holds one real-looking source file and
the symbols, references and chunks we expect from it; a folder named <language>.<case> holds
one more case of that language (other golden tests read the language the same way).
`UPDATE_GOLDEN=1` rewrites them."""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import pytest

from codeagent.indexer.extract import extract
from codeagent.types import NO_PARENT, Extraction

GOLDEN = Path(__file__).parent / "golden"
LANGUAGES = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


def summarise(ex: Extraction) -> dict:
    """The reviewed, line-level view of an extraction (byte offsets left out)."""
    def qname(i: int) -> str:
        return ex.symbols[i].qualified_name if i != NO_PARENT else ""

    symbols = [{
        "kind": s.kind, "name": s.name, "qualified_name": s.qualified_name,
        "lines": [s.span.start_line, s.span.end_line], "name_line": s.name_span.start_line,
        "parent": qname(s.parent), "signature": s.signature, "doc": s.doc,
        "visibility": s.visibility, "modifiers": list(s.modifiers),
    } for s in ex.symbols]
    refs = [{"kind": r.kind, "target": r.target, "module": r.module, "alias": r.alias,
             "line": r.span.start_line, "source": qname(r.source)} for r in ex.references]
    chunks = [[c.span.start_line, c.span.end_line, qname(c.symbol)] for c in ex.chunks]
    return {"symbols": symbols, "references": refs, "chunks": chunks}


def _dump(data: dict) -> str:
    lines = ["{"]
    for n, key in enumerate(("symbols", "references", "chunks")):
        lines.append(f'  "{key}": [')
        items = data[key]
        for i, item in enumerate(items):
            lines.append("    " + json.dumps(item, ensure_ascii=False) + ("," if i + 1 < len(items) else ""))
        lines.append("  ]" + ("," if n < 2 else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("language", LANGUAGES)
def test_golden(language: str) -> None:
    folder = GOLDEN / language
    source = next(p for p in folder.iterdir() if p.name.startswith("sample."))
    actual = _dump(summarise(extract(source.read_bytes(), language.split(".")[0])))
    expected_path = folder / "expected.json"
    if os.environ.get("UPDATE_GOLDEN") or not expected_path.exists():
        expected_path.write_text(actual, encoding="utf-8")
    expected = expected_path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                            "expected.json", "actual"))
        pytest.fail(f"{language}: extraction differs from {expected_path}\n{diff}", pytrace=False)
