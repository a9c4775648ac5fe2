"""Partitioned builds: four processes each parse a slice into one directory remote, any machine
joins them into the same manifest (byte-identical id) and the same answers as a one-machine
build; a partition killed midway re-runs without parsing again what it had uploaded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codeagent.store import Store

FILES = {f"pkg/m{i:03d}.py": f"def f{i}(x):\n    return helper{i % 9}(x) + {i}\n\n\nclass C{i}:\n    pass\n"
         for i in range(200)}
FILES["pkg/helpers.py"] = "".join(f"def helper{i}(x):\n    return x * {i}\n\n" for i in range(9))
FILES["pkg/dup_a.py"] = FILES["pkg/dup_b.py"] = "def same():\n    return 'same bytes, one parse'\n"
FILES["README.md"] = "# demo\n\n## Usage\n\nCall `f1`.\n"
FILES["logo.png"] = "\x89PNG\r\n\x1a\n\0\0"


def _partition(repo: Path, i: int, n: int, remote: Path, store: Path, env: dict | None = None):
    return subprocess.Popen([sys.executable, "-m", "codeagent", "build", str(repo), "--ref", "main",
                             "--partition", f"{i}/{n}", "--to", str(remote), "--store", str(store), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CODEAGENT_DAEMON": "0", **(env or {})})


def _finish(proc) -> dict:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    return json.loads(out)


def _answers(cli, repo, store: Path) -> list:
    out = []
    for query in ("helper3", "f42", "same bytes", "Usage"):
        found = json.loads(cli("search", query, "--repo", repo, "--store", store, "--json", check=True).stdout)
        out.append([(h["path"], h.get("qualified_name"), h.get("line_start")) for h in found["results"]])
    callers = cli("callers", "helper3", "--repo", repo, "--store", store, check=True).stdout
    return out + [sorted(callers.splitlines())]


@pytest.fixture
def repo(git_repo):
    git_repo.write_many(FILES)
    git_repo.commit("init")
    return git_repo.path


def test_four_partitions_join_into_the_one_machine_index(repo, cli, tmp_path):
    remote = tmp_path / "remote"
    procs = [_partition(repo, i, 4, remote, tmp_path / f"machine{i}") for i in range(4)]
    parts = [_finish(p) for p in procs]
    assert sum(p["files"] for p in parts) == len(FILES)
    assert sum(p["files_parsed"] for p in parts) == len(FILES) - 1  # dup_a and dup_b: one parse
    joined = json.loads(cli("build", repo, "--ref", "main", "--from-partitions", remote,
                            "--store", tmp_path / "joiner", "--json", check=True).stdout)
    single = json.loads(cli("build", repo, "--ref", "main", "--store", tmp_path / "single", "--json",
                            check=True).stdout)
    assert joined["manifest_id"] == single["manifest_id"]
    assert Store(tmp_path / "joiner").get(joined["manifest_id"]) == Store(tmp_path / "single").get(single["manifest_id"])
    assert joined["files_skipped"] == single["files_skipped"]
    assert _answers(cli, repo, tmp_path / "joiner") == _answers(cli, repo, tmp_path / "single")
    assert cli("verify", repo, "--store", tmp_path / "joiner").returncode == 0
    again = json.loads(cli("build", repo, "--ref", "main", "--from-partitions", remote,
                           "--store", tmp_path / "joiner", "--json", check=True).stdout)
    assert again["changed"] is False


def test_artifacts_of_separate_remotes_merged_join_as_one(repo, cli, tmp_path):
    """The GitHub Actions example: each machine uploads its own directory remote as an
    artifact, the join job downloads them into one directory."""
    procs = [_partition(repo, i, 2, tmp_path / f"artifact{i}", tmp_path / f"machine{i}") for i in range(2)]
    for proc in procs:
        _finish(proc)
    merged = tmp_path / "merged"
    for i in range(2):
        shutil.copytree(tmp_path / f"artifact{i}", merged, dirs_exist_ok=True)
    joined = json.loads(cli("build", repo, "--ref", "main", "--from-partitions", merged,
                            "--store", tmp_path / "joiner", "--json", check=True).stdout)
    single = json.loads(cli("build", repo, "--ref", "main", "--store", tmp_path / "single", "--json",
                            check=True).stdout)
    assert joined["manifest_id"] == single["manifest_id"]


def test_a_partition_killed_midway_resumes_on_another_machine(repo, cli, tmp_path):
    probe = _partition(repo, 0, 2, tmp_path / "probe-remote", tmp_path / "probe",
                       {"CODEAGENT_TEST_STEPS": str(tmp_path / "steps.log")})
    whole = _finish(probe)
    steps = (tmp_path / "steps.log").read_text().splitlines()
    assert whole["files_parsed"] > 64 and "checkpoint 1" in steps  # two checkpoints at least
    remote = tmp_path / "remote"
    killed = _partition(repo, 0, 2, remote, tmp_path / "first", {"CODEAGENT_TEST_KILL_AT": str(steps.index("checkpoint 0") + 2)})
    killed.communicate(timeout=300)
    assert killed.returncode == -9
    assert len(list(remote.glob("partitions/*/2/0.parts/*"))) == 1 and not list(remote.glob("partitions/*/2/0")), \
        "killed after its first checkpoint, before its result"
    resumed = _finish(_partition(repo, 0, 2, remote, tmp_path / "second"))
    assert resumed["files_resumed"] == 64
    assert resumed["files_parsed"] == whole["files_parsed"] - 64
    assert resumed["partition_id"] == whole["partition_id"]
    _finish(_partition(repo, 1, 2, remote, tmp_path / "third"))
    joined = json.loads(cli("build", repo, "--ref", "main", "--from-partitions", remote,
                            "--store", tmp_path / "joiner", "--json", check=True).stdout)
    single = json.loads(cli("build", repo, "--ref", "main", "--store", tmp_path / "single", "--json",
                            check=True).stdout)
    assert joined["manifest_id"] == single["manifest_id"]


def test_a_missing_partition_is_named_and_nothing_is_indexed(repo, cli, tmp_path):
    remote = tmp_path / "remote"
    for i in (0, 2):
        _finish(_partition(repo, i, 3, remote, tmp_path / f"m{i}"))
    proc = cli("build", repo, "--ref", "main", "--from-partitions", remote, "--store", tmp_path / "joiner")
    assert proc.returncode == 14, proc.stderr
    assert "missing partitions: 1/3" in proc.stderr and "Traceback" not in proc.stderr
    assert Store(tmp_path / "joiner").list_refs() == {}


@pytest.mark.parametrize("args, message", [
    (("--partition", "0/2"), "--partition and --to go together"),
    (("--partition", "2/2", "--to", "R"), "is not I/N with 0 <= I < N"),
    (("--from-partitions", "R", "--partition", "0/2"), "--from-partitions excludes"),
])
def test_partition_arguments_are_checked(repo, cli, tmp_path, args, message):
    proc = cli("build", repo, "--ref", "main", *(str(tmp_path) if a == "R" else a for a in args))
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
