"""The `changed` part of an impact answer: the symbol diff of two indexes (query/diff.py)
made precise with the two sides' symbol rows and a line diff of each modified file.

- a modified symbol is `signature_changed` when its signature differs, else `body_changed`;
- a class (any symbol with members) whose own lines did not change, only its members', is
  left out: its members are listed, and the walk from the class would list every user of it;
- lines of a modified file outside every symbol (imports, module constants, top-level code)
  become one `file` entry for the file, named by its module.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from dataclasses import dataclass

from ..format.manifest import Manifest
from .diff import Diff, SymbolChange, SymbolFacts, diff_files, diff_manifests, paths_to_load
from .index import IndexView
from .sourcetext import file_lines
from .symbol_table import resident_table

# Changes that can break a dependent: it names or calls something that is gone or different.
BREAKING = ("removed", "renamed", "signature_changed", "moved")
# nulls read as '', as the resident symbol table has them: the two sides compare alike either way
_SYMBOLS_SQL = """
SELECT path, symbol_id, stable_id, kind, qualified_name, coalesce(signature, ''), coalesce(visibility, ''),
       start_line, end_line, parent_id, name, coalesce(body_hash, '')
FROM symbols WHERE path IN (SELECT unnest(?::VARCHAR[]))
"""


@dataclass(frozen=True)
class Row:
    path: str
    symbol_id: str
    stable_id: str
    kind: str
    name: str
    signature: str
    visibility: str
    start: int
    end: int
    parent_id: str | None
    short_name: str
    body_hash: str


@dataclass
class Changed:
    """One change: a symbol's, or (kind `file`) a file's lines outside every symbol."""

    key: str  # the handle the walk and the tests refer to
    change: str  # added removed body_changed signature_changed renamed moved (file: modified...)
    kind: str
    name: str
    path: str
    line_start: int
    line_end: int
    symbol_id: str | None = None
    stable_id: str | None = None
    old_name: str | None = None
    old_path: str | None = None
    old_line_start: int | None = None
    old_symbol_id: str | None = None
    signature: str | None = None
    old_signature: str | None = None
    public: bool = False
    breaking: bool = False


def symbol_rows(view: IndexView, paths: set[str]) -> dict[tuple[str, str], Row]:
    """The symbols of `paths`: from the resident symbol table a long-lived reader keeps (a
    query on the wide symbols table scans it: 50 ms on the standard library), else SQL."""
    if not paths:
        return {}
    table = resident_table(view)
    if table is None:
        return {(r[0], r[2]): Row(*r) for r in view.sql(_SYMBOLS_SQL, [sorted(paths)])}
    rows = [i for p in sorted(paths) for i in table.where("path", p)]
    return {(s.path, s.symbol_stable_id): Row(s.path, s.symbol_id, s.symbol_stable_id, s.kind, s.qualified_name,
                                              s.signature, s.visibility or "", s.line_start, s.line_end,
                                              s.parent_id, s.name, s.body_hash)
            for s in table.infos(rows)}


def file_texts(view: IndexView, paths: set[str]) -> dict[str, str]:
    """Texts of `paths` (sourcetext's: mapped in a long-lived reader, recent ones cached)."""
    return {p: "\n".join(lines) for p, lines in file_lines(view, sorted(paths)).items()} if paths else {}


def changed_lines(old: str, new: str) -> tuple[set[int], set[int]]:
    """(old lines, new lines), 1-based, that a line diff of the two texts replaces or inserts;
    blank lines left out (a blank line between two methods belongs to neither)."""
    a, b = old.splitlines(), new.splitlines()
    # the common beginning and end are cut first: an edit is small, a file may not be
    n = min(len(a), len(b))
    head = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), n)
    tail = next((i for i, (x, y) in enumerate(zip(reversed(a), reversed(b))) if i >= n - head or x != y),
                n - head)
    mid_a, mid_b = a[head:len(a) - tail], b[head:len(b) - tail]
    olds, news = set(), set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, mid_a, mid_b, autojunk=False).get_opcodes():
        if tag != "equal":
            olds.update(head + i + 1 for i in range(i1, i2) if mid_a[i].strip())
            news.update(head + j + 1 for j in range(j1, j2) if mid_b[j].strip())
    return olds, news


