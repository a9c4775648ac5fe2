"""`codeagent install` against each client's real settings format: temp HOME and project
folders, a settings file that already holds another server (and comments, where the format has
them), the written file read back with the format's own parser."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path

import json5
import pytest
import yaml
from hypothesis import example, given, settings, strategies as st

from codeagent.clients import jsonc
from codeagent.clients.install import BACKUP_SUFFIX, codeagent_command
from codeagent.clients.registry import CLIENTS, PROJECT, USER
from codeagent.clients.setup import install, listing

OTHER = {"command": "/usr/bin/other-server", "args": ["--flag"]}

# format -> (a file holding another server under `key`, with comments when the format has them)
SEEDS = {
    "json": lambda key: json.dumps({"theme": "dark", key: {"other": OTHER}}, indent=2) + "\n",
    "jsonc": lambda key: ('// my settings\n{\n  "theme": "dark", // keep this comment\n'
                          f'  "{key}": {{\n    /* the other one */\n'
                          f'    "other": {json.dumps(OTHER)},\n  }},\n}}\n'),
    "toml": lambda key: (f'# my codex config\nmodel = "o3"  # keep this comment\n\n[{key}.other]\n'
                         f'command = "{OTHER["command"]}"\nargs = ["--flag"]\n'),
    "yaml": lambda key: (f"# my continue config\nname: mine  # keep this comment\n{key}:\n"
                         f"  - name: other\n    command: {OTHER['command']}\n    args: [--flag]\n"),
}
COMMENT = {"json": None, "jsonc": "keep this comment", "toml": "keep this comment",
           "yaml": "keep this comment"}


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A fresh HOME and per-user settings folders for the test (never the developer's)."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(h / ".config"))
    monkeypatch.setenv("APPDATA", str(h / "AppData"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return h


@pytest.fixture
def project(tmp_path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    return p


def parse(fmt: str, text: str) -> dict:
    """The file read with its format's own parser (JSONC: json5, a superset that keeps the
    comment and trailing-comma rules VS Code and Zed use)."""
    if fmt == "json":
        return json.loads(text)
    if fmt == "jsonc":
        return json5.loads(text)
    if fmt == "toml":
        return tomllib.loads(text)
    return yaml.safe_load(text)


def servers(fmt: str, data: dict, keys: tuple[str, ...]) -> dict:
    node = data
    for k in keys:
        node = node[k]
    if isinstance(node, list):  # Continue: a list of named servers
        return {e["name"]: {k: v for k, v in e.items() if k != "name"} for e in node}
    return node


CASES = [(name, scope) for name, c in CLIENTS.items() for scope in c.scopes]


@pytest.mark.parametrize("name,scope", CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_install_merges_keeps_the_rest_backs_up_and_is_idempotent(home, project, name, scope):
    c = CLIENTS[name]
    path = c.path(scope, project)
    path.parent.mkdir(parents=True, exist_ok=True)
    seed = SEEDS[c.fmt](c.keys[0])
    if name == "continue" and scope == PROJECT:
        seed = seed.replace("# keep this comment\n", "# keep this comment\nversion: 0.0.1\nschema: v1\n")
    path.write_text(seed)

    [change] = install(name, scope, project)
    assert change.action == "added" and change.path == path
    text = path.read_text()
    found = servers(c.fmt, parse(c.fmt, text), c.keys)
    assert found["other"] == OTHER, "another server was changed"
    ours = found["codeagent"]
    assert Path(ours["command"]).is_absolute() and Path(ours["command"]).exists()
    assert ours["command"] == codeagent_command()[0]
    assert "serve" in ours["args"]
    if scope == PROJECT or USER not in c.scopes or PROJECT not in c.scopes:
        assert ours["args"][ours["args"].index("--repo") + 1] == str(project.resolve())
    if COMMENT[c.fmt]:
        assert COMMENT[c.fmt] in text, "a comment was lost"
    assert Path(str(path) + BACKUP_SUFFIX).read_text() == seed

    [again] = install(name, scope, project)
    assert again.action == "unchanged" and path.read_text() == text

    [removed] = install(name, scope, project, uninstall=True)
    assert removed.action == "removed"
    left = servers(c.fmt, parse(c.fmt, path.read_text()), c.keys)
    assert "codeagent" not in left and left["other"] == OTHER
    if COMMENT[c.fmt]:
        assert COMMENT[c.fmt] in path.read_text()
    [gone] = install(name, scope, project, uninstall=True)
    assert gone.action == "unchanged"


@pytest.mark.parametrize("name,scope", CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_install_creates_a_missing_file_the_client_can_read(home, project, name, scope):
    c = CLIENTS[name]
    [change] = install(name, scope, project, watch=True)
    data = parse(c.fmt, change.path.read_text())
    ours = servers(c.fmt, data, c.keys)["codeagent"]
    assert ours["args"][-1] == "--watch"
    if name == "continue" and scope == PROJECT:  # a block file needs its own header
        assert data["schema"] == "v1" and data["name"]


def test_dry_run_prints_the_diff_and_writes_nothing(home, project, cli):
    path = project / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(SEEDS["json"]("mcpServers"))
    before = path.read_text()
    proc = cli("install", "cursor", "--repo", project, "--dry-run", check=True)
    assert "+++ " in proc.stdout and '+    "codeagent": {' in proc.stdout
    assert "would be added" in proc.stdout
    assert path.read_text() == before and not Path(str(path) + BACKUP_SUFFIX).exists()
    cli("install", "cursor", "--repo", project, check=True)
    proc = cli("install", "cursor", "--repo", project, check=True)
    assert "unchanged (already configured)" in proc.stdout


def test_list_names_every_client_and_its_state(home, project, cli):
    install("codex", USER, project)
    (home / ".cursor").mkdir()
    proc = cli("install", "--list", "--repo", project, "--json", check=True)
    rows = {(r["client"], r["scope"]): r for r in json.loads(proc.stdout)}
    assert {n for n, _ in rows} == set(CLIENTS)
    assert rows[("codex", USER)]["state"] == "configured"
    assert rows[("cursor", USER)]["state"] == "available"
    assert rows[("windsurf", USER)]["state"] == "not detected"
    assert rows[("claude-code", PROJECT)]["path"] == str(project.resolve() / ".mcp.json")


def test_bad_input_is_refused_with_its_exit_code_and_the_file_untouched(home, project, cli):
    path = project / ".vscode" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"servers": [1, 2')
    proc = cli("install", "vscode", "--repo", project)
    assert proc.returncode == 31 and "not valid JSON" in proc.stderr and "Traceback" not in proc.stderr
    assert path.read_text() == '{"servers": [1, 2'
    assert cli("install", "nosuch").returncode == 2
    assert cli("install", "windsurf", "--scope", "project").returncode == 2
    assert cli("doctor", "windsurf", "--scope", "project").returncode == 2
    assert cli("install", "cursor", "--hooks", "--repo", project).returncode == 2  # no hooks API
    listed = json.loads(cli("install", "--list", "--json", "--repo", project, check=True).stdout)
    assert next(r for r in listed if r["client"] == "vscode" and r["scope"] == PROJECT)["state"] == "invalid"
    path.write_text('{"servers": "not an object"}')
    assert cli("install", "vscode", "--repo", project).returncode == 31


# Raw U+2028/U+2029 in a user's file: json-five 1.1.2 refuses them (we never write them raw).
_TEXT = st.characters(blacklist_characters="\u2028\u2029")
SERVER = st.fixed_dictionaries({"command": st.text(_TEXT, min_size=1, max_size=20),
                                "args": st.lists(st.text(_TEXT, max_size=10), max_size=3)})


def _without_our_comments(text: str) -> dict:
    """The test's own comments taken out, then the strict `json` parser (an oracle apart from
    json-five, which misreads an escaped backslash before an x)."""
    return json.loads(text.replace("// head comment\n", "").replace(" // keep", ""))


@settings(max_examples=60, deadline=None)
@example(others={"x": {"command": "C:\\xampp\\node.exe", "args": []}}, ours={"command": "\\x", "args": []},
         comment=True, indent=2)  # json-five 1.1.2 alone refuses an escaped backslash before x
@example(others={}, ours={"command": "\u2028", "args": []}, comment=False, indent=2)
@example(others={"\\": {"command": "\b", "args": []}}, ours={"command": "\f", "args": []},
         comment=True, indent=2)  # an escaped backslash beside both \b and \f: found by hypothesis under CI load
@given(others=st.dictionaries(st.text(_TEXT, min_size=1, max_size=8).filter(lambda k: k != "codeagent"),
                              SERVER, max_size=4),
       ours=SERVER, comment=st.booleans(), indent=st.sampled_from([2, 4]))
def test_jsonc_edits_touch_only_the_one_member(others, ours, comment, indent):
    """Set then remove gives back the other servers unchanged, in their order; a comment in
    the file survives both; setting twice changes nothing the second time."""
    text = json.dumps({"a": 1, "servers": others}, indent=indent, ensure_ascii=False)
    if comment:
        text = "// head comment\n" + text.replace('"a": 1,', '"a": 1, // keep', 1)
    added = jsonc.set_member(text, ["servers", "codeagent"], ours, "t")
    data = _without_our_comments(added)
    assert data["servers"]["codeagent"] == ours and data["a"] == 1
    assert list(data["servers"])[:-1] == list(others)
    assert jsonc.loads(added, "t") == data
    assert jsonc.set_member(added, ["servers", "codeagent"], ours, "t") == added
    removed = jsonc.remove_member(added, ["servers", "codeagent"], "t")
    assert _without_our_comments(removed) == _without_our_comments(text)
    if comment:
        assert "// keep" in added and "// keep" in removed


def test_the_command_is_the_running_codeagent(monkeypatch, tmp_path):
    script = tmp_path / "bin" / "codeagent"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    monkeypatch.setattr(sys, "argv", [str(script), "install"])
    assert codeagent_command() == [str(script)]
    monkeypatch.setattr(sys, "argv", ["-c"])
    command = codeagent_command()
    assert os.path.isabs(command[0])
    assert listing(tmp_path)  # every client has a row, with no settings anywhere


def test_hooks_merge_beside_other_hooks_and_refuse_a_broken_file(home, project):
    from codeagent.clients.hooks import MATCHER
    from codeagent.errors import ClientConfigInvalid
    from codeagent.query.hooks import words_of

    settings_file = project / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    theirs = {"matcher": "Write", "hooks": [{"type": "command", "command": "fmt"}]}
    settings_file.write_text(json.dumps({"model": "x", "hooks": {"PostToolUse": [theirs]}}))
    server, hooks = install("claude-code", None, project, hooks=True)
    assert hooks.action == "added" and hooks.path == settings_file
    groups = json.loads(settings_file.read_text())["hooks"]["PostToolUse"]
    assert groups[0] == theirs and groups[1]["matcher"] == MATCHER
    assert [c.action for c in install("claude-code", None, project, hooks=True)] == ["unchanged"] * 2
    install("claude-code", None, project, hooks=True, uninstall=True)
    assert json.loads(settings_file.read_text())["hooks"]["PostToolUse"] == [theirs]
    settings_file.write_text('{"hooks": {"PostToolUse": {"not": "a list"}}}')
    with pytest.raises(ClientConfigInvalid):
        install("claude-code", None, project, hooks=True)
    assert words_of("Grep", r"def\s+parse_config\(") == ["parse_config"]

    gemini = project / ".gemini" / "settings.json"
    gemini.parent.mkdir()
    gemini.write_text('{\n  // mine\n  "theme": "dark",\n}\n')
    _, hooks = install("gemini", None, project, hooks=True)
    text = gemini.read_text()
    assert hooks.action == "added" and "// mine" in text
    [group] = json5.loads(text)["hooks"]["AfterTool"]
    assert "glob" in group["matcher"] and group["hooks"][0]["command"].endswith("hook_runner.py gemini")
    assert group["hooks"][0]["timeout"] == 5000 and group["hooks"][0]["name"] == "codeagent"
    assert words_of("Glob", "**/http/*client*.py") == ["http", "client"]
