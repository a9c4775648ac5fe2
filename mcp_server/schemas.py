"""Output models of the MCP tools: they become each tool's output schema (structured content).

The models of query answers are projections of the result types in `codeagent.model` (the
family the CLI's `--json` prints), declared once each below: which fields, in what order, and
what the wire adds (defaults, descriptions, enumerations). The rest (file system, research,
engine) are answers only the MCP server gives. Every response model carries `metadata`.
"""

from __future__ import annotations

import dataclasses
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from .. import model
from ..model import (FileResult, GraphEdge, GraphNode, GraphResponse, Metadata, Outline,
                     SearchHit, SearchResponse, SourceSpan, SymbolDetail, SymbolInfo)


class Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


_PROJECTED: dict[type, type[Model]] = {}  # result type -> its MCP model


def projection(name: str, source: type, wire: dict[str, Any] | None = None, *, order: str = "",
               left_out: str = "", base: type[Model] = Model, doc: str | None = None) -> type[Model]:
    """The MCP model `name` of the result type `source`: its fields but `left_out`, in `order`
    when the wire's differs, typed as `source` types them (a result nested in it as that
    result's projection). `wire` gives a field what the schema adds: a default or a `Field`
    (a description), a (type, default) pair (an enumeration, a wider type), or declares a
    field only the MCP answer has. A field of `source` neither projected nor left out is an
    error, so a field added to a result reaches `--json` and MCP alike."""
    wire = wire or {}
    known = {f.name: f for f in dataclasses.fields(source)}
    skipped = set(left_out.split())
    names = order.split() or [n for n in [*known, *wire] if n not in skipped]
    lost = set(known) - set(names) - skipped
    if lost or skipped - set(known):
        raise TypeError(f"projection {name} of {source.__name__}: fields {sorted(lost)} are neither "
                        f"projected nor left out; {sorted(skipped - set(known))} are not fields")
    hints = get_type_hints(source)
    declared: dict[str, Any] = {}
    for n in dict.fromkeys(names):
        spec = wire.get(n, _default(known[n]) if n in known else None)
        if n not in known and not isinstance(spec, tuple):
            raise TypeError(f"projection {name}: {n} is not a field of {source.__name__}: give its type")
        declared[n] = spec if isinstance(spec, tuple) else (_wire_type(hints[n]), spec)
    model = create_model(name, __base__=base, __doc__=doc, __module__=__name__, **declared)
    _PROJECTED[source] = model
    return model


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return Field(default_factory=f.default_factory)
    return ...


def _wire_type(hint: Any) -> Any:
    """`hint` with every result type in it replaced by its projection."""
    if hint in _PROJECTED:
        return _PROJECTED[hint]
    origin, args = get_origin(hint), get_args(hint)
    if origin is list:
        return list[_wire_type(args[0])]
    if origin in (Union, UnionType):
        return Union[tuple(_wire_type(a) for a in args)]
    return hint


ResponseMetadata = projection("ResponseMetadata", Metadata, {
    "ref": Field(None, description="Store ref answering (e.g. heads/main, worktree)"),
    "manifest_id": (str | None, Field(None, description="Manifest that answered; null without an index")),
    "commit": None,
    "freshness": (Literal["fresh", "stale", "unknown"], "unknown"),
    "completeness": (Literal["complete", "partial", "truncated"], "complete"),
    "schema_status": (Literal["compatible", "not_indexed", "reindex_required"], "compatible"),
    "graph": (Literal["ready", "indexing"], Field(
        "ready", description="indexing: the edit's graph step is still running (about a second); "
                             "callers, callees, references and imports answer from the previous "
                             "build's graph (graph_manifest_id), so edges of the files just edited "
                             "may be missing or out of date; ask again for the exact answer")),
    "graph_manifest_id": Field(None, description="The manifest whose graph answered while graph is indexing"),
    "protocol_version": (str | None, Field(None, description="Version of the answers' shape")),
    "indexing_status": (Literal["ready", "indexing", "not_indexed", "failed"] | None, None),
    "ignored_arguments": (list[str] | None, Field(None, description="Seed arguments accepted "
                                                  "and left unused (docs/seeds.md)")),
})


class Response(Model):
    metadata: ResponseMetadata
    truncated: bool = Field(False, description="A cap or the max_tokens budget cut the answer")
    next_cursor: str | None = Field(None, description="Pass as `cursor` for the rest")
    omitted: str | None = Field(None, description="What the cut left out and how to get it")


# ---- file system --------------------------------------------------------------------------
class DirEntry(Model):
    name: str
    path: str = Field(description="Repository-relative path (the handle for read_file/list_directory)")
    type: Literal["file", "directory", "symlink"]
    size: int | None = Field(None, description="Bytes (files only)")
    modified_at: str | None = None


