"""Co-change (query/cochange.py): the pure score over commit records, and the git adapter on a
real repository (bounded, never past the commit it starts from)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.query.cochange import CommitRecord, cochange_scores, git_commit_records

HISTORY = [  # newest first
    CommitRecord("c5", 5, ("src/a.py", "tests/test_a.py")),
    CommitRecord("c4", 4, ("src/a.py", "tests/test_a.py", "README.md")),
    CommitRecord("c3", 3, ("src/a.py",)),
    CommitRecord("c2", 2, ("src/b.py", "tests/test_b.py")),
    CommitRecord("c1", 1, ("src/a.py", "tests/test_b.py")),
]


def test_files_that_change_with_a_path_rank_by_evidence_and_confidence() -> None:
    out = {c.path: c for c in cochange_scores(HISTORY, ["src/a.py"])}
    assert list(out) == ["tests/test_a.py", "tests/test_b.py", "README.md"]
    a = out["tests/test_a.py"]
    assert (a.commits, a.with_path) == (2, "src/a.py")
    # support 1 + 1/2 = 1.5 -> 1.5 / 2.5; confidence 2 of the 4 commits touching src/a.py
    assert abs(a.score - 1.5 / 2.5 * 2 / 4) < 1e-9
    assert "src/a.py" not in out and "src/b.py" not in out


def test_huge_commits_and_commits_past_the_bound_count_for_nothing() -> None:
    huge = CommitRecord("h", 9, ("src/a.py", *(f"tests/test_{i}.py" for i in range(60))))
    assert cochange_scores([huge, *HISTORY], ["src/a.py"]) == cochange_scores(HISTORY, ["src/a.py"])
    assert cochange_scores(HISTORY, ["src/a.py"], max_commits=2) == cochange_scores(HISTORY[:2], ["src/a.py"])
    assert [c.path for c in cochange_scores(HISTORY, ["src/a.py"], max_commits=2)] == ["tests/test_a.py", "README.md"]


PATHS = st.sampled_from([f"f{i}" for i in range(8)])
RECORDS = st.lists(st.builds(CommitRecord, st.text("abc", min_size=1, max_size=3), st.integers(0, 9),
                             st.lists(PATHS, min_size=1, max_size=6, unique=True).map(tuple)), max_size=25)


@settings(max_examples=150, deadline=None)
@given(RECORDS, st.lists(PATHS, min_size=1, max_size=3, unique=True), st.integers(1, 30), st.integers(1, 6))
def test_scores_are_bounded_sorted_and_never_list_the_changed_paths(commits, paths, n, max_files) -> None:
    out = cochange_scores(commits, paths, max_commits=n, max_files=max_files)
    assert all(0 < c.score <= 1 and c.path not in paths and c.with_path in paths for c in out)
    assert [(-c.score, c.path) for c in out] == sorted((-c.score, c.path) for c in out)
    counted = [c for c in commits[:n] if len(c.paths) <= max_files and set(c.paths) & set(paths)]
    assert {c.path for c in out} == {p for c in counted for p in c.paths} - set(paths)


def test_git_records_are_bounded_and_never_past_the_start(git_repo) -> None:
    shas = []
    for i, files in enumerate([{"a.py": "1", "t/test_a.py": "1"}, {"b.py": "2"}, {"a.py": "3", "c d.py": "x"}]):
        git_repo.write_many(files)
        shas.append(git_repo.commit(f"c{i}"))
    records = git_commit_records(git_repo.path, shas[1])
    assert [r.sha for r in records] == [shas[1], shas[0]]  # the third commit is past the start
    assert records[1].paths == ("a.py", "t/test_a.py") and records[0].paths == ("b.py",)
    newest = git_commit_records(git_repo.path, shas[2], max_commits=1)
    assert [r.sha for r in newest] == [shas[2]] and newest[0].paths == ("a.py", "c d.py")
    assert git_commit_records(git_repo.path, "0" * 40) == []


def test_test_names_match_the_module_they_are_named_after() -> None:
    from codeagent.query.impact_tests import naming_score, stem_names, stem_of_test

    cases = {"tests/test_compat.py": "compat", "pkg/foo_test.go": "foo", "src/FooTest.java": "foo",
             "web/foo.spec.ts": "foo", "test/TestsBar.kt": "bar", "tests/test_latest.py": "latest"}
    assert {p: stem_of_test(p) for p in cases} == cases
    assert stem_names("src/attr/_compat.py") == {"compat"} and stem_names("pkg/util/__init__.py") == {"util"}
    assert naming_score("tests/test_compat.py", stem_names("src/attr/_compat.py")) == 1.0
    assert naming_score("tests/test_compat_more.py", stem_names("src/attr/_compat.py")) == 0.5
    assert naming_score("tests/test_make.py", stem_names("src/attr/_compat.py")) == 0.0


def test_proximity_is_the_directory_a_test_shares_with_the_change() -> None:
    from codeagent.query.impact_tests import proximity

    assert proximity("pkg/dns/resolver_test.go", ["pkg/dns/resolver.go"]) == 1.0
    mirror = "okhttp/src/commonTest/kotlin/okhttp3/internal/dns/CacheTest.kt"
    assert proximity(mirror, ["okhttp/src/commonMain/kotlin/okhttp3/internal/dns/Cache.kt"]) == 1.0
    assert proximity(mirror, ["okhttp/src/commonMain/kotlin/okhttp3/internal/tls/Cert.kt"]) == 0.5
    assert proximity("tests/test_make.py", ["src/attr/_make.py"]) == 0.0
    assert proximity("tests/test_make.py", []) == 0.0
