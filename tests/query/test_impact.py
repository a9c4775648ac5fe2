"""`codeagent impact`: changed symbols, dependents, ranked tests and risk, on small real repos
built in each test (base: `build --ref main`; head: the work tree or another commit)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from codeagent.cli import main
from codeagent.indexer.build import BuildOptions, build
from codeagent.query.impact import ImpactOptions, impact
from repo_helpers import past_racy_window

CORE = """\
LIMIT = 10


def fetch(x):
    return x + LIMIT


def compute(x):
    return fetch(x) * 2


class Base:
    def run(self):
        return 1

    def stop(self):
        return 0


class Child(Base):
    def run(self):
        return 2
"""
API = """\
from pkg.core import compute, fetch


def entry(v):
    return compute(v)


def load(v):
    return fetch(v) + 1
"""
TEST_API = """\
from pkg.api import entry


def test_entry():
    assert entry(1) == 22
"""
TEST_OTHER = """\
def test_nothing():
    assert True
"""


def _repo(git_repo):
    git_repo.write_many({"pkg/__init__.py": "", "pkg/core.py": CORE, "pkg/api.py": API,
                         "tests/test_api.py": TEST_API, "tests/test_other.py": TEST_OTHER})
    git_repo.commit("one")
    build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    return git_repo


def _worktree(git_repo, files: dict[str, str], **kw) -> dict:
    git_repo.write_many(files)
    past_racy_window()
    build(BuildOptions(repo=git_repo.path, jobs=1))
    return impact(git_repo.path, None, None, options=ImpactOptions(**kw))


def _changed(data: dict) -> dict[str, dict]:
    return {c["name"]: c for c in data["changed"]}


def test_a_renamed_function_lists_its_callers(git_repo) -> None:
    _repo(git_repo)
    data = _worktree(git_repo, {"pkg/core.py": CORE.replace("def fetch(", "def fetch_one(")})
    changed = _changed(data)
    assert changed["fetch_one"]["change"] == "renamed" and changed["fetch_one"]["old_name"] == "fetch"
    assert changed["fetch_one"]["breaking"] is True
    callers = {d["name"]: d for d in data["dependents"] if d["edge"] == "calls" and d["depth"] == 1}
    assert {"pkg.core.compute", "pkg.api.load"} <= set(callers)
    assert all(d["flag"] == "renamed" and d["changed"] == "fetch_one" for d in callers.values())
    assert callers["pkg.api.load"]["confidence"] == "exact"
    assert callers["pkg.api.load"]["path_back"] == ["pkg.api.load", "fetch_one"]
    assert callers["pkg.api.load"]["at"] == 9  # the line of the call, not of `def load`
    # two hops out: entry calls compute, which called fetch
    entry = next(d for d in data["dependents"] if d["name"] == "pkg.api.entry")
    assert entry["depth"] == 2 and entry["path_back"] == ["pkg.api.entry", "pkg.core.compute", "fetch_one"]
    assert "fetch_one" in data["risk"]["breaking_with_dependents"] and data["risk"]["level"] == "high"


def test_a_removed_method_flags_the_subclass_override(git_repo) -> None:
    _repo(git_repo)
    data = _worktree(git_repo, {"pkg/core.py": CORE.replace("    def run(self):\n        return 1\n\n", "")})
    changed = _changed(data)
    assert changed["Base.run"]["change"] == "removed" and changed["Base.run"]["breaking"]
    assert "Base" not in changed  # only its member changed: the class's users are not walked
    override = [d for d in data["dependents"] if d["name"] == "pkg.core.Child.run"]
    assert override and override[0]["edge"] == "overrides" and override[0]["flag"] == "removed"
    assert override[0]["depth"] == 1


def test_a_test_two_calls_away_ranks_above_an_unrelated_test(git_repo) -> None:
    _repo(git_repo)
    data = _worktree(git_repo, {"pkg/core.py": CORE.replace("return fetch(x) * 2", "return fetch(x) * 3")},
                     history=0)
    assert [c["name"] for c in data["changed"]] == ["compute"]
    tests = [t["path"] for t in data["tests"]]
    assert tests[0] == "tests/test_api.py"
    assert "tests/test_other.py" not in tests  # no signal at all without history
    top = data["tests"][0]
    assert top["functions"][0]["name"] == "tests.test_api.test_entry" and top["functions"][0]["depth"] == 2
    assert "reaches the change in 2 edges" in top["reason"] and top["score"] > 0
    assert top["signals"]["focus"] == 1.0 and top["signals"]["graph"] == 1.0
    assert data["risk"]["untested"] == []


def test_a_change_outside_any_symbol_is_the_modules(git_repo) -> None:
    _repo(git_repo)
    data = _worktree(git_repo, {"pkg/core.py": "import os\n" + CORE + "\nprint(os.sep)\n"}, history=0)
    files = [c for c in data["changed"] if c["kind"] == "file"]
    assert len(data["changed"]) == 1 and files[0]["name"] == "pkg.core" and files[0]["change"] == "modified"
    assert (files[0]["line_start"], files[0]["line_end"]) == (1, CORE.count("\n") + 3)
    # the module's importers depend on it
    assert any(d["path"] == "pkg/api.py" and d["edge"] == "imports" for d in data["dependents"])


def test_untested_public_change_is_in_the_risk(git_repo) -> None:
    _repo(git_repo)
    data = _worktree(git_repo, {"pkg/core.py": CORE.replace("return 0", "return -1")}, history=0)
    assert [c["name"] for c in data["changed"]] == ["Base.stop"]
    assert data["risk"]["untested"] == ["Base.stop"] and data["tests"] == []


def test_range_between_two_commits_on_the_cli(git_repo) -> None:
    _repo(git_repo)
    build(BuildOptions(repo=git_repo.path, rev=git_repo.repo.head.commit.hexsha, jobs=1))  # kept by its sha
    git_repo.write("pkg/api.py", API.replace("return compute(v)", "return compute(v) + 0"))
    git_repo.write("tests/test_api.py", TEST_API + "\n\ndef test_more():\n    assert entry(2)\n")
    git_repo.commit("two")
    build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    runner = CliRunner()
    res = runner.invoke(main, ["impact", "HEAD~1..HEAD", "--repo", str(git_repo.path), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert {c["name"] for c in data["changed"]} >= {"entry", "test_more"}
    assert data["tests"][0]["path"] == "tests/test_api.py" and "changed by this diff" in data["tests"][0]["reason"]
    human = runner.invoke(main, ["impact", "HEAD~1..HEAD", "--repo", str(git_repo.path)])
    assert human.exit_code == 0 and "body_changed" in human.output and "tests/test_api.py" in human.output


def test_bad_ranges_and_missing_indexes_exit_with_their_codes(git_repo) -> None:
    _repo(git_repo)
    runner = CliRunner()
    bad = runner.invoke(main, ["impact", "main..", "--repo", str(git_repo.path)])
    assert bad.exit_code == 2 and "BASE..HEAD" in bad.output
    both = runner.invoke(main, ["impact", "main", "--worktree", "--repo", str(git_repo.path)])
    assert both.exit_code == 2
    missing = runner.invoke(main, ["impact", "main..nosuchref", "--repo", str(git_repo.path), "--json"])
    assert missing.exit_code in (4, 5) and json.loads(missing.stdout)["error"]["code"] in ("index_missing", "not_found")


def test_a_name_matched_call_of_a_method_every_library_has_is_not_listed(git_repo) -> None:
    sink = "class Sink:\n    def flush(self):\n        return 1\n\n    def drain_all(self):\n        return 2\n"
    use = "def save(f):\n    f.flush()\n\n\ndef empty(f):\n    f.drain_all()\n"
    git_repo.write_many({"pkg/__init__.py": "", "pkg/sink.py": sink, "pkg/use.py": use})
    git_repo.commit("one")
    build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    edited = sink.replace("return 1", "return 3").replace("return 2", "return 4")
    data = _worktree(git_repo, {"pkg/sink.py": edited}, history=0)
    assert {c["name"] for c in data["changed"]} == {"Sink.flush", "Sink.drain_all"}
    listed = {d["name"]: d for d in data["dependents"]}
    # `f.drain_all()` can only mean the one drain_all; `f.flush()` is any file's, stream's...
    assert "pkg.use.empty" in listed and listed["pkg.use.empty"]["confidence"] == "name"
    assert "pkg.use.save" not in listed
