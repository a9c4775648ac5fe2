"""The answers' model: the one family of result types (hits, symbols, spans, graph nodes and
edges, their metadata) the query engine returns, the CLI prints as `--json` and the MCP
server's output schemas are derived from (`mcp_server/schemas.py`), under the same names.

Every response carries `Metadata` (which manifest answered, how fresh, how complete), and
every hit carries stable handles (`symbol_id`, `symbol_stable_id`, `result_id`) so a caller
can follow up without searching again.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

COMPLETE = "complete"
PARTIAL = "partial"  # something could not be searched (e.g. no symbols extracted yet)
TRUNCATED = "truncated"  # a cap (limit, bytes, node budget, timeout) cut the answer


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def shallow_dict(obj) -> dict:
    """asdict(obj) for a dataclass of plain values, without asdict's recursive deep copy
    (graph answers and outlines list hundreds of rows)."""
    names = _FIELD_NAMES.get(type(obj))
    if names is None:
        names = _FIELD_NAMES[type(obj)] = tuple(f.name for f in fields(obj))
    return {n: getattr(obj, n) for n in names}


@dataclass(frozen=True)
class Metadata:
    ref: str | None
    manifest_id: str
    commit: str | None
    freshness: str  # fresh | stale | unknown
    completeness: str = COMPLETE
    schema_status: str = "compatible"  # compatible | reindex_required
    # ready | indexing: the manifest's graph step has not landed (an overlay published before
    # it), so callers, callees, references and imports come from graph_manifest_id's graph
    graph: str = "ready"
    graph_manifest_id: str | None = None  # set while graph is indexing

    def to_dict(self, extended: bool = True) -> dict:
        base = {"ref": self.ref, "manifest_id": self.manifest_id, "freshness": self.freshness,
                "completeness": self.completeness}
        if extended:
            base.update(commit=self.commit, schema_status=self.schema_status, graph=self.graph)
            if self.graph_manifest_id:
                base["graph_manifest_id"] = self.graph_manifest_id
        return base


@dataclass(frozen=True)
class SearchHit:
    """One ranked result: a symbol definition, a reference, a text chunk, a doc section or a file.

    result_type: symbol | reference | chunk | doc | file | match.
    `result_id` is stable within a manifest (symbol id, or path#kind:ordinal).
    """

    path: str
    line_start: int
    line_end: int
    kind: str
    name: str
    qualified_name: str
    symbol_id: str | None
    symbol_stable_id: str | None
    score: float
    snippet: str
    result_type: str = "symbol"
    result_id: str = ""
    language: str = ""
    signature: str = ""
    match: str = ""  # how it matched: exact_qualified | exact | prefix | subtoken | fuzzy | bm25 | regex...

    ISSUE_KEYS = ("path", "line_start", "line_end", "kind", "name", "qualified_name", "symbol_id",
                  "symbol_stable_id", "score", "snippet")

    def to_dict(self, extended: bool = False) -> dict:
        """The documented `search --json` keys; `extended` adds result_type, result_id, language..."""
        d = shallow_dict(self)
        d["score"] = round(self.score, 6)
        if extended:
            return d
        return {k: d[k] for k in self.ISSUE_KEYS}


@dataclass(frozen=True)
class FileResult:
    """One file of a file-grouped answer: its score, its best spans and how they matched."""

    path: str
    score: float
    language: str
    role: str
    spans: list[SearchHit]
    hits: int  # all the hits of this file in the answer; `spans` are the first of them
    why: list[str]  # how its hits matched (bm25, exact, path, file_bm25...), best first

    def to_dict(self, extended: bool = False) -> dict:
        return {"path": self.path, "score": round(self.score, 6), "language": self.language,
                "role": self.role, "why": self.why, "hits": self.hits,
                "spans": [h.to_dict(extended) for h in self.spans]}


@dataclass(frozen=True)
class SkippedFile:
    """A file an answer did not search: the index holds no text of it (too_large,
    invalid_utf8, minified, parser_timeout), or a live read could not take it."""

    path: str
    reason: str


@dataclass(frozen=True)
class SearchResponse:
    results: list[SearchHit]
    query_intent: str
    total_count: int  # candidates found before the limit
    metadata: Metadata
    mode: str = ""
    latency_ms: float = 0.0
    files: list[FileResult] | None = None  # with group_by="file"
    # files the filters take that the index holds no text of: the first few, and how many
    skipped: list[SkippedFile] = field(default_factory=list)
    skipped_count: int | None = None

    def to_dict(self, extended: bool = False) -> dict:
        """The CLI's `--json`: the MCP answer's names."""
        d = {"results": [h.to_dict(extended) for h in self.results],
             "query_intent": self.query_intent, "total_count": self.total_count,
             "metadata": self.metadata.to_dict(extended)}
        if self.files is not None:
            d["files"] = [f.to_dict(extended) for f in self.files]
        if self.skipped_count:
            d.update(skipped=[shallow_dict(f) for f in self.skipped], skipped_count=self.skipped_count)
        if extended:
            d.update(mode=self.mode, latency_ms=round(self.latency_ms, 3))
        return d


@dataclass(frozen=True)
class GrepMatch:
    """A matching line (1-based number) with the context lines around it."""

    path: str
    line_number: int
    line: str
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"path": self.path, "line_number": self.line_number, "line_content": self.line,
                "context": {"before": self.before, "after": self.after}}


@dataclass(frozen=True)
class GrepResponse:
    matches: list[GrepMatch]
    total_matches: int  # matches found before the result cap (lower bound when truncated)
    files_searched: int
    files_matched: int
    truncated: bool
    metadata: Metadata
    duration_ms: float = 0.0

    def to_dict(self) -> dict:
        return {"matches": [m.to_dict() for m in self.matches], "total_matches": self.total_matches,
                "files_searched": self.files_searched, "files_matched": self.files_matched,
                "truncated": self.truncated, "duration_ms": round(self.duration_ms, 3),
                "metadata": self.metadata.to_dict()}


@dataclass(frozen=True)
class SymbolInfo:
    """A definition as stored in the index (outline entries and symbol detail)."""

    symbol_id: str
    symbol_stable_id: str
    path: str
    language: str
    kind: str
    name: str
    qualified_name: str
    signature: str
    doc: str
    visibility: str
    modifiers: list[str]
    line_start: int
    line_end: int
    col_start: int
    col_end: int
    name_line: int
    parent_id: str | None
    body_hash: str
    fq_name: str = ""  # module-qualified name (`json.decoder.JSONDecoder`) when the graph has it

    def to_dict(self) -> dict:
        d = shallow_dict(self)
        d["modifiers"] = list(self.modifiers)
        return d


@dataclass(frozen=True)
class SourceSpan:
    path: str
    line_start: int
    line_end: int
    is_primary: bool
    text: str = ""

    def to_dict(self) -> dict:
        return shallow_dict(self)


@dataclass(frozen=True)
class SymbolDetail:
    symbol: SymbolInfo
    children: list[SymbolInfo]
    spans: list[SourceSpan]
    reference_count: int
    metadata: Metadata

    def to_dict(self) -> dict:
        return {**self.symbol.to_dict(), "children": [c.to_dict() for c in self.children],
                "spans": [s.to_dict() for s in self.spans], "reference_count": self.reference_count,
                "metadata": self.metadata.to_dict()}


@dataclass(frozen=True)
class Outline:
    path: str
    language: str
    line_count: int
    symbols: list[SymbolInfo]
    metadata: Metadata

    def to_dict(self) -> dict:
        return {"path": self.path, "language": self.language, "line_count": self.line_count,
                "symbols": [s.to_dict() for s in self.symbols], "metadata": self.metadata.to_dict()}


@dataclass(frozen=True)
class GraphNode:
    """A symbol (or, when only the file is known, a file) reached through the graph."""

    symbol_id: str | None
    symbol_stable_id: str | None
    name: str
    qualified_name: str
    kind: str
    path: str
    line_start: int
    line_end: int
    depth: int = 1

    def to_dict(self) -> dict:
        return shallow_dict(self)


@dataclass(frozen=True)
class GraphEdge:
    """One edge: src -> dst with its kind, where it was seen (path:line) and how sure it is."""

    src_id: str | None
    dst_id: str | None
    kind: str
    confidence: str  # exact | name
    path: str
    line: int
    target: str
    dst_path: str | None = None

    def to_dict(self) -> dict:
        return shallow_dict(self)


@dataclass(frozen=True)
class GraphResponse:
    """Neighbours (or a multi-hop traversal) of `root`; `edges` explain how each node was reached."""

    root: SymbolInfo | None
    direction: str  # in | out | both
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    truncated: bool
    metadata: Metadata

    def to_dict(self) -> dict:
        return {"root": self.root.to_dict() if self.root else None, "direction": self.direction,
                "nodes": [n.to_dict() for n in self.nodes], "edges": [e.to_dict() for e in self.edges],
                "truncated": self.truncated, "metadata": self.metadata.to_dict()}
