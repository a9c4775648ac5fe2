"""`codeagent context` / get_context: the search's files packed into a token budget."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from codeagent.query import open_index
from codeagent.query.context import FILE, PATH, SPANS, build_context
from codeagent.query import tokencount
from codeagent.query.tokencount import count, counter
from repo_helpers import GitRepo

PARSER = '''"""Parse configuration files."""


def parse_config(text):
    """Parse a configuration text into a dict of sections."""
    sections = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        sections[key.strip()] = normalize_value(value)
    return sections


def normalize_value(value):
    """Strip quotes and blanks around a configuration value."""
    return value.strip().strip('"')
''' + "".join(f'''

def unrelated_{i}(a, b):
    """Arithmetic helper number {i}."""
    total = a + b * {i}
    return total - {i}
''' for i in range(40))

LOADER = '''"""Load settings from disk."""
from .parser import parse_config


def load_settings(path):
    """Read the file at path and parse its configuration."""
    with open(path) as f:
        return parse_config(f.read())
'''

FILES = {"app/__init__.py": "", "app/parser.py": PARSER, "app/loader.py": LOADER,
         "app/render.py": '"""Render pages."""\n\n\ndef render_page(title):\n    return "<h1>" + title + "</h1>"\n',
         "README.md": "# App\n\nReads configuration files.\n"}
TASK = "parse_config drops the quotes of a configuration value wrongly"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    repo = GitRepo.create(tmp_path_factory.mktemp("ctx") / "repo")
    repo.write_many(FILES)
    repo.commit("app")
    subprocess.run([sys.executable, "-m", "codeagent", "build", str(repo.path)], check=True,
                   capture_output=True, timeout=300)
    return repo.path


def test_the_pack_puts_the_task_s_file_first_with_its_reason(built, tokens):
    with open_index(built) as view:
        pack = build_context(view, TASK, 600)
    first = pack.items[0]
    assert first.path == "app/parser.py" and first.detail == SPANS
    assert "defines `parse_config` named in the task" in first.reason
    assert "def parse_config(text):" in first.text and "unrelated_30" not in first.text
    assert any(s <= 4 <= e for s, e in first.lines)
    loader = next(i for i in pack.items if i.path == "app/loader.py")
    assert "`parse_config` (a top hit)" in loader.reason  # reached through the call graph
    assert pack.tokens <= 600 and pack.tokens == count(pack.render())


@pytest.fixture(params=["installed", "estimate"])
def tokens(request, monkeypatch):
    """Each pack test under the counter installed here and under the estimate a machine
    without the `tokens` extra uses (counts ~1.3x o200k's on code: tighter budgets)."""
    if request.param == "estimate":
        monkeypatch.setattr(tokencount, "_counter", (tokencount.ESTIMATE, tokencount.estimate))
    return request.param


def test_a_larger_budget_gives_whole_files(built, tokens):
    with open_index(built) as view:
        small = build_context(view, TASK, 300)
        large = build_context(view, TASK, 20_000)
    assert large.items[0].detail == FILE and large.items[0].lines == [(1, PARSER.count("\n") + 1)]
    assert "unrelated_39" in large.items[0].text
    assert small.tokens <= 300 and small.items[0].detail == SPANS
    assert {i.path for i in small.items} <= {i.path for i in large.items}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(200, 6000), task=st.sampled_from(
    [TASK, "render a page title", "load settings from a file", "quotes", "README"]))
def test_the_pack_never_exceeds_its_budget(built, budget, task):
    with open_index(built) as view:
        pack = build_context(view, task, budget)
    assert pack.tokens == count(pack.render()) <= budget
    assert all(i.reason and i.text for i in pack.items)
    assert [i.path for i in pack.items] == list(dict.fromkeys(i.path for i in pack.items))
    assert all(i.detail in (PATH, SPANS, FILE, "outline") for i in pack.items)


def test_the_cli_prints_the_pack_and_refuses_bad_input(built):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "codeagent", "context", *args, "--repo", str(built)],
                              capture_output=True, text=True, timeout=300)

    proc = run(TASK, "--budget", "800", "--json")
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert body["files"][0]["path"] == "app/parser.py" and body["tokens"] <= 800
    assert body["tokenizer"] == counter()[0]
    proc = run(TASK, "--budget", "800")
    assert "## app/parser.py" in proc.stdout and "of 800 tokens" in proc.stdout
    assert run(TASK, "--budget", "10").returncode == 2
    assert run("   ", "--budget", "800").returncode == 2


@pytest.mark.anyio
async def test_get_context_over_mcp(built):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_server"))
    from mcp_helpers import memory_client, ok

    async with memory_client(built, tools="core") as c:
        names = [t.name for t in (await c.list_tools()).tools]
        body = ok(await c.call_tool("get_context", {"task": TASK, "budget": 1000}))
        bad = await c.call_tool("get_context", {"task": TASK, "budget": 5})
    assert "get_context" in names
    assert body["files"][0]["path"] == "app/parser.py" and body["tokens"] <= 1000
    assert body["metadata"]["manifest_id"]
    assert bad.is_error


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_reasons_are_the_same_in_every_process(built):
    """Equal-weight words are listed in one order whatever the interpreter's hash seed."""
    task = "quotes blanks sections value configuration text strip"

    def reasons(seed: str) -> list:
        proc = subprocess.run([sys.executable, "-m", "codeagent", "context", task, "--budget", "2000", "--json",
                               "--repo", str(built)], capture_output=True, text=True, timeout=300,
                              env={**__import__("os").environ, "PYTHONHASHSEED": seed, "CODEAGENT_DAEMON": "0"})
        assert proc.returncode == 0, proc.stderr
        return [f.get("reasons") or f.get("reason") for f in json.loads(proc.stdout)["files"]]

    first = reasons("1")
    assert any("matches" in str(r) for r in first), first
    assert all(reasons(seed) == first for seed in ("2", "3", "4"))