class DirectoryListing(Response):
    path: str
    entries: list[DirEntry]
    truncated: bool = False


class TreeNode(Model):
    name: str
    path: str
    type: Literal["file", "directory", "symlink"]
    size: int | None = None
    children: list["TreeNode"] | None = None
    truncated: bool = Field(False, description="True when this directory had more entries than the cap")


class DirectoryTree(Response):
    tree: TreeNode
    entry_count: int
    truncated: bool


class FileList(Response):
    files: list[DirEntry]
    total_count: int
    truncated: bool


class FileContent(Response):
    path: str
    resolved_path: str = Field(description="Path after symbolic links inside the repository")
    content: str
    encoding: Literal["utf-8", "base64"]
    size: int
    total_lines: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    truncated: bool
    mime_type: str
    modified_at: str


class SearchMatchContext(Model):
    before: list[str]
    after: list[str]


class FileMatch(Model):
    result_id: str = Field(description="path:line, stable within the manifest")
    path: str
    line_number: int
    line_content: str
    context: SearchMatchContext


SkippedFile = projection("SkippedFile", model.SkippedFile, {
    "reason": Field(description="Why its lines were not searched: too_large, invalid_utf8, "
                                "minified or parser_timeout (the index holds no text of it; "
                                "search_files names only the files too large to read)"),
})


class FileSearch(Response):
    matches: list[FileMatch]
    total_matches: int
    files_searched: int
    files_matched: int = 0
    truncated: bool
    duration_ms: int
    skipped: list[SkippedFile] = Field(default_factory=list,
                                       description="Files the glob takes whose lines were not searched")


class LanguageStat(Model):
    language: str
    files: int
    bytes: int


class RepoOverview(Response):
    root: str = Field(description="The repository's directory name (never an absolute path)")
    tree: TreeNode
    total_files: int
    total_directories: int
    total_bytes: int
    languages: list[LanguageStat]


# ---- search & navigation ------------------------------------------------------------------
Hit = projection("Hit", SearchHit, {
    "symbol_id": None, "symbol_stable_id": None, "snippet": "",
    "context_before": (str | None, None), "context_after": (str | None, None),  # search_code's context lines
    "more_in_file": (int, Field(0, description="Hits of the same file left out (search_code per_file)")),
}, order="result_id result_type symbol_id symbol_stable_id path line_start line_end kind name "
         "qualified_name language signature score snippet match context_before context_after "
         "more_in_file")


class NextAction(Model):
    tool: str
    arguments: dict[str, Any]


FileHit = projection("FileHit", FileResult, {
    "language": "", "role": "", "why": Field(default_factory=list),
}, order="path score language role why hits spans",
    doc="A file of a file-grouped answer: its best 1-3 spans and how it matched.")

SearchResults = projection("SearchResults", SearchResponse, {
    "latency_ms": (int, ...),
    "suggested_next_actions": (list[NextAction], Field(default_factory=list)),
    "skipped": Field(default_factory=list, description="The first files the filters take that the "
                     "index holds no text of (not searched; read_file serves them)"),
    "skipped_count": Field(None, description="How many files the answer did not search (null: none)"),
}, order="metadata results total_count query_intent mode latency_ms suggested_next_actions files "
         "skipped skipped_count", base=Response)

# Positions inside a line and the body hash serve the engine (spans, rename detection), the
# module-qualified name the CLI's show (symbol_of gives it as `qualified_name`).
Symbol = projection("Symbol", SymbolInfo, {
    "signature": "", "doc": "", "visibility": "", "modifiers": Field(default_factory=list),
    "parent_id": None,
    "path": Field("", description="Repository-relative path (left out in an outline: its own)"),
    "language": "",
    "collapsed": (dict[str, int] | None, Field(None, description="get_file_outline: members not "
                  "listed, by kind (pass the name in `expand` to list them)")),
}, left_out="col_start col_end name_line body_hash fq_name")

Span = projection("Span", SourceSpan)
SymbolDetailOut = projection("SymbolDetailOut", SymbolDetail, {
    # seed 000's facts about the symbol, read off its declaration (mcp_server/facts.py)
    **{flag: (bool, False) for flag in ("is_public_api", "is_static", "is_abstract", "is_async",
                                        "is_override", "is_deprecated", "has_doc_comment")},
    "parameter_signature": (str | None, None), "parameter_count": (int | None, None),
    "return_type": (str | None, None),
}, base=Response)


class SpanList(Response):
    symbol_id: str
    spans: list[Span]


