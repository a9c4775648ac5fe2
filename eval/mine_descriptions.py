"""Description -> symbol cases: a definition's docstring or doc comment is the query.

So the doc cannot find itself, each target's doc is cut out of the tree that gets indexed:
the case carries `strip_docs` spans, and the runner indexes a variant commit in which those
lines are replaced (Python docstrings by `...`, comments by blank lines), keeping every line
number valid. Definitions come from ctags; docstrings from Python's `ast`, doc comments from
the comment block right above the definition.
"""

from __future__ import annotations

import ast
import random
import re
from collections import Counter
from dataclasses import dataclass

from .cases import DocSpan, EvalCase, GoldSymbol
from .mine_definitions import Tag, candidate_tags

HASH_COMMENT_LANGUAGES = frozenset({"Sh", "Ruby", "Perl", "R", "Python", "Make", "Tcl", "Zsh"})
_C_COMMENT = re.compile(r"^\s*(///?|/\*\*?|\*/?)(.*?)(\*/)?\s*$")
_HASH_COMMENT = re.compile(r"^\s*#(?![!\[])(.*)$")


@dataclass(frozen=True)
class Doc:
    text: str
    span: DocSpan


def python_docstrings(source: str, path: str) -> dict[int, Doc]:
    """def/class line -> its docstring, for docstrings standing alone on their lines."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    lines = source.splitlines()
    out = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not node.body:
            continue
        first = node.body[0]
        if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)) or first.end_lineno is None:
            continue
        start, end = first.lineno, first.end_lineno
        if start <= node.lineno or lines[start - 1][: first.col_offset].strip() \
                or lines[end - 1][first.end_col_offset:].strip():
            continue
        out[node.lineno] = Doc(ast.get_docstring(node) or "", DocSpan(path, start, end, "..."))
    return out


def comment_doc(lines: list[str], def_line: int, language: str, path: str) -> Doc | None:
    """The comment block directly above line `def_line` (1-based), if there is one."""
    pattern = _HASH_COMMENT if language in HASH_COMMENT_LANGUAGES else _C_COMMENT
    texts: list[str] = []
    n = def_line - 1
    while n >= 1:
        m = pattern.match(lines[n - 1])
        if not m or not lines[n - 1].strip():
            break
        texts.append(m.group(1) if pattern is _HASH_COMMENT else m.group(2))
        n -= 1
    if not texts:
        return None
    return Doc("\n".join(t.strip() for t in reversed(texts)).strip(), DocSpan(path, n + 1, def_line - 1, ""))


def summary(doc: str, max_chars: int = 400) -> str:
    """The first paragraph of a doc, whitespace folded."""
    first = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0]
    return re.sub(r"\s+", " ", first).strip()[:max_chars]


def find_doc(tag: Tag, source: str, docstrings: dict[int, Doc]) -> Doc | None:
    if tag.path.endswith((".py", ".pyi")):
        return docstrings.get(tag.line)
    return comment_doc(source.splitlines(), tag.line, tag.language, tag.path)


def description_cases(tags: list[Tag], sources: dict[str, str], ref: str, limit: int | None = None,
                      seed: int = 0, min_words: int = 4) -> list[EvalCase]:
    """One case per documented definition whose doc summary is informative and does not
    spell the definition's own name; a seeded sample of `limit`, ordered by id."""
    docstrings = {p: python_docstrings(s, p) for p, s in sources.items() if p.endswith((".py", ".pyi"))}
    found = []
    for tag in candidate_tags(tags):
        source = sources.get(tag.path)
        if source is None:
            continue
        doc = find_doc(tag, source, docstrings.get(tag.path, {}))
        if doc is None:
            continue
        query = summary(doc.text)
        if len(query.split()) < min_words or re.search(rf"\b{re.escape(tag.name)}\b", query, re.I):
            continue
        found.append((tag, query, doc.span))
    repeated = {q for q, n in Counter(q for _, q, _ in found).items() if n > 1}
    unique = {(t.path, t.line): (t, q, s) for t, q, s in found if q not in repeated}
    keys = sorted(unique)
    if limit is not None and len(keys) > limit:
        keys = sorted(random.Random(seed).sample(keys, limit))
    return [EvalCase(query=q, ref=ref, gold_files=(t.path,), gold_symbols=(GoldSymbol(t.path, t.name, t.line),),
                     kind="descriptions", id=f"desc-{t.path}:{t.line}", strip_docs=(s,))
            for t, q, s in (unique[k] for k in keys)]


def strip_spans(source: str, spans: list[DocSpan]) -> str:
    """`source` with each span's lines replaced by its placeholder (indented) and blank lines."""
    lines = source.split("\n")
    for span in spans:
        first = lines[span.start_line - 1]
        indent = first[: len(first) - len(first.lstrip())]
        lines[span.start_line - 1] = indent + span.placeholder if span.placeholder else ""
        for n in range(span.start_line, span.end_line):
            lines[n] = ""
    return "\n".join(lines)


def scrub_copies(text: str, queries: tuple[str, ...] | list[str], min_chars: int = 20) -> str:
    """`text` without verbatim copies of the (long enough) queries: a dataset file or a doc page
    quoting a docstring would otherwise answer the query in the doc's place."""
    for query in queries:
        if len(query) >= min_chars and query in text:
            text = text.replace(query, "")
    return text
