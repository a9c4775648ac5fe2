"""Hostile repositories: the build finishes, every file is listed in the manifest, and every
file it did not parse is recorded with its reason; odd repositories get clear messages and
documented exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from relhelpers import check_store, codeagent, git, init_repo, record
from repo_helpers import NO_DAC_OVERRIDE

from codeagent.format.manifest import load_manifest
from codeagent.store import Store

FIGS: dict[str, object] = {}


def _manifest(repo: Path, store_dir: Path | None = None):
    store = Store(store_dir or repo / ".codeagent")
    return load_manifest(store, store.read_ref("worktree"))


def _git_paths(repo: Path) -> set[str]:
    out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others",
                          "--exclude-standard"], capture_output=True, check=True).stdout
    return {raw.decode("utf-8", "backslashreplace") for raw in out.split(b"\0") if raw}


def _zoo(repo: Path, outside: Path) -> dict[str, str]:
    """Write the hostile files; returns path -> expected skip reason ("" = indexed)."""
    expected: dict[str, str] = {}

    def put(rel: str, data: bytes, reason: str) -> None:
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        expected[rel] = reason

    put("ok.py", b"def fine():\n    return 1\n", "")
    put("giant.py", b"x = 1\n" * 600_000, "too_large")  # 3.6 MB
    put("big_but_allowed.txt", b"lorem ipsum dolor sit amet\n" * 70_000, "")  # 1.9 MB
    put("dist/app.min.js", b"var a=1;" * 40_000, "minified")  # 320 KB on one line
    put("deep_brackets.py", b"x = " + b"[" * 20_000 + b"]" * 20_000 + b"\n", "")
    put("deep_blocks.py", "".join(f"{'    ' * i}if x{i}:\n" for i in range(400)).encode()
        + b"    " * 400 + b"pass\n", "")
    put("deep_js.js", b"f(" * 5_000 + b")" * 5_000 + b";\n", "")
    put("latin1.py", "caf\u00e9 = 'na\u00efve'\n".encode("latin-1"), "invalid_utf8")
    put("utf16.txt", "hello".encode("utf-16"), "binary")
    put("bom.py", b"\xef\xbb\xbfdef bom():\n    return 2\n", "")
    put("image.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)) * 8, "binary")
    put("empty.py", b"", "")
    put("a" * 200 + ".py", b"def long_name():\n    pass\n", "")
    put("/".join(f"d{i}" for i in range(60)) + "/deep.py", b"def deep():\n    pass\n", "")
    for weird in ("new\nline.py", "tab\tname.py", "quote\"and'.py", "-rf.py", "sp ace.py",
                  "emoji_\U0001f600.py", "back\\slash.py"):
        put(weird, b"def weird():\n    return 3\n", "")
    raw = os.fsencode(repo) + b"/caf\xe9_latin1_name.py"
    with open(raw, "wb") as fh:
        fh.write(b"def latin_name():\n    pass\n")
    expected["caf\\xe9_latin1_name.py"] = "non_utf8_path"
    (outside / "secret.txt").write_text("outside the repository\n")
    os.symlink(outside / "secret.txt", repo / "escape_link.txt")
    expected["escape_link.txt"] = "symlink_outside_repo"
    os.symlink("ok.py", repo / "inside_link.py")
    expected["inside_link.py"] = "symlink"
    os.symlink("../" * 30 + "etc/passwd", repo / "dotdot_link")
    expected["dotdot_link"] = "symlink_outside_repo"
    os.symlink("loop_b", repo / "loop_a")
    os.symlink("loop_a", repo / "loop_b")
    expected["loop_a"] = expected["loop_b"] = "symlink"  # a loop is never followed either way
    return expected


def test_a_hostile_work_tree_builds_and_records_every_skip(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = init_repo(tmp_path / "repo", commit=False)
    expected = _zoo(repo, outside)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "zoo")
    started = time.monotonic()
    proc = codeagent("build", repo, "--json", timeout=600)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = _manifest(repo)
    listed = {f.path: f for f in m.files}
    missing = _git_paths(repo) - set(listed)
    wrong = {p: (listed[p].status, listed[p].reason, want) for p, want in expected.items()
             if p in listed and (listed[p].reason != want or (want == "") != listed[p].indexed)}
    unexplained = [f.path for f in m.files if not f.indexed and not f.reason]
    out = json.loads(proc.stdout)
    record("hostile-worktree", files=len(m.files), indexed=m.counts["indexed"],
           skipped=m.counts["skipped"], reasons=len(m.counts["skipped_by_reason"]),
           silently_dropped=len(missing), wrong_reason=len(wrong), seconds=round(seconds, 1))
    assert not missing, f"files not in the manifest: {sorted(missing)}"
    assert not {p for p in expected if p not in listed}, "an expected file is not listed"
    assert not wrong, f"(status, reason, expected reason): {wrong}"
    assert not unexplained, f"skipped without a reason: {unexplained}"
    assert out["files_skipped"]["total"] == m.counts["skipped"]
    assert not check_store(repo / ".codeagent")[0]
    committed = codeagent("build", repo, "--ref", "main", "--json", timeout=600)
    assert committed.returncode == 0, committed.stderr[-2000:]
    store = Store(repo / ".codeagent")
    cm = load_manifest(store, store.read_ref("heads/main"))
    assert {f.path for f in cm.files} == set(listed)
    assert not [f.path for f in cm.files if not f.indexed and not f.reason]
    assert cm.file("giant.py").reason == "too_large" and cm.file("latin1.py").reason == "invalid_utf8"
    assert codeagent("search", "weird", "--repo", repo, "--ref", "worktree").returncode == 0


LONG = os.environ.get("CODEAGENT_LONG") == "1"


def test_five_thousand_files_in_one_folder(tmp_path: Path) -> None:
    """Long mode: 5,000 distinct files. Fast tier: 5,000 files over 100 distinct contents
    (walk, hashing, manifest and assembly see 5,000 paths; the parser sees 100)."""
    distinct = 5000 if LONG else 100
    files = {f"flat/f{i:05d}.py": f"def f{i % distinct}():\n    return {i % distinct}\n"
             for i in range(5000)}
    repo = init_repo(tmp_path / "repo", files)
    started = time.monotonic()
    proc = codeagent("build", repo, "--json", timeout=900)
    first = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-2000:]
    started = time.monotonic()
    again = codeagent("build", repo, "--json")
    noop = time.monotonic() - started
    m = _manifest(repo)
    record("hostile-5000-files", files=len(m.files), distinct=distinct, indexed=m.counts["indexed"],
           build_seconds=round(first, 1), noop_seconds=round(noop, 2))
    assert m.counts["indexed"] == 5000
    assert json.loads(again.stdout)["changed"] is False


def test_an_unreadable_file_is_recorded_not_fatal(tmp_path: Path) -> None:
    """chmod 000 means nothing to root: as root the build runs without the DAC capabilities."""
    repo = init_repo(tmp_path / "repo", {"ok.py": "def ok():\n    return 1\n",
                                         "secret.py": "TOKEN = 'x'\n"})
    os.chmod(repo / "secret.py", 0)
    cmd = [os.sys.executable, "-m", "codeagent", "build", str(repo), "--json"]
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("running as root without setpriv: cannot make a file unreadable")
        cmd = [*NO_DAC_OVERRIDE, *cmd]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        m = _manifest(repo)
    finally:
        os.chmod(repo / "secret.py", 0o644)
    entry = m.file("secret.py")
    record("hostile-unreadable", reason=entry.reason if entry else "missing")
    assert entry is not None and entry.reason == "unreadable"
    assert m.file("ok.py").indexed


def test_odd_repositories_get_clear_messages_and_documented_exit_codes(tmp_path: Path) -> None:
    outcomes = {}
    empty = init_repo(tmp_path / "empty", commit=False)
    proc = codeagent("build", empty, "--json")
    outcomes["empty_repo"] = proc.returncode
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["files_total"] == 0
    ref = codeagent("build", empty, "--ref", "main")
    outcomes["empty_repo_ref"] = ref.returncode
    assert ref.returncode == 4 and "no commits yet" in ref.stderr and "Traceback" not in ref.stderr

    uncommitted = init_repo(tmp_path / "nocommit", {"a.py": "def a():\n    pass\n"}, commit=False)
    proc = codeagent("build", uncommitted, "--json")
    outcomes["no_commits"] = proc.returncode
    assert proc.returncode == 0 and _manifest(uncommitted).commit is None

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "b.py").write_text("def b():\n    pass\n")
    proc = codeagent("build", plain, "--json")
    outcomes["not_git"] = proc.returncode
    assert proc.returncode == 0 and _manifest(plain).file("b.py").indexed
    ref = codeagent("build", plain, "--ref", "main")
    outcomes["not_git_ref"] = ref.returncode
    assert ref.returncode == 3 and "not a git repository" in ref.stderr

    for name, target in {"missing": tmp_path / "nope", "a_file": plain / "b.py"}.items():
        proc = codeagent("build", target)
        outcomes[name] = proc.returncode
        assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    bad_ref = codeagent("build", uncommitted, "--ref", "--upload-pack=evil")
    outcomes["option_like_ref"] = bad_ref.returncode
    assert bad_ref.returncode in (2, 4) and "Traceback" not in bad_ref.stderr
    record("hostile-odd-repos", **outcomes)


def test_a_commit_naming_a_missing_blob_builds_and_records_the_skip(tmp_path: Path) -> None:
    """A partial clone, a promisor remote or a damaged mirror: the tree names a blob the object
    database lacks. That file is a `missing_object` skip; the rest of the tree is indexed."""
    repo = init_repo(tmp_path / "repo", {"ok.py": "def ok():\n    return 1\n",
                                         "big/asset.py": "def gone():\n    return 2\n"})
    sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD:big/asset.py"],
                         capture_output=True, text=True, check=True).stdout.strip()
    (repo / ".git" / "objects" / sha[:2] / sha[2:]).unlink()
    proc = codeagent("build", str(repo), "--ref", "HEAD", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["files_skipped"]["files"] == [{"path": "big/asset.py", "reason": "missing_object"}], \
        out["files_skipped"]
    store = Store(repo / ".codeagent")
    m = load_manifest(store, store.read_ref(out["ref"]))
    assert m.file("big/asset.py").reason == "missing_object"
    assert m.file("ok.py").indexed
