"""The published output schemas are outlines of pydantic's (a tenth of the size in tools/list):
every instance the full schema accepts, the outline accepts too, and the outline still refuses
an answer whose top-level fields are missing or of the wrong JSON type."""

from __future__ import annotations

from itertools import islice

from jsonschema import Draft202012Validator
from mcp.server.mcpserver.tools import Tool

from codeagent.mcp_server.app import create_server
from codeagent.mcp_server.schemas import outline_schema
from codeagent.mcp_server.state import ServerConfig, ServerState

ODD_VALUES = (None, 0, -1, 1.5, "", "x", True, [], {}, ["x"], {"a": 1})


def _resolve(schema: dict, root: dict) -> dict:
    while "$ref" in schema:
        schema = root["$defs"][schema["$ref"].removeprefix("#/$defs/")]
    return schema


def examples(schema: dict, root: dict, depth: int = 0):
    """Instances of `schema`, mostly valid: one per anyOf branch, type and enum value, and per object
    property variant (the other properties at their first example)."""
    schema = _resolve(schema, root)
    if depth > 4:
        return
    if "anyOf" in schema:
        for branch in schema["anyOf"]:
            yield from examples(branch, root, depth)
        return
    if "enum" in schema:
        yield from schema["enum"]
        return
    types = schema.get("type", "object")
    for t in types if isinstance(types, list) else [types]:
        if t == "null":
            yield None
        elif t == "string":
            yield "s"
        elif t == "integer":
            yield 3
        elif t == "number":
            yield 2.5
        elif t == "boolean":
            yield False
        elif t == "array":
            yield []
            yield from ([item] for item in islice(examples(schema.get("items", {}), root, depth + 1), 3))
        elif t == "object":
            props = schema.get("properties", {})
            first = {p: next(examples(s, root, depth + 1), None) for p, s in props.items()}
            yield first
            for p, s in props.items():
                for value in islice(examples(s, root, depth + 1), 1, 4):
                    yield {**first, p: value}


def mutations(instance):
    """The instance with one value (at any depth) replaced by each odd value, or removed."""
    for odd in ODD_VALUES:
        yield odd
    if isinstance(instance, dict):
        for key, value in instance.items():
            yield {k: v for k, v in instance.items() if k != key}
            for changed in mutations(value):
                yield {**instance, key: changed}
    elif isinstance(instance, list):
        for i, value in enumerate(instance):
            for changed in mutations(value):
                yield [*instance[:i], changed, *instance[i + 1:]]


def _schemas(tmp_path) -> dict[str, dict]:
    """Each tool's schema as pydantic derives it, by name."""
    state = ServerState(ServerConfig(tmp_path, allow_build=True, tools="all"))
    try:
        server = create_server(state)
        return {t.name: Tool.from_function(t.fn, structured_output=True).output_schema
                for t in server._tool_manager.list_tools()}
    finally:
        state.close()


def test_outline_schemas_accept_what_the_originals_accept(tmp_path):
    schemas = _schemas(tmp_path)
    assert len(schemas) >= 20
    checked = refused = 0
    for name, original in schemas.items():
        outline = outline_schema(original)
        assert "$ref" not in str(outline) and len(str(outline)) < len(str(original)) / 2, name
        full, short = Draft202012Validator(original), Draft202012Validator(outline)
        seeds = [v for v in islice(examples(original, original), 60) if full.is_valid(v)][:8]
        assert seeds, name
        for valid in seeds:
            for instance in islice(mutations(valid), 150):
                if full.is_valid(instance):
                    assert short.is_valid(instance), (name, instance)
                checked += 1
            for key in outline.get("required", []):
                refused += not short.is_valid({k: v for k, v in valid.items() if k != key})
                kind = outline["properties"][key].get("type")
                odd = [] if kind == "array" else {} if kind == "object" else 12345
                if "integer" not in str(kind) and "number" not in str(kind):
                    refused += not short.is_valid({**valid, key: odd})
                else:
                    refused += not short.is_valid({**valid, key: "12"})
    assert checked > 5_000 and refused > 100


def test_outline_keeps_top_level_types_and_required():
    schema = {
        "$defs": {"Leaf": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
        "type": "object",
        "properties": {
            "name": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Name"},
            "kind": {"enum": ["a", "b"], "type": "string"},
            "leaves": {"type": "array", "items": {"$ref": "#/$defs/Leaf"}},
            "leaf": {"$ref": "#/$defs/Leaf", "description": "root"},
        },
        "required": ["kind", "leaves"],
    }
    assert outline_schema(schema) == {
        "type": "object", "required": ["kind", "leaves"],
        "properties": {"name": {"type": ["null", "string"]}, "kind": {"type": "string", "enum": ["a", "b"]},
                       "leaves": {"type": "array"},
                       "leaf": {"type": "object"}}}
