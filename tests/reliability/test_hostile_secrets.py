"""Secrets recognised by content (detect-secrets) beside the name rules: a key saved under an
innocent name, a cloud service-account JSON, a token in a TOML file are `secret` skips at
build, absent from every search, and withheld by read_file. The secrets are assembled at run
time so this file holds none."""

from __future__ import annotations

import json
import os
import random
import string
from pathlib import Path

import pytest

from mcp_raw import RawServer, tool_error_code
from relhelpers import codeagent, git, init_repo

from codeagent.errors import Withheld
from codeagent.format.manifest import load_manifest
from codeagent.query.sandbox import Sandbox
from codeagent.store import Store

_rng = random.Random(21)
MARK = "Zq" + "".join(_rng.choices(string.ascii_letters, k=10))  # searchable, in every secret


def _b64(n: int) -> str:
    return "".join(_rng.choices(string.ascii_letters + string.digits + "+/", k=n))


def _pem(kind: str) -> str:
    begin, end = "-----BEGIN " + kind + "-----", "-----END " + kind + "-----"
    body = "\n".join(_b64(70) for _ in range(6))
    return f"{begin}\n{MARK}{body}\n{end}\n"


SECRETS = {
    "deploy/deploy_key": _pem("OPENSSH " + "PRIVATE KEY"),
    "config/service-account.json": json.dumps({
        "type": "service_account", "project_id": "demo-project", "private_key_id": "9f" * 20,
        "private_key": _pem("PRIVATE" + " KEY"), "client_email": f"{MARK}@demo-project.iam.example",
    }, indent=2),
    "secrets.toml": f'[api]\ntoken = "{MARK}{_b64(30)}"\n',  # by name
    "app/settings.toml": f'[github]\nuser = "{MARK}"\ntoken = "{"gh" + "p_" + _b64(36).replace("+", "a").replace("/", "b")}"\n',
    "src/embedded.py": f'KEY = """{_pem("RSA " + "PRIVATE KEY")}"""\n',
    "auth/Credentials.kt": f'val KEY = """{_pem("EC " + "PRIVATE KEY")}"""\n',  # source: by content
}
HARMLESS = {
    "src/ok.py": f"def {MARK.lower()}_ok():\n    return get_password()\n",
    "auth/credentials.py": "def basic(user, password):\n    return user + ':' + password\n",  # source, not a secret by name
    "docs/auth.md": "# Auth\n\nSet `password: ${DB_PASSWORD}` in the environment.\n",
    "config/app.yaml": "database:\n  host: localhost\n  password: ${DB_PASSWORD}\n",
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("secrets")
    repo = init_repo(root / "repo", {**SECRETS, **HARMLESS})
    for args in (("build", repo), ("build", repo, "--ref", "main")):
        proc = codeagent(*args, "--json", timeout=300)
        assert proc.returncode == 0, proc.stderr
    return repo


@pytest.mark.parametrize("ref", ["worktree", "heads/main"])
def test_secret_content_is_a_secret_skip(repo: Path, ref: str) -> None:
    store = Store(repo / ".codeagent")
    manifest = load_manifest(store, store.read_ref(ref))
    reasons = {f.path: (f.status, f.reason) for f in manifest.files}
    assert {p: reasons[p] for p in SECRETS} == {p: ("skipped", "secret") for p in SECRETS}
    assert {p: reasons[p] for p in HARMLESS} == {p: ("indexed", "") for p in HARMLESS}


@pytest.mark.parametrize("mode", ["text", "regex", "path", "auto"])
def test_no_search_serves_a_secret(repo: Path, mode: str) -> None:
    query = "deploy_key" if mode == "path" else MARK
    proc = codeagent("search", query, "--mode", mode, "--repo", repo, "--json", "--limit", "50")
    assert proc.returncode == 0, proc.stderr
    paths = {h["path"] for h in json.loads(proc.stdout)["results"]}
    assert not paths & set(SECRETS), paths
    assert "BEGIN" not in proc.stdout


def test_read_file_withholds_secret_content(repo: Path) -> None:
    box = Sandbox(repo)
    with pytest.raises(Withheld, match=r"deploy/deploy_key holds what looks like a secret \(Private Key\)"):
        box.read_file("deploy/deploy_key")
    with pytest.raises(Withheld, match="GitHub Token"):
        box.read_file("app/settings.toml")
    assert b"get_password" in box.read_file("src/ok.py").data


def test_a_secret_added_later_is_skipped_and_its_old_text_leaves_the_index(repo: Path, tmp_path: Path) -> None:
    fresh = init_repo(tmp_path / "later", {"notes/keys.txt": "nothing here yet\n"})
    assert codeagent("build", fresh).returncode == 0
    (fresh / "notes/keys.txt").write_text(SECRETS["deploy/deploy_key"])
    out = json.loads(codeagent("build", fresh, "--json").stdout)
    assert out["files_skipped"]["by_reason"] == {"secret": 1}
    proc = codeagent("search", MARK, "--mode", "text", "--repo", fresh, "--json")
    assert json.loads(proc.stdout)["results"] == []


def test_the_real_server_serves_no_secret_and_no_hard_linked_byte(tmp_path: Path) -> None:
    """Findings 4 and 5 through `codeagent serve` (stdio, no SDK): secrets under innocent names
    and a hard link to a file outside the repository are absent from search_code (every
    mode) and search_files; read_file refuses them by code, and get_file_outline shows
    nothing of them (no symbol: the build never parsed them)."""
    outside = tmp_path / "elsewhere.py"
    outside.write_text(f"def {MARK}_outside():\n    return 'another project'\n")
    repo = init_repo(tmp_path / "repo", {**SECRETS, **HARMLESS})
    os.link(outside, repo / "src" / "linked.py")
    assert codeagent("build", repo).returncode == 0
    hidden = [*SECRETS, "src/linked.py"]
    leaks = ["BEGIN", f"{MARK}_outside", *(text.splitlines()[2][:40] for text in SECRETS.values()
                                             if "BEGIN" in text)]
    server = RawServer(repo)
    served: list[str] = []
    try:
        calls = [("search_code", {"query": query, "mode": mode, "limit": 50})
                 for mode in ("auto", "text", "regex", "symbol") for query in (MARK, f"{MARK}_outside")]
        calls += [("search_files", {"pattern": MARK}), ("search_files", {"pattern": "BEGIN"})]
        calls += [(tool, {"path": path}) for path in hidden for tool in ("read_file", "get_file_outline")]
        for rid, (tool, args) in enumerate(calls, start=1):
            reply = server.call(rid, tool, args, timeout=120)
            assert reply is not None and "result" in reply, (tool, args, reply)
            text = json.dumps(reply)
            served += [f"{tool} {args}: {leak!r}" for leak in leaks if leak in text]
            if tool.startswith("search"):
                served += [f"{tool} {args}: {path}" for path in hidden if path in text]
            elif tool == "read_file":
                want = "path_escape" if args["path"] == "src/linked.py" else "withheld"
                assert tool_error_code(reply) == want, (tool, args, reply)
            elif args["path"] in SECRETS:  # found by content at build time: refused as by name
                assert tool_error_code(reply) == "withheld", (tool, args, reply)
            elif tool_error_code(reply) is None:
                assert reply["result"]["structuredContent"]["symbols"] == [], (args, reply)
        harmless = server.call(999, "search_code", {"query": f"{MARK.lower()}_ok", "mode": "symbol"})
    finally:
        assert server.close() == 0
    assert not served, served
    assert "src/ok.py" in json.dumps(harmless)  # the server answers; only the withheld are absent
