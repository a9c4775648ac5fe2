"""status, verify and gc through the real CLI."""

from __future__ import annotations

import json

import pytest

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


def _spelling(spec: str, git_repo, main: dict) -> str:
    return {"sha": git_repo.repo.git.rev_parse("main"), "short-sha": git_repo.repo.git.rev_parse("--short", "main"),
            "manifest": main["manifest_id"][:12]}.get(spec, spec)


@pytest.mark.parametrize("spec", ["main", "heads/main", "refs/heads/main", "sha", "short-sha", "manifest"])
def test_gc_keep_refs_reads_every_spelling_of_a_ref(git_repo, cli, spec):
    main, topic = _setup(git_repo, cli)
    store = Store(git_repo.path / ".codeagent")
    report = json.loads(cli("gc", git_repo.path, "--keep-refs", _spelling(spec, git_repo, main), "--json",
                            check=True).stdout)
    assert report["kept_refs"] == ["heads/main"] and report["refs_deleted"] == ["heads/topic"]
    assert store.list_refs() == {"heads/main": main["manifest_id"]}
    assert cli("verify", git_repo.path).returncode == 0


def test_gc_keep_head_keeps_the_checked_out_branch(git_repo, cli):
    main, topic = _setup(git_repo, cli)
    report = json.loads(cli("gc", git_repo.path, "--keep-refs", "HEAD", "--json", check=True).stdout)
    assert report["kept_refs"] == ["heads/topic"]
    assert Store(git_repo.path / ".codeagent").list_refs() == {"heads/topic": topic["manifest_id"]}


def test_gc_refuses_a_keep_ref_that_names_nothing(git_repo, cli):
    main, topic = _setup(git_repo, cli)
    store = Store(git_repo.path / ".codeagent")
    before = (store.list_refs(), set(store.iter_objects()))
    proc = cli("gc", git_repo.path, "--keep-refs", "main", "--keep-refs", "mian")
    assert proc.returncode == 5
    assert "--keep-refs mian names no index" in proc.stderr and "nothing was deleted" in proc.stderr
    assert "heads/main, heads/topic" in proc.stderr and "Traceback" not in proc.stderr
    assert (store.list_refs(), set(store.iter_objects())) == before


def test_gc_refuses_when_a_kept_manifest_is_unreadable(git_repo, cli):
    main, topic = _setup(git_repo, cli)
    store = Store(git_repo.path / ".codeagent")
    store.object_path(topic["manifest_id"]).write_bytes(b"not a manifest")
    before = set(store.iter_objects())
    proc = cli("gc", git_repo.path)
    assert proc.returncode == 7 and "gc cannot read the manifest of heads/topic" in proc.stderr
    assert set(store.iter_objects()) == before and set(store.list_refs()) == {"heads/main", "heads/topic"}


def test_gc_dry_run_says_what_it_would_delete(git_repo, cli):
    main, topic = _setup(git_repo, cli)
    store = Store(git_repo.path / ".codeagent")
    before = (store.list_refs(), set(store.iter_objects()))
    out = cli("gc", git_repo.path, "--keep-refs", "main", "--dry-run", check=True).stdout
    assert "would delete ref heads/topic" in out
    assert "kept 1 refs (heads/main); would delete 1 refs" in out
    assert (store.list_refs(), set(store.iter_objects())) == before


def test_build_head_then_publish_head(git_repo, cli, tmp_path):
    git_repo.write_many({"a.py": "A = 1\n"})
    git_repo.commit("init")
    built = json.loads(cli("build", git_repo.path, "--ref", "HEAD", "--json", check=True).stdout)
    assert built["ref"] == "heads/main"
    remote = tmp_path / "remote"
    proc = cli("publish", git_repo.path, "--to", remote, "--ref", "HEAD", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [r["ref"] for r in json.loads(proc.stdout)["refs"]] == ["heads/main"]
    for spec in ("HEAD", "refs/heads/main", git_repo.repo.git.rev_parse("HEAD"), built["manifest_id"][:10]):
        found = cli("search", "a.py", "--mode", "path", "--repo", git_repo.path, "--ref", spec)
        assert found.returncode == 0 and "a.py" in found.stdout, (spec, found.stderr)


def _figures(commit: str) -> dict:
    return {"commit": commit, "modes": {"auto": {"mrr@10": 0.5}}, "tasks": 1}


def test_gc_drops_the_scores_of_commits_no_kept_manifest_names(git_repo, cli):
    from codeagent.store.scores import read_scores, write_scores

    _setup(git_repo, cli)
    store = Store(git_repo.path / ".codeagent")
    main, topic = (git_repo.repo.git.rev_parse(b) for b in ("main", "topic"))
    for commit in (main, topic):
        write_scores(store, _figures(commit))
    dry = json.loads(cli("gc", git_repo.path, "--keep-refs", "main", "--dry-run", "--json", check=True).stdout)
    assert dry["scores_deleted"] == 1 and read_scores(store, topic) == _figures(topic)
    out = cli("gc", git_repo.path, "--keep-refs", "main", check=True).stdout
    assert "1 history views, 1 scores files" in out
    assert read_scores(store, main) == _figures(main) and read_scores(store, topic) is None
    assert sorted(p.name for p in (store.root / "scores").iterdir()) == [f"{main}.json"]
    again = json.loads(cli("gc", git_repo.path, "--json", check=True).stdout)
    assert again["scores_deleted"] == 0 and read_scores(store, main) == _figures(main)
    status = json.loads(cli("status", git_repo.path, "--json", check=True).stdout)
    assert [r["search_quality"] for r in status["refs"]] == [_figures(main)]
