"""The CLI's `--json` and the MCP tools' structured content are one result model
(`codeagent.model`): every name a CLI answer uses is the name its MCP twin uses for the same
thing, but for the differences named (and explained) here."""

from __future__ import annotations

import json

import pytest

from mcp_helpers import error_of, memory_client, ok, run_cli

pytestmark = pytest.mark.anyio

_SYMBOL_LEFT_OUT = {"body_hash", "col_start", "col_end", "name_line", "fq_name"}  # schemas.Symbol


def _regroup_symbol(cli: dict) -> dict:
    """`show SYMBOL --json` gives the symbol's fields at the top, get_symbol under `symbol`."""
    rest = ("children", "spans", "reference_count", "metadata")
    return {"symbol": {k: v for k, v in cli.items() if k not in rest}, **{k: cli[k] for k in rest}}


def _status_of_the_ref(cli: dict) -> dict:
    """`status --json` lists every ref of the store; index_status answers for the one served."""
    return next(r for r in cli["refs"] if r["ref"] in ("worktree", "heads/main"))


# CLI arguments, its MCP twin and arguments, a reshaping of the CLI answer, and the names
# (dotted, `[]` for list items) the CLI answer has and the MCP one lacks.
TWINS = {
    "search": (["search", "helper"], "search_code", {"query": "helper"}, None, set()),
    "search --group files": (["search", "helper", "--group", "files"], "search_code",
                             {"query": "helper", "group_by": "file"}, None, set()),
    "show SYMBOL": (["show", "pkg.core.Base"], "get_symbol", {"symbol_id": "pkg.core.Base"},
                    _regroup_symbol, {f"{p}.{f}" for p in ("symbol", "children[]")
                                      for f in _SYMBOL_LEFT_OUT}),
    "show PATH": (["show", "pkg/core.py"], "get_file_outline", {"path": "pkg/core.py"}, None,
                  {f"symbols[].{f}" for f in _SYMBOL_LEFT_OUT}),
    "callers": (["callers", "pkg.core.helper"], "get_callers", {"symbol_id": "pkg.core.helper"},
                None, {f"root.{f}" for f in _SYMBOL_LEFT_OUT}),
    "callees": (["callees", "pkg.core.main"], "get_callees", {"symbol_id": "pkg.core.main"},
                None, {f"root.{f}" for f in _SYMBOL_LEFT_OUT}),
    "refs": (["refs", "pkg.core.helper"], "get_references", {"symbol_id": "pkg.core.helper"},
             None, {f"root.{f}" for f in _SYMBOL_LEFT_OUT}),
    "similar": (["similar", "pkg.core.helper"], "find_similar", {"symbol_id": "pkg.core.helper"},
                None, set()),
    # The CLI's entry per ref is the manifest as stored (its extractor version, whether it is
    # assembled, `embedder_id`); index_status names the embedder `embedder` (a wire name).
    "status": (["status", "."], "index_status", {}, _status_of_the_ref,
               {"extractor_version", "embedder_id", "assembled"}),
}


def _names(value, prefix: str = "") -> set[str]:
    if isinstance(value, dict):
        return {n for k, v in value.items() for n in ({f"{prefix}{k}"} | _names(v, f"{prefix}{k}."))}
    if isinstance(value, list):
        return {n for v in value for n in _names(v, prefix.removesuffix(".") + "[].")}
    return set()