FileOutline = projection("FileOutline", Outline, {
    "collapsed": (dict[str, int] | None, Field(None, description="Module-level constants and "
                  "variables of a large file, counted by kind, not listed")),
}, base=Response)
Node = projection("Node", GraphNode, {"symbol_id": None, "symbol_stable_id": None})
Edge = projection("Edge", GraphEdge, {"src_id": None, "dst_id": None})
Graph = projection("Graph", GraphResponse, base=Response)


class ResearchHop(Model):
    hop: int
    description: str
    nodes: list[Node]


class Research(Response):
    query: str
    focus: str | None
    seeds: list[Hit]
    hops: list[ResearchHop]
    edges: list[Edge]
    truncated: bool


# ---- engine -------------------------------------------------------------------------------
class BuildRecord(Model):
    ref: str | None = None
    manifest_id: str | None = None
    commit: str | None = None
    changed: bool | None = None
    files_parsed: int | None = None
    seconds: float | None = None
    at: int | None = None


class Status(Response):
    healthy: bool
    index_status: Literal["ready", "indexing", "not_indexed", "incompatible"] = Field(
        description="indexing: ready, and a build (serve --watch, index_repo) is replacing it")
    ref: str | None
    manifest_id: str | None
    commit: str | None
    schema_version: int | None
    source: str | None = None
    counts: dict[str, Any] = Field(default_factory=dict)
    languages: list[str] = Field(default_factory=list)
    embedder: str | None = None
    freshness: dict[str, Any] = Field(default_factory=dict)
    refs: list[str] = Field(default_factory=list)
    last_indexed_at: str | None = Field(None, description="When the newest build finished (UTC)")
    recent_builds: list[BuildRecord] = Field(default_factory=list)
    active_job: dict[str, Any] | None = Field(None, description="A build this server is running")
    build_tools_enabled: bool = False
    watcher_active: bool = Field(False, description="serve --watch keeps the work-tree index current")
    embeddings_count: int | None = Field(0, description="Vectors in the index (0 without an embedder)")
    search_quality: dict[str, Any] | None = Field(
        None, description="Search quality measured on the commit's own history (publish --score)")


class FileState(Model):
    path: str
    state: Literal["indexed", "skipped", "absent"]
    reason: str = Field("", description="Why a skipped file was not indexed")


class BuildJob(Response):
    job_id: str
    status: Literal["published", "unchanged"]
    mode: str
    ref: str | None
    manifest_id: str | None
    files_total: int | None = None
    files_parsed: int | None = None
    duration_ms: int
    files: list[FileState] = Field(default_factory=list, description="index_files: each path's state")


def symbol_of(info: Any) -> Symbol:
    """A query SymbolInfo as the tools answer it: `qualified_name` module-qualified
    (`pkg.core.Base.run`) when the index knows the module, as in search hits and graph nodes,
    so the name one tool gives is the name another takes (the file-local `Base.run` only
    without one)."""
    data = info.to_dict()
    return Symbol.model_validate({**data, "qualified_name": data.get("fq_name") or data["qualified_name"]})


def from_result(model: type[Model], data: dict, **extra: Any) -> Any:
    return model.model_validate({**data, **extra})


def outline_schema(schema: dict, depth: int = 1, required_only: bool = False) -> dict:
    """The output schema tools/list publishes: the answer's fields `depth` levels deep with
    their JSON types and `required` lists; deeper objects and list items are `object`. Every
    answer validates against it, at a fraction of the size (the field docs are the tool
    descriptions' job). `required_only` (the core profile) names the fields every answer has."""
    defs = schema.get("$defs", {})
    if required_only:
        return {"type": "object", "required": list(schema.get("required", []))}

    def walk(node: dict, level: int) -> dict:
        while "$ref" in node:
            node = defs[node["$ref"].removeprefix("#/$defs/")]
        options = node.get("anyOf")
        if options:
            kinds = [walk(o, level) for o in options]
            types = sorted({t for k in kinds for t in _types(k)})
            return {"type": types[0] if len(types) == 1 else types}
        kind = node.get("type")
        if "enum" in node and kind is None:
            kind = "string"
        if kind == "object" or "properties" in node:
            out: dict = {"type": "object"}
            if level < depth and node.get("properties"):
                out["properties"] = {k: walk(v, level + 1) for k, v in node["properties"].items()}
                if node.get("required"):
                    out["required"] = node["required"]
            return out
        if kind == "array" and level < depth and isinstance(node.get("items"), dict):
            return {"type": "array", "items": walk(node["items"], level + 1)}
        out = {"type": kind} if kind else {}
        if "enum" in node and level <= depth:
            out["enum"] = node["enum"]
        return out

    return walk(schema, 0)


def _types(node: dict) -> list[str]:
    kind = node.get("type")
    return kind if isinstance(kind, list) else [kind] if kind else []
