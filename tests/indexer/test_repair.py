"""A store that repairs itself where the source is at hand: lost shards are parsed again, a
damaged assembly is assembled again, and the build says what it mended."""

from __future__ import annotations

import json

import pytest

from codeagent import format as fmt
from codeagent.format.manifest import load_manifest
from codeagent.store import Store


def _built(git_repo, cli, *args: str) -> tuple[Store, dict]:
    git_repo.write_many({"a.py": "def alpha():\n    return 1\n", "b.py": "def beta():\n    return 2\n",
                         "c.py": "def gamma():\n    return 3\n"})
    git_repo.commit("init")
    result = json.loads(cli("build", git_repo.path, *args, "--json", check=True).stdout)
    return Store(git_repo.path / ".codeagent"), result


def test_a_deleted_shard_is_parsed_again_and_verify_passes(git_repo, cli):
    store, first = _built(git_repo, cli, "--ref", "main")
    manifest = load_manifest(store, first["manifest_id"])
    lost = next(f for f in manifest.files if f.path == "b.py")
    store.object_path(lost.shard).unlink()
    assert cli("verify", git_repo.path).returncode == 7
    status = json.loads(cli("status", git_repo.path, "--json", check=True).stdout)
    assert status["refs"][0]["freshness"]["state"] == "damaged"
    assert "1 objects it names are missing" in status["refs"][0]["freshness"]["detail"]

    proc = cli("build", git_repo.path, "--ref", "main", check=True)
    assert "repaired: 1 files whose shards were missing from the store or damaged were parsed again (b.py)" in proc.stdout
    assert store.has(lost.shard)
    assert cli("verify", git_repo.path).returncode == 0
    again = json.loads(cli("build", git_repo.path, "--ref", "main", "--json", check=True).stdout)
    assert again["repairs"] == [] and again["changed"] is False
    found = cli("search", "beta", "--repo", git_repo.path, "--ref", "main", check=True)
    assert "b.py" in found.stdout


def test_a_deleted_manifest_is_rebuilt_from_the_sources(git_repo, cli):
    store, first = _built(git_repo, cli, "--ref", "main")
    store.object_path(first["manifest_id"]).unlink()
    assert cli("verify", git_repo.path).returncode == 7
    rebuilt = json.loads(cli("build", git_repo.path, "--ref", "main", "--json", check=True).stdout)
    assert any("previous manifest" in r and "could not be read" in r for r in rebuilt["repairs"])
    assert rebuilt["manifest_id"] == first["manifest_id"]
    assert cli("verify", git_repo.path).returncode == 0


