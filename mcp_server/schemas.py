"""Output models of the MCP tools: they become each tool's output schema (structured content).

They mirror the query engine's result types (`codeagent.query.results`) field for field;
`from_result` builds one from a result's `to_dict`, ignoring keys a model does not declare.
Every response model carries `metadata`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ResponseMetadata(Model):
    ref: str | None = Field(None, description="Store ref answering (e.g. heads/main, worktree)")
    manifest_id: str | None = Field(None, description="Manifest that answered; null without an index")
    commit: str | None = None
    freshness: Literal["fresh", "stale", "unknown"] = "unknown"
    completeness: Literal["complete", "partial", "truncated"] = "complete"
    schema_status: Literal["compatible", "not_indexed", "reindex_required"] = "compatible"


class Response(Model):
    metadata: ResponseMetadata
    truncated: bool = Field(False, description="A cap or the max_tokens budget cut the answer")
    next_cursor: str | None = Field(None, description="Pass as `cursor` for the rest")


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


class FileSearch(Response):
    matches: list[FileMatch]
    total_matches: int
    files_searched: int
    files_matched: int = 0
    truncated: bool
    duration_ms: float


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
class Hit(Model):
    result_id: str = ""
    result_type: str = "symbol"
    symbol_id: str | None = None
    symbol_stable_id: str | None = None
    path: str
    line_start: int
    line_end: int
    kind: str
    name: str
    qualified_name: str
    language: str = ""
    signature: str = ""
    score: float
    snippet: str = ""
    match: str = ""
    context_before: str | None = None
    context_after: str | None = None


class NextAction(Model):
    tool: str
    arguments: dict[str, Any]


class FileHit(Model):
    """A file of a file-grouped answer: its best 1-3 spans and how it matched."""

    path: str
    score: float
    language: str = ""
    role: str = ""
    why: list[str] = Field(default_factory=list)
    hits: int
    spans: list[Hit]


class SearchResults(Response):
    results: list[Hit]
    total_count: int
    query_intent: str
    mode: str = ""
    latency_ms: float
    suggested_next_actions: list[NextAction] = Field(default_factory=list)
    files: list[FileHit] | None = None


class Symbol(Model):
    symbol_id: str
    symbol_stable_id: str
    path: str
    language: str
    kind: str
    name: str
    qualified_name: str
    signature: str = ""
    doc: str = ""
    visibility: str = ""
    modifiers: list[str] = Field(default_factory=list)
    line_start: int
    line_end: int
    parent_id: str | None = None


class Span(Model):
    path: str
    line_start: int
    line_end: int
    is_primary: bool
    text: str = ""


class SymbolDetailOut(Response):
    symbol: Symbol
    children: list[Symbol]
    spans: list[Span]
    reference_count: int


class SpanList(Response):
    symbol_id: str
    spans: list[Span]


class FileOutline(Response):
    path: str
    language: str
    line_count: int
    symbols: list[Symbol]


class Node(Model):
    symbol_id: str | None = None
    symbol_stable_id: str | None = None
    name: str
    qualified_name: str
    kind: str
    path: str
    line_start: int
    line_end: int
    depth: int = 1


class Edge(Model):
    src_id: str | None = None
    dst_id: str | None = None
    kind: str
    confidence: str
    path: str
    line: int
    target: str
    dst_path: str | None = None


class Graph(Response):
    root: Symbol | None
    direction: str
    nodes: list[Node]
    edges: list[Edge]
    truncated: bool


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
    duration_ms: float
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


def outline_schema(schema: dict, depth: int = 1) -> dict:
    """The output schema tools/list publishes: the answer's fields `depth` levels deep with
    their JSON types and `required` lists; deeper objects and list items are `object`. Every
    answer validates against it, at a fraction of the size (the field docs are the tool
    descriptions' job)."""
    defs = schema.get("$defs", {})

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