@pytest.fixture(scope="module")
def twin_answers(tmp_path_factory):
    """Each twin's (CLI answer, MCP answer), from one repository indexed with vectors."""
    import anyio
    from mcp_helpers import SAMPLE_FILES
    from repo_helpers import GitRepo

    repo = GitRepo.create(tmp_path_factory.mktemp("twins") / "repo")
    repo.write_many(SAMPLE_FILES)
    repo.commit("sample")
    run_cli("build", repo.path, "--embedder", "hash")
    cli = {name: json.loads(run_cli(*args, *(() if "." in args else ("--repo", repo.path)),
                                    "--json", cwd=repo.path).stdout)
           for name, (args, *_rest) in TWINS.items()}

    async def ask():
        async with memory_client(repo.path) as c:
            # every field, defaults included, and every hit of a file (MCP's first answers
            # are smaller: per_file 1, nested defaults left out, 1,500 tokens)
            whole = {"format": "json", "max_tokens": 100_000}
            return {name: ok(await c.call_tool(tool, {**arguments, **whole, **(
                        {"per_file": 0} if tool == "search_code" else {})}))
                    for name, (_, tool, arguments, *_rest) in TWINS.items()}

    return cli, anyio.run(ask)


@pytest.mark.parametrize("name", TWINS)
def test_the_cli_and_its_mcp_twin_use_the_same_names(twin_answers, name):
    _, tool, _, reshape, cli_only = TWINS[name]
    cli, mcp = twin_answers[0][name], twin_answers[1][name]
    cli = reshape(cli) if reshape else cli
    assert _names(cli) - _names(mcp) == cli_only, tool
    assert cli_only <= _names(cli), f"{tool}: a named difference is gone; drop it from TWINS"


def test_search_twins_answer_the_same_hits(twin_answers):
    cli, mcp = twin_answers[0]["search"], twin_answers[1]["search"]
    assert cli["total_count"] == mcp["total_count"] and cli["query_intent"] == mcp["query_intent"]
    assert [r["symbol_id"] for r in cli["results"]] == [r["symbol_id"] for r in mcp["results"]]


async def test_search_code_groups_by_file_and_filters_roles(indexed_repo):
    """group_by="file" answers ranked files with the CLI's `--group files` fields; an unknown
    role is an argument error the model can read and correct."""
    cli = json.loads(run_cli("search", "helper", "--repo", indexed_repo.path, "--group", "files",
                             "--json").stdout)
    async with memory_client(indexed_repo.path) as c:
        mcp = ok(await c.call_tool("search_code", {"query": "helper", "group_by": "file"}))
        bad = await c.call_tool("search_code", {"query": "helper", "roles": ["banana"]})
    assert mcp["files"] and [f["path"] for f in mcp["files"]] == [f["path"] for f in cli["files"]]
    assert set(cli["files"][0]) <= set(mcp["files"][0])
    assert all(s["path"] == f["path"] for f in mcp["files"] for s in f["spans"])
    err = error_of(bad)
    assert err["code"] == "invalid_parameter" and "unknown role 'banana'" in err["message"]


async def test_qualified_names_agree_between_tools(indexed_repo):
    """A symbol's qualified_name is the same (module-qualified) in an outline, get_symbol,
    lookup_symbol, search hits and graph answers: the name one tool gives, another takes."""
    async with memory_client(indexed_repo.path) as c:
        outline = ok(await c.call_tool("get_file_outline", {"path": "pkg/core.py"}))["symbols"]
        names = {s["symbol_id"]: s["qualified_name"] for s in outline}
        assert names and set(names.values()) >= {"pkg.core.helper", "pkg.core.Base.run"}
        for symbol_id, qualified in names.items():
            detail = ok(await c.call_tool("get_symbol", {"symbol_id": symbol_id}))
            assert detail["symbol"]["qualified_name"] == qualified
            looked = ok(await c.call_tool("lookup_symbol", {"qualified_name": qualified}))
            assert symbol_id in [h["symbol_id"] for h in looked["results"]], qualified
        callers = ok(await c.call_tool("get_callers", {"symbol_id": "pkg.core.helper"}))
        assert callers["root"]["qualified_name"] == "pkg.core.helper"
        for node in callers["nodes"]:
            assert node["qualified_name"] == names[node["symbol_id"]]
        hits = ok(await c.call_tool("search_symbols", {"query": "helper"}))["results"]
        assert {h["qualified_name"] for h in hits if h["symbol_id"] in names} == {"pkg.core.helper"}
