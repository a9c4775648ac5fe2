"""The agents' hooks: the process a client starts for each grep/glob call (hook_runner.py
under python -I -S) stays small, finds the daemon's socket as the daemon does, fails open,
and through a real daemon answers Claude Code's Grep and Codex's `rg`; Codex's hooks are
written as the [[hooks.PostToolUse]] tables its config.toml documents."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings, strategies as st

from codeagent.clients import hook_runner
from codeagent.clients.hooks import hook_command
from codeagent.clients.install import BACKUP_SUFFIX
from codeagent.clients.setup import install
from codeagent.runtime.daemon import trust

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from repo_helpers import GitRepo  # noqa: E402

RUNNER = [sys.executable, "-I", "-S", hook_runner.__file__]
HEAVY = ("duckdb", "pyarrow", "numpy", "click", "tree_sitter", "json", "re", "socket", "hashlib")


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return h


def grep_event(cwd: Path, pattern: str = "def helper") -> str:
    return json.dumps({"hook_event_name": "PostToolUse", "tool_name": "Grep", "cwd": str(cwd),
                       "tool_input": {"pattern": pattern}, "tool_response": {"content": "x" * 200_000}})


def test_the_hook_process_finds_the_daemons_socket_imports_nothing_heavy_and_fails_open(tmp_path):
    env = {**os.environ, "CODEAGENT_DAEMON_DIR": str(tmp_path / "d")}
    env.pop("CODEAGENT_DAEMON", None)
    code = "from codeagent.runtime.daemon.protocol import socket_path; print(socket_path())"
    theirs = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout
    mine = subprocess.run([*RUNNER[:3], "-c", f"import runpy, sys; sys.argv = ['x']; "
                           f"m = runpy.run_path({hook_runner.__file__!r}); "
                           f"sys.prefix = m['_venv_prefix'](); print(m['socket_path']())"],
                          env=env, capture_output=True, text=True)
    assert mine.stdout == theirs and theirs.strip().endswith(".sock"), mine.stderr

    # No daemon: nothing printed, exit 0, no daemon started (CODEAGENT_DAEMON unset), and no
    # heavy module imported on the way (a folder that looks indexed: the way to the socket).
    (tmp_path / ".codeagent").mkdir()
    proc = subprocess.run([*RUNNER[:1], "-X", "importtime", *RUNNER[1:], "claude-code"],
                          input=grep_event(tmp_path), env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == ""
    imported = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    assert "_socket" in imported and not imported & set(HEAVY), sorted(imported & set(HEAVY))
    assert not (tmp_path / "d").exists() or not list((tmp_path / "d").glob("*.sock"))
    for junk in ("not json", "", json.dumps({"tool_name": "Read"})):
        proc = subprocess.run([*RUNNER, "codex"], input=junk, env=env, capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""


_KINDS = ("socket", "file", "symlink", "missing")


@settings(max_examples=150, deadline=None)
@given(folder_mode=st.integers(0, 0o777), folder_kind=st.sampled_from(("dir", "symlink", "missing")),
       sock_kind=st.sampled_from(_KINDS), folder_owner=st.sampled_from(("me", "other")),
       sock_owner=st.sampled_from(("me", "other")), caller=st.sampled_from(("me", "other")))
def test_the_hooks_trust_check_is_the_daemons(folder_mode, folder_kind, sock_kind, folder_owner,
                                                sock_owner, caller):
    """hook_runner.trusted copies daemon.trust.trusted (the hook may not import the package):
    over folder modes, kinds and owners (owners other than ours need root to chown; without it
    the caller's uid varies instead), both say the same, and a private folder of ours holding
    our socket is trusted."""
    me = os.getuid()
    uids = {"me": me, "other": me + 4242}
    root = os.geteuid() == 0
    folder_uid, sock_uid = (uids[folder_owner], uids[sock_owner]) if root else (me, me)
    base = tempfile.mkdtemp(prefix="ca-trust-", dir="/tmp")  # short: AF_UNIX paths are limited
    try:
        real = os.path.join(base, "real")
        os.mkdir(real)
        folder = os.path.join(base, "f")
        if folder_kind == "dir":
            os.mkdir(folder)
        elif folder_kind == "symlink":
            os.symlink(real, folder)  # os.stat follows it: the real folder is judged
        target = folder if folder_kind == "dir" else real
        if folder_kind != "missing":
            _make(os.path.join(target, "d.sock"), sock_kind, base)
            if root:
                os.chown(target, folder_uid, -1)
                if sock_kind != "missing":
                    os.lchown(os.path.join(target, "d.sock"), sock_uid, -1)
            os.chmod(target, folder_mode)
        path = os.path.join(folder, "d.sock")
        with mock.patch.object(os, "getuid", return_value=uids[caller]):
            theirs, mine = trust.trusted(path), hook_runner.trusted(path)
        assert mine == theirs
        expected = (folder_kind != "missing" and sock_kind != "missing" and not folder_mode & 0o077
                    and folder_uid == sock_uid == uids[caller])
        assert theirs == expected, (theirs, expected)
    finally:
        for dirpath, _dirs, _files in os.walk(base):
            os.chmod(dirpath, 0o700)
        shutil.rmtree(base)


def _make(path: str, kind: str, base: str) -> None:
    """A socket, a file, a symlink to a socket elsewhere (lstat: the link itself), or nothing."""
    if kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(path)
    elif kind == "file":
        open(path, "w").close()
    elif kind == "symlink":
        os.symlink(os.path.join(base, "elsewhere"), path)


@pytest.mark.parametrize("command, found", [
    ("rg -n parse_headers src", ("Grep", "parse_headers")),
    ("rg --type py -e 'def run(' .", ("Grep", "def run(")),
    ('bash -lc "grep -rn \\"class Foo\\" ."', ("Grep", "class Foo")),
    ("cd src && git grep -n retry_after", ("Grep", "retry_after")),
    ("find . -name '*_test.go' | head -5", ("Glob", "*_test.go")),
    ("rg 2>/dev/null -i Timeout", ("Grep", "Timeout")),
    (["bash", "-lc", "fd config"], ("Glob", "config")),
    ("ls -la; cat README.md", None),
    ("echo 'rg | grep'", None),
    ("git log -n 3", None),
    ("rg 'unclosed", None),
])
def test_codex_shell_commands_name_their_search(command, found):
    assert hook_runner.shell_search(command) == found


_SAFE = st.text(st.sampled_from("ab_9 .-'\"\\\t"), max_size=30)


@settings(max_examples=300, deadline=None)
@given(_SAFE)
def test_shell_words_split_as_shlex_does(line):
    """The hook's own splitter (shlex would import re) reads words as shlex's POSIX mode."""
    try:
        expected = shlex.split(line)
    except ValueError:
        expected = None
    assert hook_runner.shell_words(line) == expected


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=8), st.one_of(
    st.text(max_size=20), st.integers(-10**6, 10**6), st.booleans(), st.none(),
    st.lists(st.text(max_size=5), max_size=3)), max_size=5))
def test_the_wire_json_is_json(value):
    assert hook_runner.dumps(value) == json.dumps(value)
    assert hook_runner.loads(json.dumps(value)) == value


def test_codex_hooks_are_written_as_its_config_toml_documents(home, tmp_path):
    project = tmp_path / "project"
    config = project / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    theirs = ('# my codex config\nmodel = "o3"  # keep this comment\n\n'
              '[[hooks.PostToolUse]]\nmatcher = "apply_patch"\n\n[[hooks.PostToolUse.hooks]]\n'
              'type = "command"\ncommand = "fmt"\n\n[hooks.state."x"]\nenabled = true\n')
    config.write_text(theirs)
    server, hooks = install("codex", None, project, hooks=True)
    assert (server.action, hooks.action) == ("added", "added") and hooks.path == config
    text = config.read_text()
    data = tomllib.loads(text)
    assert "keep this comment" in text and data["model"] == "o3"
    assert data["mcp_servers"]["codeagent"]["args"][0] == "serve"
    fmt_group, ours = data["hooks"]["PostToolUse"]
    assert fmt_group == {"matcher": "apply_patch", "hooks": [{"type": "command", "command": "fmt"}]}
    assert ours["matcher"] == "^Bash$" and ours["hooks"][0]["type"] == "command"
    assert ours["hooks"][0]["timeout"] == 5 and ours["hooks"][0]["command"] == hook_command("codex")
    assert data["hooks"]["state"] == {"x": {"enabled": True}}
    assert (config.parent / (config.name + BACKUP_SUFFIX)).read_text() == theirs  # one backup
    assert [c.action for c in install("codex", None, project, hooks=True)] == ["unchanged"] * 2

    install("codex", None, project, hooks=True, uninstall=True)
    data = tomllib.loads(config.read_text())
    assert data["hooks"]["PostToolUse"] == [fmt_group] and "codeagent" not in data.get("mcp_servers", {})

    user = install("codex", "user", project, hooks=True)[1]  # CODEX_HOME moves the user file
    assert user.path == home / ".codex" / "config.toml"
    assert tomllib.loads(user.path.read_text())["hooks"]["PostToolUse"][0]["matcher"] == "^Bash$"


def test_an_older_hook_command_is_replaced(home, tmp_path):
    project = tmp_path / "project"
    settings_file = project / ".claude" / "settings.json"
    settings_file.parent.mkdir(parents=True)
    old = {"matcher": "Grep|Glob", "hooks": [
        {"type": "command", "command": "CODEAGENT_DAEMON=1 /old/bin/codeagent hook claude-code"}]}
    settings_file.write_text(json.dumps({"hooks": {"PostToolUse": [old]}}))
    _, hooks = install("claude-code", None, project, hooks=True)
    [group] = json.loads(settings_file.read_text())["hooks"]["PostToolUse"]
    assert hooks.action == "updated" and group["hooks"][0]["command"] == hook_command("claude-code")


@pytest.fixture
def daemon_env(tmp_path):
    """A daemon of the test's own (own socket folder), stopped at the end."""
    env = {**os.environ, "CODEAGENT_DAEMON_DIR": str(tmp_path / "d")}
    env.pop("CODEAGENT_DAEMON", None)
    cli = [sys.executable, "-m", "codeagent", "daemon"]
    proc = subprocess.run([*cli, "start", "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    yield env
    subprocess.run([*cli, "stop"], env=env, capture_output=True, timeout=60)


def _served(env: dict) -> int:
    out = subprocess.run([sys.executable, "-m", "codeagent", "daemon", "status", "--json"], env=env,
                         capture_output=True, text=True).stdout
    return json.loads(out)["served"]


def test_hooks_answer_through_the_daemon(daemon_env, tmp_path):
    repo = GitRepo.create(tmp_path / "repo")
    repo.write_many({"app/net.py": "def parse_headers(raw=''):\n    return dict(raw)\n",
                     "app/main.py": "from app.net import parse_headers\n\n\ndef main():\n"
                                    "    return parse_headers()\n"})
    repo.commit("sample")
    subprocess.run([sys.executable, "-m", "codeagent", "build"], cwd=repo.path, check=True,
                   capture_output=True, env={**daemon_env, "CODEAGENT_DAEMON": "0"})

    def hook(client: str, event: dict) -> subprocess.CompletedProcess:
        return subprocess.run(["/bin/sh", "-c", hook_command(client)], input=json.dumps(event),
                              cwd=repo.path, env=daemon_env, capture_output=True, text=True, timeout=120)

    grep = {"hook_event_name": "PostToolUse", "tool_name": "Grep", "cwd": str(repo.path),
            "tool_input": {"pattern": r"def parse_headers\("}, "tool_response": {"content": "y" * 100_000}}
    proc = hook("claude-code", grep)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PostToolUse"
    assert "function app.net.parse_headers app/net.py:1" in out["additionalContext"]

    codex = {**grep, "tool_name": "Bash", "tool_input": {"command": "rg -n parse_headers app"}}
    out = json.loads(hook("codex", codex).stdout)["hookSpecificOutput"]
    assert "app/net.py" in out["additionalContext"] and out["hookEventName"] == "PostToolUse"

    served = _served(daemon_env)
    for other in ("ls -la", "pytest -q", "echo rg"):  # not a search: the daemon never hears of it
        proc = hook("codex", {**codex, "tool_input": {"command": other}})
        assert proc.returncode == 0 and proc.stdout == ""
    elsewhere = tmp_path / "no-index"  # a search where nothing is indexed: nor of that
    elsewhere.mkdir()
    proc = hook("claude-code", {**grep, "cwd": str(elsewhere)})
    assert proc.returncode == 0 and proc.stdout == ""
    assert _served(daemon_env) == served


def test_a_session_first_call_starts_the_daemon_for_the_next(tmp_path):
    env = {**os.environ, "CODEAGENT_DAEMON_DIR": str(tmp_path / "d")}
    env.pop("CODEAGENT_DAEMON", None)
    (tmp_path / ".codeagent").mkdir()  # looks indexed: a search here goes to the daemon
    proc = subprocess.run(["/bin/sh", "-c", hook_command("claude-code")], input=grep_event(tmp_path),
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == ""  # nothing yet: the daemon is starting
    try:
        deadline = time.monotonic() + 60
        while not list((tmp_path / "d").glob("d-*.sock")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list((tmp_path / "d").glob("d-*.sock")) == [Path(hook_runner_socket(env))]
    finally:
        while time.monotonic() < deadline and subprocess.run(
                [sys.executable, "-m", "codeagent", "daemon", "stop"], env=env,
                capture_output=True).returncode != 0:
            time.sleep(0.2)


def hook_runner_socket(env: dict) -> str:
    code = "from codeagent.runtime.daemon.protocol import socket_path; print(socket_path())"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    return proc.stdout.strip()
