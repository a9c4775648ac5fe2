"""Issue 21's first finding, across commands: every spelling of one indexed branch (HEAD, the
bare name, heads/, refs/heads/, a tag on its commit, a sha, a short sha, a manifest-id
prefix) names the same index in every command that takes one, and a spelling that names
nothing is exit 5 with the build command to run, never an empty answer or a deleted store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_raw import RawServer
from relhelpers import codeagent, git, init_repo

from codeagent.store import Store

FILES = {"pkg/core.py": "class Foo:\n    def bar(self):\n        return helper()\n\n\ndef helper():\n    return 1\n"}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> tuple[Path, str, dict[str, str]]:
    repo = init_repo(tmp_path_factory.mktemp("refs") / "repo", FILES)
    git(repo, "tag", "v1")
    built = codeagent("build", repo, "--ref", "main", "--json")
    assert built.returncode == 0, built.stderr
    mid = json.loads(built.stdout)["manifest_id"]
    sha = git(repo, "rev-parse", "HEAD").strip()
    spellings = {"HEAD": "HEAD", "bare": "main", "heads": "heads/main", "refs/heads": "refs/heads/main",
                 "tag": "v1", "refs/tags": "refs/tags/v1", "sha": sha, "short-sha": sha[:8],
                 "manifest-prefix": mid[:12]}
    return repo, mid, spellings


SPELLINGS = ["HEAD", "bare", "heads", "refs/heads", "tag", "refs/tags", "sha", "short-sha", "manifest-prefix"]


@pytest.mark.parametrize("kind", SPELLINGS)
def test_every_query_command_reads_every_spelling(indexed, kind: str) -> None:
    repo, mid, spellings = indexed
    spec = spellings[kind]
    found = codeagent("search", "bar", "--repo", repo, "--ref", spec, "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["metadata"]["manifest_id"] == mid
    shown = codeagent("show", "Foo.bar", "--repo", repo, "--ref", spec)
    assert shown.returncode == 0 and "method pkg.core.Foo.bar" in shown.stdout, shown.stderr
    callers = codeagent("callers", "helper", "--repo", repo, "--ref", spec)
    assert callers.returncode == 0 and "Foo.bar" in callers.stdout, callers.stderr
    diff = codeagent("diff", spec, "heads/main", "--repo", repo, "--json")
    assert diff.returncode == 0, diff.stderr
    sides = json.loads(diff.stdout)
    assert sides["a"]["manifest_id"] == sides["b"]["manifest_id"] == mid


@pytest.mark.parametrize("kind", SPELLINGS)
def test_gc_and_publish_read_every_spelling(indexed, tmp_path: Path, kind: str) -> None:
    repo, mid, spellings = indexed
    spec = spellings[kind]
    dry = codeagent("gc", repo, "--keep-refs", spec, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["kept_refs"] == ["heads/main"]
    if kind == "manifest-prefix":
        return  # publish sends a ref: a bare manifest id names none
    sent = codeagent("publish", repo, "--to", tmp_path / "remote", "--ref", spec, "--json")
    assert sent.returncode == 0, sent.stderr
    assert [r["ref"] for r in json.loads(sent.stdout)["refs"]] == ["heads/main"]
    assert Store(repo / ".codeagent").list_refs() == {"heads/main": mid}


def test_serve_reads_a_tag_and_a_short_sha(indexed) -> None:
    repo, mid, spellings = indexed
    for spec in (spellings["tag"], spellings["short-sha"]):
        server = RawServer(repo, "--ref", spec)
        try:
            reply = server.call(1, "search_code", {"query": "bar"}, timeout=120)
        finally:
            assert server.close() == 0
        assert reply is not None and not reply["result"].get("isError"), reply
        assert reply["result"]["structuredContent"]["metadata"]["manifest_id"] == mid


@pytest.mark.parametrize("args, message", [
    (("search", "bar", "--ref", "mian"), "no index for 'mian'"),
    (("show", "Foo.bar", "--ref", "v2"), "no index for 'v2'"),
    (("gc", "--keep-refs", "mian"), "--keep-refs mian names no index"),
    (("publish", "--to", "REMOTE", "--ref", "mian"), "no index for 'mian'")])
def test_a_spelling_that_names_nothing_is_exit_5_and_says_what_to_do(indexed, tmp_path, args, message) -> None:
    repo, mid, _ = indexed
    args = tuple(str(tmp_path / "remote") if a == "REMOTE" else a for a in args)
    cmd, rest = args[0], args[1:]
    proc = codeagent(cmd, *((repo,) if cmd in ("gc", "publish") else ()), *rest,
                     *(() if cmd in ("gc", "publish") else ("--repo", repo)))
    assert proc.returncode == 5, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert message in proc.stderr, proc.stderr
    hint = "the store's refs: heads/main" if cmd == "gc" else f"build {repo} --ref {args[args.index('--ref') + 1]}`"
    assert hint in proc.stderr, proc.stderr
    assert Store(repo / ".codeagent").list_refs() == {"heads/main": mid}
