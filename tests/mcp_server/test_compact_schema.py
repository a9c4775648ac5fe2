"""The published output schemas are compacted (cheaper for validating clients) without
changing what they accept: every tool's original and compact schema give the same verdict on
valid instances built from the schema and on each one-value mutation of them."""

from __future__ import annotations

from itertools import islice

from jsonschema import Draft202012Validator
from mcp.server.mcpserver.tools import Tool

from codeagent.mcp_server.app import create_server
from codeagent.mcp_server.schemas import compact_schema
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
    state = ServerState(ServerConfig(tmp_path))
    try:
        server = create_server(state)
        return {t.name: Tool.from_function(t.fn, structured_output=True).output_schema
                for t in server._tool_manager.list_tools()}
    finally:
        state.close()


def test_compact_schemas_accept_exactly_what_the_originals_accept(tmp_path):
    schemas = _schemas(tmp_path)
    assert len(schemas) >= 20
    checked = accepted = 0
    for name, original in schemas.items():
        compact = compact_schema(original)
        assert "anyOf" not in str(compact) or "enum" in str(compact) or "$ref" in str(compact), name
        before, after = Draft202012Validator(original), Draft202012Validator(compact)
        seeds = [v for v in islice(examples(original, original), 60) if before.is_valid(v)][:8]
        assert seeds, name
        for valid in seeds:
            for instance in islice(mutations(valid), 150):
                verdict = before.is_valid(instance)
                assert after.is_valid(instance) == verdict, (name, instance)
                checked += 1
                accepted += verdict
    assert checked > 5_000 and 0 < accepted < checked


def test_compact_schema_folds_nullables_and_keeps_recursive_defs():
    schema = {
        "$defs": {
            "Leaf": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            "Tree": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}},
                "leaf": {"$ref": "#/$defs/Leaf"}}},
        },
        "type": "object",
        "properties": {
            "name": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Name"},
            "kind": {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]},
            "leaf": {"anyOf": [{"$ref": "#/$defs/Leaf"}, {"type": "null"}]},
            "tree": {"$ref": "#/$defs/Tree", "description": "root"},
        },
    }
    out = compact_schema(schema)
    props = out["properties"]
    assert props["name"] == {"type": ["string", "null"], "default": None, "title": "Name"}
    assert props["kind"] == schema["properties"]["kind"]  # an enum would refuse null: kept
    assert props["leaf"] == {"type": ["object", "null"], "properties": {"n": {"type": "integer"}},
                             "required": ["n"]}
    assert props["tree"] == {"$ref": "#/$defs/Tree", "description": "root"}
    assert set(out["$defs"]) == {"Tree"}
    assert out["$defs"]["Tree"]["properties"]["leaf"] == schema["$defs"]["Leaf"]
