"""publish -> sync end to end, over a real HTTP server on 127.0.0.1 and a directory remote.

One publisher repository (100 files on `main`, a `feature` branch changing 1% of them) is
built and published once per module; each test syncs into a fresh clone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from codeagent.hashing import hash_bytes
from codeagent.indexer.build import BuildOptions, build
from codeagent.indexer.maintenance import verify_store
from codeagent.indexer.replicate.remote import open_remote
from codeagent.indexer.replicate.publish import publish
from codeagent.indexer.replicate.sync import SyncOptions, sync
from codeagent.errors import IndexIncompatible, RemoteError
from codeagent.format.manifest import load_manifest
from codeagent.store import Store
from remote_server import FaultPlan, serve
from repo_helpers import GitRepo

N_FILES = 100


def module_source(i: int, variant: str = "") -> str:
    return (f'"""Module {i}{variant}: helpers for widget {i}."""\n\nimport os\n\n\n'
            f"def compute_{i}(value: int) -> int:\n    \"\"\"Scale a value for widget {i}.\"\"\"\n"
            f"    return value * {i} + len(os.sep){variant and ' + 1'}\n\n\n"
            f"class Widget{i}:\n    def __init__(self) -> None:\n        self.size = {i}\n\n"
            f"    def grow(self, by: int) -> int:\n        self.size += compute_{i}(by)\n"
            f"        return self.size\n" + "".join(helper(i, k) for k in range(24)))


def helper(i: int, k: int) -> str:
    """A module's other functions: a repository's files are kilobytes, not 300 bytes, and at
    300 bytes a file's manifest entry (~300 bytes, its chunk ~1.5 KB) weighs as much as its
    shard, so the byte ratio would measure manifest chunking luck, not what a switch moves."""
    return (f"\n\ndef helper_{i}_{k}(items: list[int], limit: int = {k + 1}) -> list[int]:\n"
            f"    \"\"\"Keep the items of widget {i} below {k + 1} times the limit, in order.\"\"\"\n"
            f"    kept = [item for item in items if item < limit * {k + 1}]\n"
            f"    if not kept:\n        raise ValueError(f\"no item below {{limit}} for widget {i}\")\n"
            f"    return sorted(kept, key=lambda item: (item % {k + 2}, item))\n")


@dataclass
class Published:
    repo: Path
    remote: Path
    main_id: str
    feature_id: str
    main_commit: str
    feature_commit: str


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Published:
    root = tmp_path_factory.mktemp("published")
    g = GitRepo.create(root / "pub")
    g.write_many({f"pkg{i % 10}/mod_{i}.py": module_source(i) for i in range(N_FILES)})
    main_commit = g.commit("main")
    g.checkout("feature", create=True)
    for i in range(0, N_FILES, 100):  # 1% of the files change
        g.write(f"pkg{i % 10}/mod_{i}.py", module_source(i, " (v2)"))
    feature_commit = g.commit("feature")
    g.checkout("main")
    main_id = build(BuildOptions(repo=g.path, rev="main")).manifest_id
    feature_id = build(BuildOptions(repo=g.path, rev="feature")).manifest_id
    for ref in ("main", "feature"):
        publish(g.path, str(root / "remote"), ref)
    return Published(g.path, root / "remote", main_id, feature_id, main_commit, feature_commit)


@pytest.fixture
def client(published: Published, tmp_path: Path) -> Path:
    dest = tmp_path / "client"
    subprocess.run(["git", "clone", "-q", str(published.repo), str(dest)], check=True)
    return dest


def sync_json(cli, client: Path, source: str, *args: str) -> dict:
    """The real CLI, for end-to-end checks."""
    proc = cli("sync", client, "--from", source, "--json", *args)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout)


def do_sync(client: Path, source: str, ref: str | None = None, **options) -> dict:
    """The library call behind `codeagent sync` (no interpreter start-up per sync)."""
    return sync(SyncOptions(repo=client, source=str(source), ref=ref, **options)).to_dict()


def verified(client: Path) -> bool:
    report = verify_store(Store(client / ".codeagent"))
    assert report.ok, report.to_dict()
    return True


def local_refs(client: Path) -> dict[str, str]:
    return Store(client / ".codeagent").list_refs()


def test_publish_then_sync_over_http_gives_the_same_manifest_and_verifies(published, client, cli) -> None:
    with serve(published.remote) as (url, plan):
        out = sync_json(cli, client, url, "--ref", "main", "--require-commit", published.main_commit)
    assert out["manifest_id"] == published.main_id
    assert out["objects_fetched"] == N_FILES and out["bytes_fetched"] > 0
    assert local_refs(client) == {"heads/main": published.main_id}
    cli("verify", client, check=True)
    import duckdb

    db = client / ".codeagent" / "assembled" / published.main_id / "index.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM files").fetchone()[0] == N_FILES
        assert con.execute("SELECT count(*) FROM symbols WHERE name = 'Widget7'").fetchone()[0] == 1
    again = do_sync(client, published.remote, "main")
    assert again["changed"] is False and again["objects_fetched"] == 0 and again["bytes_fetched"] == 0


def test_branch_switch_moves_at_most_2_percent_of_the_bytes(published, client, cli) -> None:
    with serve(published.remote) as (url, plan):
        do_sync(client, url, "main")
        full = plan.bytes_served
        plan.reset()
        out = do_sync(client, url, "feature")
        switch = plan.bytes_served
    assert out["manifest_id"] == published.feature_id
    assert out["objects_fetched"] == N_FILES // 100  # the changed files' shards (the manifest came as chunks)
    assert switch <= 0.02 * full, f"branch switch served {switch} bytes, full sync {full}"
    assert verified(client)


def test_bad_downloads_are_detected_and_fetched_again(published, client, cli) -> None:
    manifest = load_manifest(Store(published.repo / ".codeagent"), published.main_id)
    shards = sorted(manifest.shard_ids())
    plan = FaultPlan(faults={shards[0]: ["truncate"], shards[1]: ["flip"], shards[2]: ["wrong"],
                             shards[3]: ["abort", "flip"]})
    with serve(published.remote, plan) as (url, plan):
        out = do_sync(client, url, "main")
    assert out["manifest_id"] == published.main_id
    assert out["retries"] == 5, out["problems"]
    assert [plan.requests[s] for s in shards[:4]] == [2, 2, 2, 3]
    assert any("hashing to" in p for p in out["problems"])
    assert verified(client)


def test_a_damaged_manifest_chunk_falls_back_to_the_whole_manifest(published, client) -> None:
    listing = json.loads((published.remote / "manifests" / published.main_id).read_bytes())
    plan = FaultPlan(faults={listing["chunks"][0]: ["always:truncate"]})
    with serve(published.remote, plan) as (url, plan):
        out = do_sync(client, url, "main")
    assert out["manifest_id"] == published.main_id
    assert plan.requests[published.main_id] == 1
    assert any("chunks" in p and "failed verification" in p for p in out["problems"]), out["problems"]
    assert verified(client)


def test_a_persistently_bad_object_fails_the_sync_and_keeps_the_previous_index(published, client, cli) -> None:
    do_sync(client, published.remote, "main")
    before = local_refs(client)
    pub = Store(published.repo / ".codeagent")
    new = sorted(load_manifest(pub, published.feature_id).shard_ids()
                 - load_manifest(pub, published.main_id).shard_ids())
    plan = FaultPlan(faults={new[0]: ["always:flip"]})
    with serve(published.remote, plan) as (url, _):
        proc = cli("sync", client, "--from", url, "--ref", "feature")
    assert proc.returncode == 14, proc.stderr
    assert f"object {new[0][:12]}" in proc.stderr and "failed verification 3 times" in proc.stderr
    assert local_refs(client) == before
    store = Store(client / ".codeagent")
    assert not store.has(new[0]) and store.is_assembled(published.main_id)
    assert verified(client)


def test_an_interrupted_sync_resumes_without_refetching(published, client, cli) -> None:
    needed = load_manifest(Store(published.repo / ".codeagent"), published.main_id).referenced_objects()
    plan = FaultPlan(fail_after=60)  # object GETs, manifest chunks included
    with serve(published.remote, plan) as (url, plan):
        with pytest.raises(RemoteError, match="failed verification"):
            do_sync(client, url, "main", jobs=2)
        first = set(plan.object_gets) & needed
        store = Store(client / ".codeagent")
        assert len(first) >= 30 and all(store.has(o) for o in first)
        assert local_refs(client) == {}
        plan.reset()
        out = do_sync(client, url, "main")
        second = set(plan.object_gets)
    assert not first & second, "verified objects were fetched again"
    assert out["objects_present"] == len(first) and out["objects_fetched"] == N_FILES - len(first)
    assert needed <= first | second
    assert verified(client)


def test_a_killed_sync_resumes(published, client, cli) -> None:
    plan = FaultPlan()
    with serve(published.remote, plan) as (url, plan):
        plan.delay = 0.01
        proc = subprocess.Popen([sys.executable, "-m", "codeagent", "sync", str(client), "--from", url,
                                 "--ref", "main", "--jobs", "1"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while len(plan.object_gets) < 50 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kept = sum(1 for _ in Store(client / ".codeagent").iter_objects())
        plan.reset()
        out = do_sync(client, url, "main")
    assert kept >= 10 and out["objects_present"] == kept - 1  # the manifest is not a shard
    assert out["objects_fetched"] == N_FILES - out["objects_present"]
    assert verified(client)


def test_bundle_round_trip(published, client, cli, tmp_path: Path) -> None:
    tar = tmp_path / "index.tar"
    cli("bundle", published.repo, "--ref", "main", "--ref", "feature", "-o", tar, check=True)
    out = do_sync(client, tar, "feature")
    assert out["manifest_id"] == published.feature_id
    assert verified(client)
    with open_remote(str(tar)) as remote:
        assert remote.list_refs() == {"heads/feature": published.feature_id, "heads/main": published.main_id}


def test_unpublished_branch_falls_back_to_its_nearest_published_ancestor(published, client, cli) -> None:
    g = GitRepo(client, __import__("git").Repo(client))
    with g.repo.config_writer() as cw:
        cw.set_value("user", "name", "Dev")
        cw.set_value("user", "email", "dev@example.com")
    g.checkout("topic", create=True)
    g.write("pkg1/mod_1.py", module_source(1, " (topic)"))
    g.commit("one")
    g.write("pkg1/new.py", "def brand_new():\n    return 1\n")
    g.commit("two")
    proc = cli("sync", client, "--from", str(published.remote), "--build")
    assert proc.returncode == 0, proc.stderr
    assert (f"no published index for heads/topic; using the index of ancestor "
            f"{published.main_commit[:12]} (2 commits back)") in proc.stdout
    assert "built the work tree on top: 2 files parsed" in proc.stdout
    assert local_refs(client)[f"commits/{published.main_commit}"] == published.main_id
    assert "worktree" in local_refs(client)


def test_the_build_on_top_parses_only_what_the_work_tree_changes(published, client, cli) -> None:
    (client / "pkg2" / "mod_2.py").write_text(module_source(2, " (local edit)"))
    out = do_sync(client, published.remote, "main", build=True)
    assert out["build"]["files_parsed"] == 1
    assert out["build"]["files_reused"] == N_FILES - 1


def test_sync_refuses_indexes_this_build_cannot_read(published, client, cli, tmp_path: Path) -> None:
    import shutil
    from dataclasses import replace

    manifest = load_manifest(Store(published.repo / ".codeagent"), published.main_id)
    future = replace(manifest, extractor_version="999").canonical_bytes()
    remote_dir = tmp_path / "remote"
    shutil.copytree(published.remote, remote_dir)
    with open_remote(str(remote_dir)) as remote:
        remote.put_object(hash_bytes(future), future)
        remote.set_ref("heads/future", hash_bytes(future), manifest.commit)
    with pytest.raises(IndexIncompatible, match="extractor version 999"):
        do_sync(client, remote_dir, "future")
    with pytest.raises(IndexIncompatible, match="not the required"):
        do_sync(client, remote_dir, "main", require_commit=published.feature_commit)
    assert local_refs(client) == {}


def test_missing_indexes_and_non_remotes_are_clear_errors(published, client, cli, tmp_path: Path) -> None:
    proc = cli("sync", client, "--from", published.remote, "--ref", "nope")
    assert proc.returncode == 5 and "published refs: heads/feature, heads/main" in proc.stderr
    (tmp_path / "empty").mkdir()
    proc = cli("sync", client, "--from", tmp_path / "empty", "--ref", "main")
    assert proc.returncode == 14 and "not a codeagent remote" in proc.stderr
    with serve(published.remote) as (url, _):
        proc = cli("publish", published.repo, "--to", url, "--ref", "main")
    assert proc.returncode == 14 and "read-only" in proc.stderr


@pytest.mark.parametrize("embedder_id, ok", [(None, True), ("hash-v1-d256", True),
                                             ("hash-v99-d256", False), ("martian-v1-d8", False)])
def test_only_embedders_this_build_can_read_are_trusted(published, embedder_id, ok) -> None:
    from dataclasses import replace

    from codeagent.indexer.replicate.sync import check_readable

    manifest = replace(load_manifest(Store(published.repo / ".codeagent"), published.main_id),
                       embedder_id=embedder_id)
    if ok:
        check_readable(manifest)
    else:
        with pytest.raises(IndexIncompatible, match="embedder"):
            check_readable(manifest)
