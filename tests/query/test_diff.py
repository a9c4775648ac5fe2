"""`codeagent diff`: file and symbol changes between two manifests, on real git histories."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent import format as fmt
from codeagent.indexer.build import BuildOptions, build
from codeagent.query.diff import SymbolFacts, diff_ids, diff_manifests
from codeagent.format.manifest import FileEntry, Manifest
from codeagent.store import Store

ALPHA = "def alpha(x):\n    y = x * 2\n    return y + 1\n"
SHAPES = ("class Shape:\n    def area(self):\n        return 0\n\n"
          "class Square(Shape):\n    def __init__(self, s):\n        self.s = s\n\n"
          "    def area(self):\n        return self.s * self.s\n")


def _build(repo, rev: str = "main"):
    return build(BuildOptions(repo=repo.path, rev=rev, jobs=1))


def _diff(repo, a: str, b: str) -> dict:
    return diff_ids(Store(repo.path / ".codeagent"), a, b).to_dict()


def _names(d: dict, section: str, change: str, field: str = "qualified_name") -> list:
    return [e[field] for e in d[section][change]] if section == "symbols" else \
        [(e["old_path"], e["path"]) if e["old_path"] else e["path"] for e in d[section][change]]


def test_moved_file_parses_nothing_and_keeps_every_stable_id(git_repo) -> None:
    git_repo.write_many({"geo/shapes.py": SHAPES, "util.py": ALPHA})
    git_repo.commit("one")
    first = _build(git_repo)
    git_repo.move("geo/shapes.py", "geometry/shapes.py")
    git_repo.commit("move")
    second = _build(git_repo)
    assert second.files_parsed == 0
    d = _diff(git_repo, first.manifest_id, second.manifest_id)
    assert d["files"]["moved"] == [{"path": "geometry/shapes.py", "old_path": "geo/shapes.py",
                                    "language": "python"}]
    assert d["counts"]["files"] == {"added": 0, "removed": 0, "modified": 0, "moved": 1}
    moved = d["symbols"]["moved"]
    assert {m["qualified_name"] for m in moved} == {
        "Shape", "Shape.area", "Square", "Square.__init__", "Square.area"}
    assert all(m["stable_id"] == m["old_stable_id"] and m["line"] == m["old_line"] for m in moved)
    assert d["counts"]["symbols"]["moved"] == 5 and sum(d["counts"]["symbols"].values()) == 5


def test_renamed_function_with_same_body_is_renamed(git_repo) -> None:
    git_repo.write_many({"util.py": ALPHA + "\n\ndef user():\n    return alpha(1)\n"})
    git_repo.commit("one")
    first = _build(git_repo)
    git_repo.write("util.py", "# moved down by a comment\n" + ALPHA.replace("alpha", "beta")
                   + "\n\ndef user():\n    return beta(1)\n")
    git_repo.commit("rename")
    second = _build(git_repo)
    d = _diff(git_repo, first.manifest_id, second.manifest_id)
    [renamed] = d["symbols"]["renamed"]
    assert (renamed["old_qualified_name"], renamed["qualified_name"]) == ("alpha", "beta")
    assert (renamed["old_line"], renamed["line"]) == (1, 2)
    assert renamed["old_stable_id"] != renamed["stable_id"]
    assert _names(d, "symbols", "modified") == ["user"]
    assert d["symbols"]["added"] == [] and d["symbols"]["removed"] == []


def test_symbol_moved_between_files_and_renamed_class_members(git_repo) -> None:
    git_repo.write_many({"a.py": ALPHA + "\n\ndef stay():\n    return 1\n", "b.py": SHAPES})
    git_repo.commit("one")
    first = _build(git_repo)
    git_repo.write("a.py", "def stay():\n    return 1\n")
    git_repo.write("c.py", ALPHA)
    git_repo.write("b.py", SHAPES.replace("Square", "Box"))
    git_repo.commit("two")
    second = _build(git_repo)
    d = _diff(git_repo, first.manifest_id, second.manifest_id)
    assert [(m["qualified_name"], m["old_path"], m["path"]) for m in d["symbols"]["moved"]] == [
        ("alpha", "a.py", "c.py")]
    assert sorted((r["old_qualified_name"], r["qualified_name"]) for r in d["symbols"]["renamed"]) == [
        ("Square", "Box"), ("Square.__init__", "Box.__init__"), ("Square.area", "Box.area")]
    assert _names(d, "files", "added") == ["c.py"]
    assert sorted(_names(d, "files", "modified")) == ["a.py", "b.py"]


def test_history_of_six_commits_diffs_match_what_each_commit_did(git_repo) -> None:
    steps = [
        ("create", lambda r: r.write_many({"app/core.py": ALPHA, "app/shapes.py": SHAPES})),
        ("add fn", lambda r: r.write("app/core.py", ALPHA + "\n\ndef gamma():\n    return 3\n")),
        ("edit body", lambda r: r.write("app/core.py", ALPHA + "\n\ndef gamma():\n    return 4\n")),
        ("rename", lambda r: r.write("app/core.py", ALPHA + "\n\ndef delta():\n    return 4\n")),
        ("move", lambda r: r.move("app/shapes.py", "lib/shapes.py")),
        ("delete", lambda r: (r.remove("app/core.py"), r.write("app/new.py", "X = 1\n"))),
    ]
    ids = []
    for message, action in steps:
        action(git_repo)
        sha = git_repo.commit(message)
        ids.append(_build(git_repo, sha).manifest_id)
    diffs = [_diff(git_repo, a, b) for a, b in zip(ids, ids[1:])]
    c = [d["counts"] for d in diffs]
    assert _names(diffs[0], "symbols", "added") == ["gamma"] and c[0]["files"]["modified"] == 1
    assert _names(diffs[1], "symbols", "modified") == ["gamma"]
    assert [(r["old_qualified_name"], r["qualified_name"]) for r in diffs[2]["symbols"]["renamed"]] == [
        ("gamma", "delta")]
    assert _names(diffs[3], "files", "moved") == [("app/shapes.py", "lib/shapes.py")]
    assert c[3]["symbols"]["moved"] == 5 and c[3]["symbols"]["added"] == 0
    assert _names(diffs[4], "files", "removed") == ["app/core.py"]
    assert _names(diffs[4], "files", "added") == ["app/new.py"]
    assert sorted(_names(diffs[4], "symbols", "removed", "old_qualified_name")) == ["alpha", "delta"]
    assert _names(diffs[4], "symbols", "added") == ["X"]
    for d in diffs:
        total = sum(d["counts"]["files"].values())
        assert total == sum(len(v) for v in d["files"].values()) and total > 0


def test_cli_diff_by_git_revisions_json_and_text(git_repo, cli) -> None:
    git_repo.write("util.py", ALPHA)
    git_repo.commit("one")
    cli("build", git_repo.path, "--ref", "main", check=True)
    git_repo.write("util.py", ALPHA.replace("alpha", "omega"))
    git_repo.commit("two")
    cli("build", git_repo.path, "--ref", "main", check=True)
    out = cli("diff", "HEAD~1", "main", "--repo", git_repo.path, "--json", check=True)
    data = json.loads(out.stdout)
    assert data["b"]["ref"] == "heads/main"
    assert [(r["old_qualified_name"], r["qualified_name"]) for r in data["symbols"]["renamed"]] == [
        ("alpha", "omega")]
    text = cli("diff", "HEAD~1", "HEAD", "--repo", git_repo.path, check=True).stdout
    assert "files modified:" in text and "symbols renamed:" in text and "alpha -> omega" in text
    missing = cli("diff", "nope", "main", "--repo", git_repo.path)
    assert missing.returncode == 4 or missing.returncode == 5, missing.stderr


def _manifest(files: dict[str, str]) -> Manifest:
    entries = tuple(FileEntry(p, blob, 1, "python", fmt.STATUS_INDEXED, "", "k" + blob, "s" + blob)
                    for p, blob in sorted(files.items()))
    return Manifest(ref="heads/x", commit=None, source="git", files=entries)


_paths = st.lists(st.sampled_from(["a.py", "b.py", "c/d.py", "e.py"]), unique=True, max_size=4)


@settings(max_examples=60, deadline=None)
@given(_paths, st.lists(st.sampled_from(["1", "2", "3"]), min_size=4, max_size=4))
def test_diff_of_a_manifest_with_itself_is_empty_and_files_partition(paths, blobs) -> None:
    m = _manifest({p: blobs[i] for i, p in enumerate(paths)})
    syms = {p: [SymbolFacts(p, "s" + p, "function", "f", "f", "h", 1)] for p in paths}
    same = diff_manifests(m, m, syms, syms)
    assert same.files == [] and same.symbols == []
    other = _manifest({p: blobs[-1 - i] for i, p in enumerate(reversed(paths))})
    d = diff_manifests(m, other, syms, syms)
    old_paths = {f.old_path or f.path for f in d.files if f.change != "added"}
    new_paths = {f.path for f in d.files if f.change != "removed"}
    assert old_paths <= set(paths) and new_paths <= set(paths)
    for f in d.files:
        if f.change == "moved":
            assert m.file(f.old_path).blob == other.file(f.path).blob


def test_diff_reads_shards_without_pyarrow_dataset_or_compute(git_repo) -> None:
    """pq.read_table imports pyarrow.dataset and pyarrow.compute (~60-100 ms in a fresh
    process, a third of a small diff): shards are read through shard.read_shard."""
    import subprocess
    import sys

    git_repo.write("util.py", ALPHA)
    git_repo.commit("one")
    one = _build(git_repo).manifest_id
    git_repo.write("util.py", ALPHA.replace("alpha", "omega"))
    git_repo.commit("two")
    two = _build(git_repo).manifest_id
    script = (
        "import sys\n"
        "from codeagent.query.diff import diff_ids\n"
        "from codeagent.store import Store\n"
        f"d = diff_ids(Store({str(git_repo.path / '.codeagent')!r}), {one!r}, {two!r}).to_dict()\n"
        "assert [s['qualified_name'] for s in d['symbols']['renamed']] == ['omega'], d\n"
        "print(sorted(m for m in sys.modules if m in ('pyarrow.compute', 'pyarrow.dataset')))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
