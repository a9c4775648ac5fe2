"""`publish --score N`: search quality measured on the published commit's own history, recorded
on the remote beside the index, brought by `sync`, shown by `status` (real git, real remote)."""

from __future__ import annotations

import json

import pytest

from codeagent.store.scores import parse_scores
from repo_helpers import GitRepo

PARSER = 'def parse_config(text):\n    """Read key value pairs."""\n    return dict(l.split("=", 1) for l in text.splitlines())\n'
NETWORK = 'def fetch_url(url, timeout=10):\n    """Download a page over http."""\n    return url\n'
METRICS = {"mrr@10", "acc@1", "acc@5"}


@pytest.fixture
def project(tmp_path, monkeypatch) -> GitRepo:
    """Four commits: an import, then three that each qualify as a commit task."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    repo = GitRepo.create(tmp_path / "repo")
    repo.write_many({"parser.py": PARSER, "network.py": NETWORK})
    repo.commit("initial import of the project")
    for path, line, message in [("parser.py", "# strip keys", "strip whitespace around configuration keys"),
                                ("network.py", "# retry", "retry downloads when the connection times out"),
                                ("parser.py", "# comments", "ignore comment lines in configuration text")]:
        repo.write(path, (repo.path / path).read_text() + line + "\n")
        repo.commit(message)
    return repo


def _json(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _status_scores(cli, repo) -> dict:
    return {r["ref"]: r["search_quality"] for r in _json(cli("status", repo, "--json"))["refs"]}


def _stored(repo, commit: str) -> bytes:
    return (repo / ".codeagent" / "scores" / f"{commit}.json").read_bytes()


def test_scores_travel_with_the_index_and_status_shows_them(project, tmp_path, cli):
    remote = tmp_path / "remote"
    head = project.repo.head.commit.hexsha
    cli("build", project.path, "--ref", "main", check=True)
    out = _json(cli("publish", project.path, "--to", remote, "--ref", "main", "--score", "2", "--json"))
    figures = out["scores"]
    assert (figures["commit"], figures["tasks"], figures["requested"], figures["dataset"]) == (head, 2, 2, "commits")
    assert set(figures["modes"]) == {"auto", "bm25-file"}
    assert all(set(m) == METRICS and all(0 <= v <= 1 for v in m.values()) for m in figures["modes"].values())
    assert figures["codeagent_version"] and figures["date"].startswith("20")
    assert json.loads((remote / "scores" / f"{head}.json").read_text()) == figures
    assert (remote / "scores" / f"{head}.json").read_bytes() == _stored(project.path, head)
    assert _status_scores(cli, project.path) == {"heads/main": figures}

    clone = tmp_path / "clone"
    project.repo.git.clone(str(project.path), str(clone))
    cli("sync", clone, "--from", remote, "--ref", "main", check=True)
    assert _status_scores(cli, clone) == {"heads/main": figures}
    text = cli("status", clone, check=True).stdout
    auto = figures["modes"]["auto"]["mrr@10"]
    assert f"search quality on its own history: MRR@10 {auto:.2f} (bm25 " in text
    assert f"; 2 tasks at {head[:12]}" in text


def test_the_history_scored_stops_at_the_published_commit(project, tmp_path, cli):
    """Published one commit back, only the two tasks below it exist: never the newest one."""
    older = project.repo.head.commit.parents[0].hexsha
    project.repo.git.branch("older", older)
    cli("build", project.path, "--ref", "older", check=True)
    out = _json(cli("publish", project.path, "--to", tmp_path / "remote", "--ref", "older",
                    "--score", "5", "--json"))
    assert (out["scores"]["commit"], out["scores"]["tasks"], out["scores"]["requested"]) == (older, 2, 5)


def test_without_the_option_there_are_no_figures(project, tmp_path, cli):
    remote = tmp_path / "remote"
    cli("build", project.path, "--ref", "main", check=True)
    out = _json(cli("publish", project.path, "--to", remote, "--ref", "main", "--json"))
    assert "scores" not in out and not (remote / "scores").exists()
    clone = tmp_path / "clone"
    project.repo.git.clone(str(project.path), str(clone))
    cli("sync", clone, "--from", remote, "--ref", "main", check=True)
    assert _status_scores(cli, clone) == {"heads/main": None}
    assert "search quality" not in cli("status", clone, check=True).stdout


def test_no_task_or_a_failing_evaluation_still_publishes_the_index(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    repo = GitRepo.create(tmp_path / "repo")
    repo.write("parser.py", PARSER)
    head = repo.commit("initial import of the project")
    cli("build", repo.path, "--ref", "main", check=True)
    remote = tmp_path / "remote"
    proc = cli("publish", repo.path, "--to", remote, "--ref", "main", "--score", "3", "--json")
    out = _json(proc)
    assert out["scores"] is None and "no commit in the history of" in out["scores_error"]
    assert "search quality not recorded" in proc.stderr
    assert out["refs"][0]["commit"] == head and (remote / "refs" / "heads" / "main").exists()

    (tmp_path / "not-a-dir").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-a-dir"))
    repo.write("parser.py", PARSER + "# keys\n")
    repo.commit("strip whitespace around configuration keys")
    cli("build", repo.path, "--ref", "main", check=True)
    out = _json(cli("publish", repo.path, "--to", remote, "--ref", "main", "--score", "3", "--json"))
    assert out["scores"] is None and out["scores_error"].startswith("the evaluation failed")
    assert (remote / "refs" / "heads" / "main").read_text().strip() == out["refs"][0]["manifest_id"]
    assert _status_scores(cli, repo.path) == {"heads/main": None}


def test_a_count_below_one_is_refused_before_anything_moves(project, tmp_path, cli):
    cli("build", project.path, "--ref", "main", check=True)
    proc = cli("publish", project.path, "--to", tmp_path / "remote", "--score", "0")
    assert proc.returncode == 2 and "--score" in proc.stderr and not (tmp_path / "remote").exists()


def test_a_scores_document_for_another_commit_is_not_taken():
    doc = json.dumps({"commit": "a" * 40, "modes": {}}).encode()
    assert parse_scores(doc, "a" * 40) == {"commit": "a" * 40, "modes": {}}
    assert parse_scores(doc, "b" * 40) is None
    assert parse_scores(b"not json", "a" * 40) is None and parse_scores(None, "a" * 40) is None


def test_publish_and_sync_move_the_recorded_bytes_as_they_are(project, tmp_path, cli):
    """Figures are serialised once, when measured: a document recorded in another layout (an
    older writer's, compact) reaches the remote and the synced store byte for byte."""
    remote, head = tmp_path / "remote", project.repo.head.commit.hexsha
    cli("build", project.path, "--ref", "main", check=True)
    doc = {"commit": head, "modes": {"auto": {"mrr@10": 0.1 + 0.2}}, "tasks": 1, "note": "caf\u00e9"}
    recorded = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    (project.path / ".codeagent" / "scores").mkdir()
    (project.path / ".codeagent" / "scores" / f"{head}.json").write_bytes(recorded)
    cli("publish", project.path, "--to", remote, "--ref", "main", check=True)
    assert (remote / "scores" / f"{head}.json").read_bytes() == recorded
    clone = tmp_path / "clone"
    project.repo.git.clone(str(project.path), str(clone))
    cli("sync", clone, "--from", remote, "--ref", "main", check=True)
    assert _stored(clone, head) == recorded
    assert _status_scores(cli, clone) == {"heads/main": doc}
