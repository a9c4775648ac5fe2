"""Tool arguments fuzzed from each tool's own input schema (hypothesis), plus arguments of the
wrong shape: every call ends in a result, an isError result with a stable code, or an
invalid-params error; never an internal error, and the server keeps answering."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relhelpers import codeagent, init_repo, py_module, record

EXAMPLES = int(os.environ.get("CODEAGENT_FUZZ_EXAMPLES", "400" if os.environ.get("CODEAGENT_LONG") == "1" else "60"))
TALLY: dict[str, int] = {}

NASTY_TEXT = st.sampled_from([
    "", ".", "..", "../../etc/passwd", "/etc/passwd", "README.md", "pkg/core.py", "pkg/**", "**/*",
    "*" * 300, "[", "(a+)+$", "\\", "%2e%2e%2f", "\x00", "\ud800", "\u202e", "🙂" * 50, " " * 10,
    "a" * 999, "SELECT * FROM files; --", "'; DROP TABLE symbols; --", "\n\r\t", "{{}}", "$(rm -rf)",
    "Thing0.run", "helper", "os.path.join", "core", "Base", "0" * 64, "f" * 16,
])


def from_schema(schema: dict, defs: dict) -> st.SearchStrategy:
    """A strategy for values valid under a (pydantic-generated) JSON schema."""
    if "$ref" in schema:
        return from_schema(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([from_schema(s, defs) for s in schema[key]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        lo, hi = schema.get("minLength", 0), min(schema.get("maxLength", 300), 300)
        text = st.text(min_size=lo, max_size=hi) | NASTY_TEXT
        return text.filter(lambda s: lo <= len(s) <= schema.get("maxLength", 10**9))
    if kind == "integer":
        return st.integers(schema.get("minimum", -(2**31)), schema.get("maximum", 2**31))
    if kind == "number":
        return st.floats(schema.get("minimum", -1e9), schema.get("maximum", 1e9), allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(from_schema(schema.get("items", {}), defs), max_size=5)
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {k: from_schema(v, defs) for k, v in props.items() if k in required},
            optional={k: from_schema(v, defs) for k, v in props.items() if k not in required})
    return st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                        max_leaves=8)


ANY_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
                        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
                        max_leaves=12)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from anyio.from_thread import start_blocking_portal
    from mcp import Client

    from codeagent.mcp_server.app import create_server
    from codeagent.mcp_server.state import ServerConfig, ServerState

    rng = random.Random(3)
    files = {f"pkg/m{i}.py": py_module(rng, i) for i in range(5)}
    files.update({"README.md": "# demo\n\n## Usage\n\nRun it.\n", "web/app.js": "export function go(a) { return a; }\n",
                  ".env": "SECRET=1\n"})
    repo = init_repo(tmp_path_factory.mktemp("fuzz") / "repo", files)
    assert codeagent("build", repo, "--embedder", "hash").returncode == 0
    state = ServerState(ServerConfig(repo, tools="all"))
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(create_server(state))) as c:
            yield portal, c
    state.close()


def _outcome(portal, c, tool: str, arguments: dict) -> str:
    from mcp import MCPError

    try:
        result = portal.call(c.call_tool, tool, arguments)
    except MCPError as exc:
        code = getattr(exc, "code", None) or getattr(getattr(exc, "error", None), "code", None)
        return "invalid_params" if code == -32602 else f"rpc_error_{code}"
    if not result.is_error:
        return "ok"
    assert result.structured_content is None, f"{tool}{arguments}: an error with structured content"
    err = json.loads(result.content[0].text).get("error", {})
    assert "Traceback" not in str(err), f"{tool}{arguments}: a traceback leaked: {err}"
    return err.get("code", "error_without_code")


def _tools(client) -> dict[str, dict]:
    portal, c = client
    return {t.name: t.input_schema for t in portal.call(c.list_tools).tools}


def test_schema_fuzzed_arguments_never_crash_a_tool(client) -> None:
    portal, c = client
    tools = _tools(client)
    crashes: list[str] = []
    for name, schema in sorted(tools.items()):
        strategy = from_schema(schema, schema.get("$defs", {}))

        @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(arguments=strategy)
        def run(arguments: dict) -> None:
            outcome = _outcome(portal, c, name, arguments)
            TALLY[outcome] = TALLY.get(outcome, 0) + 1
            if outcome in ("internal_error", "error_without_code") or outcome.startswith("rpc_error"):
                crashes.append(f"{name}({arguments!r}) -> {outcome}")

        run()
    alive = _outcome(portal, c, "get_status", {}) == "ok"
    record("mcp-fuzz-schema", tools=len(tools), calls=sum(TALLY.values()), crashes=len(crashes),
           outcomes="/".join(f"{k}:{v}" for k, v in sorted(TALLY.items())), alive=alive)
    assert not crashes, "\n".join(crashes[:20])
    assert alive


def test_wrongly_shaped_arguments_are_refused_cleanly(client) -> None:
    portal, c = client
    tools = _tools(client)
    tally: dict[str, int] = {}
    crashes: list[str] = []
    for name, schema in sorted(tools.items()):
        props = sorted(schema.get("properties", {})) or ["x"]

        @settings(max_examples=max(10, EXAMPLES // 3), deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(arguments=st.dictionaries(st.sampled_from(props) | st.text(max_size=8), ANY_JSON, max_size=4))
        def run(arguments: dict) -> None:
            outcome = _outcome(portal, c, name, arguments)
            tally[outcome] = tally.get(outcome, 0) + 1
            if outcome in ("internal_error", "error_without_code") or outcome.startswith("rpc_error"):
                crashes.append(f"{name}({arguments!r}) -> {outcome}")

        run()
    record("mcp-fuzz-wrong-shapes", calls=sum(tally.values()), crashes=len(crashes),
           outcomes="/".join(f"{k}:{v}" for k, v in sorted(tally.items())))
    assert not crashes, "\n".join(crashes[:20])
