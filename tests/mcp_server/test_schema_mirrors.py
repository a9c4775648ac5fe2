"""The MCP output models are kept by hand beside the query engine's result types (they carry
descriptions and enumerations the wire schema needs); this holds them to the same field names,
so a field added to a result reaches `--json` and the MCP answer alike, or is left out here
by name."""

from __future__ import annotations

from dataclasses import fields

from codeagent.mcp_server import schemas
from codeagent.query import results

MIRRORS = {schemas.Hit: results.SearchHit, schemas.Symbol: results.SymbolInfo,
           schemas.Span: results.SourceSpan, schemas.ResponseMetadata: results.Metadata,
           schemas.FileHit: results.FileResult, schemas.Node: results.GraphNode,
           schemas.Edge: results.GraphEdge, schemas.FileOutline: results.Outline}
# Fields of the MCP side alone: search_code's context lines, an MCP response's paging.
MCP_ONLY = {"Hit": {"context_before", "context_after"}, "FileOutline": {"truncated", "next_cursor"}}
# Result fields the MCP answer leaves out: positions inside a line and the body hash serve
# the engine (spans, rename detection), the module-qualified name the CLI's show.
LEFT_OUT = {"Symbol": {"body_hash", "col_start", "col_end", "name_line", "fq_name"}}


def test_mcp_models_mirror_the_query_results():
    differ = {}
    for model, result in MIRRORS.items():
        name = model.__name__
        mcp = set(model.model_fields) - MCP_ONLY.get(name, set())
        query = {f.name for f in fields(result)} - LEFT_OUT.get(name, set())
        if mcp != query:
            differ[name] = {"mcp only": sorted(mcp - query), "query only": sorted(query - mcp)}
    assert differ == {}
