"""A store that repairs itself where the source is at hand: lost shards are parsed again, a
damaged assembly is assembled again, and the build says what it mended."""

from __future__ import annotations

import json

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
    assert "repaired: 1 files whose shards were missing from the store were parsed again (b.py)" in proc.stdout
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