def test_a_damaged_database_is_not_fresh_and_is_assembled_again(git_repo, cli):
    store, first = _built(git_repo, cli)
    db = store.assembled_dir(first["manifest_id"]) / fmt.DUCKDB_FILE
    data = bytearray(db.read_bytes())
    data[len(data) // 2] ^= 0xFF
    db.write_bytes(bytes(data))
    status = json.loads(cli("status", git_repo.path, "--json", check=True).stdout)
    assert status["worktree"]["state"] == "damaged"
    assert "assembled index is damaged" in status["worktree"]["detail"]
    assert "[damaged]" in cli("status", git_repo.path, check=True).stdout

    proc = cli("build", git_repo.path, check=True)
    assert "repaired: the assembled index was damaged" in proc.stdout
    assert not store.assembly_problems(first["manifest_id"])
    assert json.loads(cli("status", git_repo.path, "--json", check=True).stdout)["worktree"]["state"] == "fresh"
    assert "gamma" in cli("search", "gamma", "--repo", git_repo.path, check=True).stdout


def _flip(path, n: int = 4) -> None:
    """Flip `n` bytes in the middle of a file (issue 45: "flip 4 bytes in one object")."""
    data = bytearray(path.read_bytes())
    for i in range(n):
        data[len(data) // 2 + i] ^= 0xFF
    path.write_bytes(bytes(data))


def _shard_of(store: Store, manifest_id: str, path: str) -> str:
    return next(f.shard for f in load_manifest(store, manifest_id).files if f.path == path)


def test_a_damaged_shard_is_named_by_verify_not_fresh_in_status_and_repaired(git_repo, cli):
    store, first = _built(git_repo, cli)
    shard = _shard_of(store, first["manifest_id"], "b.py")
    _flip(store.object_path(shard))
    bad = cli("verify", git_repo.path)
    assert bad.returncode == 7 and shard in bad.stdout and "run `codeagent repair`" in bad.stdout
    assert "the shard of b.py (worktree)" in bad.stdout
    assert json.loads(cli("verify", git_repo.path, "--json").stdout)["hint"].startswith("run `codeagent repair`")
    status = json.loads(cli("status", git_repo.path, "--json", check=True).stdout)
    assert status["worktree"]["state"] == "damaged", status["worktree"]
    assert "damaged" in status["worktree"]["detail"] and "codeagent repair" in status["worktree"]["detail"]

    fixed = json.loads(cli("repair", git_repo.path, "--json", check=True).stdout)
    assert fixed["ok"] and [(r["kind"], r["name"]) for r in fixed["repaired"]] == [("shard", shard)]
    assert "b.py" in fixed["repaired"][0]["how"]
    assert cli("verify", git_repo.path).returncode == 0
    assert json.loads(cli("status", git_repo.path, "--json", check=True).stdout)["worktree"]["state"] == "fresh"
    again = cli("repair", git_repo.path, check=True)
    assert "nothing to repair" in again.stdout


@pytest.mark.parametrize("consolidate", [False, True])
def test_a_build_over_a_damaged_shard_repairs_it_and_does_not_say_nothing_changed(git_repo, cli, consolidate):
    store, first = _built(git_repo, cli)
    shard = _shard_of(store, first["manifest_id"], "c.py")
    _flip(store.object_path(shard))
    proc = cli("build", git_repo.path, *(["--consolidate"] if consolidate else []), check=True)
    assert "nothing changed" not in proc.stdout and "repaired" in proc.stdout, proc.stdout
    assert "(c.py)" in proc.stdout
    assert cli("verify", git_repo.path).returncode == 0


def test_repair_re_creates_a_kept_refs_shard_from_the_committed_blob_and_its_database(git_repo, cli):
    """The tag's file has changed in the work tree since: its shard comes from the blob at the
    tag's commit; a kept ref's damaged DuckDB file is assembled again from its manifest."""
    store, tag = _built(git_repo, cli, "--ref", "main")
    git_repo.repo.git.tag("v1")
    tag = json.loads(cli("build", git_repo.path, "--ref", "v1", "--json", check=True).stdout)
    git_repo.write("b.py", "def beta():\n    return 20\n")
    cli("build", git_repo.path, check=True)
    shard = _shard_of(store, tag["manifest_id"], "b.py")
    _flip(store.object_path(shard))
    _flip(store.assembled_dir(tag["manifest_id"]) / fmt.DUCKDB_FILE)
    assert cli("verify", git_repo.path).returncode == 7
    fixed = json.loads(cli("repair", git_repo.path, "--json", check=True).stdout)
    assert {(r["kind"], r["name"]) for r in fixed["repaired"]} == {("shard", shard), ("assembly", tag["manifest_id"])}
    assert cli("verify", git_repo.path).returncode == 0
    assert "b.py" in cli("search", "beta", "--repo", git_repo.path, "--ref", "v1", check=True).stdout


def test_repair_builds_a_damaged_manifest_again(git_repo, cli):
    store, first = _built(git_repo, cli, "--ref", "main")
    _flip(store.object_path(first["manifest_id"]))
    status = json.loads(cli("status", git_repo.path, "--json", check=True).stdout)
    assert status["refs"][0]["freshness"]["state"] == "damaged"
    fixed = json.loads(cli("repair", git_repo.path, "--json", check=True).stdout)
    assert [(r["kind"], r["name"]) for r in fixed["repaired"]] == [("manifest", first["manifest_id"])]
    assert store.read_ref("heads/main") == first["manifest_id"]
    assert cli("verify", git_repo.path).returncode == 0


def test_what_repair_cannot_re_create_is_named_with_exit_7(git_repo, cli):
    store, first = _built(git_repo, cli)
    git_repo.write("scratch.py", "def scratch():\n    return 9\n")  # never committed
    built = json.loads(cli("build", git_repo.path, "--json", check=True).stdout)
    shard = _shard_of(store, built["manifest_id"], "scratch.py")
    _flip(store.object_path(shard))
    git_repo.remove("scratch.py")
    proc = cli("repair", git_repo.path, "--json")
    assert proc.returncode == 7
    out = json.loads(proc.stdout)
    assert [(r["name"], "scratch.py" in r["detail"]) for r in out["unrepaired"]] == [(shard, True)]
