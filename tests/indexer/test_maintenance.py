"""status, verify and gc through the real CLI."""

from __future__ import annotations

import json

from codeagent.store import Store


def _setup(git_repo, cli):
    git_repo.write_many({"a.py": "A = 1\n", "b.py": "B = 2\n", "docs/x.md": "# X\n\ntext\n"})
    git_repo.commit("init")
    main = json.loads(cli("build", git_repo.path, "--ref", "main", "--json", check=True).stdout)
    git_repo.checkout("topic", create=True)
    git_repo.write("c.py", "C = 3\n")
    git_repo.commit("topic")
    topic = json.loads(cli("build", git_repo.path, "--ref", "topic", "--json", check=True).stdout)
    return main, topic


def test_status_lists_refs_counts_and_freshness(git_repo, cli):
    main, topic = _setup(git_repo, cli)
    cli("build", git_repo.path, check=True)
    data = json.loads(cli("status", git_repo.path, "--json", check=True).stdout)
    refs = {r["ref"]: r for r in data["refs"]}
    assert set(refs) == {"heads/main", "heads/topic", "worktree"}
    assert refs["heads/main"]["manifest_id"] == main["manifest_id"]
    assert refs["heads/topic"]["counts"]["indexed"] == 4
    assert data["worktree"]["state"] == "fresh"
    assert data["store_bytes"] > 0 and data["objects"] > 0
    git_repo.write("a.py", "A = 'edited'\n")
    data = json.loads(cli("status", git_repo.path, "--json", check=True).stdout)
    assert data["worktree"]["state"] == "stale"
    assert data["worktree"]["modified"] == ["a.py"]
    human = cli("status", git_repo.path, check=True).stdout
    assert "heads/main" in human and "stale" in human


def test_status_without_index_names_the_build_command(git_repo, cli):
    proc = cli("status", git_repo.path)
    assert proc.returncode == 5 and "codeagent build" in proc.stderr


def test_verify_reports_corruption_and_dangling_shards(git_repo, cli):
    main, _ = _setup(git_repo, cli)
    ok = cli("verify", git_repo.path, "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["ok"] is True
    store = Store(git_repo.path / ".codeagent")
    from codeagent.format.manifest import load_manifest

    shard = sorted(load_manifest(store, main["manifest_id"]).shard_ids())[0]
    path = store.object_path(shard)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    bad = cli("verify", git_repo.path, "--json")
    assert bad.returncode == 7
    kinds = {(p["kind"], p["name"]) for p in json.loads(bad.stdout)["problems"]}
    assert ("corrupt_object", shard) in kinds
    path.unlink()
    gone = cli("verify", git_repo.path, "--json")
    assert gone.returncode == 7
    assert any(p["kind"] == "dangling_shard" and p["name"] == shard
               for p in json.loads(gone.stdout)["problems"])


def test_gc_keeps_what_kept_refs_need(git_repo, cli):
    main, topic = _setup(git_repo, cli)
    store = Store(git_repo.path / ".codeagent")
    before = set(store.iter_objects())
    dry = json.loads(cli("gc", git_repo.path, "--keep-refs", "heads/main", "--dry-run", "--json",
                         check=True).stdout)
    assert set(store.iter_objects()) == before and dry["objects_deleted"] >= 2
    report = json.loads(cli("gc", git_repo.path, "--keep-refs", "heads/main", "--json", check=True).stdout)
    assert report["kept_refs"] == ["heads/main"]
    assert store.list_refs() == {"heads/main": main["manifest_id"]}
    assert topic["manifest_id"] not in set(store.iter_objects())
    assert cli("verify", git_repo.path).returncode == 0
    again = json.loads(cli("build", git_repo.path, "--ref", "main", "--json", check=True).stdout)
    assert again["changed"] is False