def _public(row: Row | None, name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    if row is not None and row.visibility and row.visibility != "public":
        return False
    return not last.startswith("_") or (last.startswith("__") and last.endswith("__"))


def _entry(c: SymbolChange, old: Row | None, new: Row | None) -> Changed:
    change = c.change
    if change == "modified":
        change = "signature_changed" if old and new and old.signature != new.signature else "body_changed"
    ref = new or old
    name = c.qualified_name or c.old_qualified_name or ""
    return Changed(
        key=(new.symbol_id if new else old.symbol_id) if ref else f"{c.path or c.old_path}:{name}",
        change=change, kind=c.kind, name=name, path=c.path or c.old_path or "",
        line_start=(new or old).start if ref else (c.line or c.old_line or 0),
        line_end=(new or old).end if ref else (c.line or c.old_line or 0),
        symbol_id=new.symbol_id if new else None, stable_id=c.stable_id or c.old_stable_id,
        old_name=c.old_qualified_name if c.qualified_name and c.old_qualified_name != c.qualified_name else None,
        old_path=c.old_path if c.path and c.old_path != c.path else None, old_line_start=c.old_line,
        old_symbol_id=old.symbol_id if old else None,
        signature=new.signature if new else None, old_signature=old.signature if old else None,
        public=_public(ref, name), breaking=change in BREAKING)


def _spans(rows: list[Row]) -> list[tuple[int, int]]:
    return [(r.start, r.end) for r in rows]


def _inside(line: int, spans: list[tuple[int, int]]) -> bool:
    return any(s <= line <= e for s, e in spans)


def _own_lines(row: Row | None, members: list[Row], lines: set[int]) -> bool:
    """Did any of `lines` change inside `row`'s span but outside its members' spans?"""
    if row is None:
        return False
    kids = _spans(members)
    return any(row.start <= n <= row.end and not _inside(n, kids) for n in lines)


Rows = dict[tuple[str, str], Row]


def symbol_diff(a: IndexView, b: IndexView, ma: Manifest, mb: Manifest) -> tuple[Diff, Rows, Rows]:
    """query/diff.py's diff of the manifests of `a` and `b`, its symbols read from the two
    assembled indexes (not from the shards), and those symbols' rows on each side."""
    files = diff_files(ma, mb)
    paths_a, paths_b = paths_to_load(files)
    olds, news = symbol_rows(a, paths_a), symbol_rows(b, paths_b)

    def facts(rows: Rows) -> dict[str, list[SymbolFacts]]:
        out: dict[str, list[SymbolFacts]] = defaultdict(list)
        for r in sorted(rows.values(), key=lambda r: (r.path, r.start, r.name)):
            out[r.path].append(SymbolFacts(r.path, r.stable_id, r.kind, r.short_name, r.name, r.body_hash, r.start))
        return out

    diff = diff_manifests(ma, mb, facts(olds), facts(news), a_id=a.manifest_id, b_id=b.manifest_id)
    return diff, olds, news


def changed_entries(a: IndexView, b: IndexView, diff: Diff, olds: Rows, news: Rows,
                    modules: dict[str, str]) -> list[Changed]:
    """The changes of `diff` (from index `a` to index `b`), as module docstring says."""
    modified = {f.path for f in diff.files if f.change == "modified"}
    old_text, new_text = file_texts(a, modified), file_texts(b, modified)
    lines = {p: changed_lines(old_text[p], new_text[p]) for p in modified if p in old_text and p in new_text}
    members_a: dict[str, list[Row]] = defaultdict(list)
    members_b: dict[str, list[Row]] = defaultdict(list)
    for rows, members in ((olds, members_a), (news, members_b)):
        for r in rows.values():
            if r.parent_id:
                members[r.parent_id].append(r)
    out = []
    for c in diff.symbols:
        old = olds.get((c.old_path, c.old_stable_id)) if c.old_path else None
        new = news.get((c.path, c.stable_id)) if c.path else None
        e = _entry(c, old, new)
        if e.change == "body_changed" and e.path in lines and (members_a.get(e.old_symbol_id or "")
                                                               or members_b.get(e.symbol_id or "")):
            o, n = lines[e.path]
            if not (_own_lines(old, members_a.get(old.symbol_id if old else "", []), o)
                    or _own_lines(new, members_b.get(new.symbol_id if new else "", []), n)):
                continue
        out.append(e)
    out += _file_entries(diff, lines, olds, news, modules)
    return out


def _file_entries(diff: Diff, lines: dict[str, tuple[set[int], set[int]]],
                  olds: dict[tuple[str, str], Row], news: dict[tuple[str, str], Row],
                  modules: dict[str, str]) -> list[Changed]:
    """A `file` entry per modified file with changed lines outside every symbol, and per added
    or removed file that defines no symbol."""
    spans_a, spans_b = defaultdict(list), defaultdict(list)
    for rows, spans in ((olds, spans_a), (news, spans_b)):
        for r in rows.values():
            spans[r.path].append((r.start, r.end))
    out = []
    for path, (o, n) in sorted(lines.items()):
        # new lines outside every symbol; else (only lines removed) where the old ones were
        loose = (sorted(x for x in n if not _inside(x, spans_b[path]))
                 or sorted(x for x in o if not _inside(x, spans_a[path])))
        if loose:
            out.append(Changed(f"file:{path}", "modified", "file", modules.get(path) or path, path,
                               loose[0], loose[-1], public=True))
    for f in diff.files:
        bare = not (spans_b if f.change == "added" else spans_a).get(f.path)
        if f.change in ("added", "removed") and bare:
            out.append(Changed(f"file:{f.path}", f.change, "file", modules.get(f.path) or f.path,
                               f.path, 1, 1, public=True, breaking=f.change == "removed"))
    return out
