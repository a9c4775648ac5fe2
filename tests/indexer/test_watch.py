"""Watch mode: which changes start a build, and `codeagent watch` following a real work tree
(each build its own process, a burst of changes one build, Ctrl-C exit 130)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from codeagent.indexer.watch import ChangeFilter, build_args, describe
from codeagent.runtime.watch_builder import Builder
from codeagent.query import find_symbols, open_index

EVENT_TIMEOUT = 60.0


def test_the_filter_keeps_what_the_index_may_care_about(git_repo):
    git_repo.write_many({"a.py": "x = 1\n", ".gitignore": "build/\n*.log\n",
                         ".codeagentignore": "vendor/\n", "tracked.log": "kept\n"})
    git_repo.repo.git.add("-f", "tracked.log")
    git_repo.commit("init")
    root = git_repo.path.resolve()
    f = ChangeFilter(root, root / ".codeagent")
    candidates = ["a.py", "new.py", "build/out.py", "debug.log", "tracked.log", "vendor/lib.py",
                  ".codeagent/objects/ab/cd", ".git/index", ".git/HEAD", ".gitignore",
                  ".codeagentignore", "sub/.gitignore"]
    kept = f.relevant(str(root / p) for p in candidates)
    assert kept == sorted([".codeagentignore", ".git/HEAD", ".gitignore", "a.py", "new.py",
                           "sub/.gitignore", "tracked.log"])
    assert f.relevant([str(root.parent / "elsewhere.py")]) == []


def test_a_store_outside_the_repository_is_still_left_out(tmp_path):
    repo, store = tmp_path / "plain", tmp_path / "plain" / "idx"
    repo.mkdir()
    f = ChangeFilter(repo, store)
    assert f.relevant([str(store / "refs" / "x"), str(repo / "m.py")]) == ["m.py"]


def test_a_refused_watch_is_an_error_saying_what_to_do():
    from codeagent.errors import CodeagentError
    from codeagent.indexer.watch import _watched

    def refused():
        yield {("added", "a.py")}
        raise OSError(28, "OS file watch limit reached")

    batches = _watched(refused())
    assert next(batches) == {("added", "a.py")}
    with pytest.raises(CodeagentError) as caught:
        next(batches)
    assert "watch limit" in caught.value.message and "max_user_watches" in caught.value.hint


def test_progress_lines_say_what_happened():
    assert describe({"event": "changes", "count": 5, "sample": ["a", "b", "c"]}) == \
        "changed: a, b, c and 2 more"
    assert describe({"event": "build_done", "changed": True, "ref": "worktree", "manifest_id": "f" * 64,
                     "files_parsed": 1, "files_total": 9, "seconds": 0.5}) == \
        "indexed worktree -> ffffffffffff: 1 of 9 files parsed (0.50s)"
    assert describe({"event": "build_failed", "error": {"message": "disk full", "hint": "free space"}}) == \
        "build failed: disk full (free space)"


class Watcher:
    """`codeagent watch --json` on a repository, its events read in a thread."""

    def __init__(self, repo: Path, *extra: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "codeagent", "watch", str(repo), "--json",
                                      *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.PIPE, text=True)
        self.events: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.events.put(json.loads(line))

    def next(self, kind: str) -> dict:
        """The next event of `kind` (events before it are dropped)."""
        deadline = time.monotonic() + EVENT_TIMEOUT
        while True:
            try:
                event = self.events.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {kind} event within {EVENT_TIMEOUT}s; "
                                     f"stderr: {self.stop()[1]}") from None
            if event["event"] == kind or (kind == "build_done" and event["event"] == "build_failed"):
                return event

    def builds_until_quiet(self, quiet: float = 3.0) -> list[dict]:
        """Every build's end until no build started for `quiet` seconds after the last."""
        out = [self.next("build_done")]
        while True:
            try:
                event = self.events.get(timeout=quiet)
            except queue.Empty:
                return out
            if event["event"] == "build_started":
                out.append(self.next("build_done"))

    def stop(self) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode, self.proc.stderr.read()


def _symbols(repo: Path, name: str) -> list[str]:
    with open_index(repo) as view:
        return [h.path for h in find_symbols(view, name, match="exact").results]


def test_watch_builds_after_each_edit_and_a_burst_is_one_build(git_repo):
    git_repo.write_many({"pkg/a.py": "def alpha():\n    return 1\n", ".gitignore": "out/\n"})
    git_repo.commit("init")
    w = Watcher(git_repo.path, "--stop-on-stdin-eof")
    try:
        first = w.next("build_done")
        assert first["event"] == "build_done" and first["files_total"] == 2
        git_repo.write("pkg/b.py", "def beta_watched():\n    return 2\n")
        done = w.next("build_done")
        assert done["changed"] and done["files_parsed"] == 1
        assert _symbols(git_repo.path, "beta_watched") == ["pkg/b.py"]

        git_repo.write("out/generated.py", "def ignored_one():\n    pass\n")  # .gitignore'd
        git_repo.write_many({f"many/m{i}.py": f"def burst_{i}():\n    return {i}\n" for i in range(300)})
        builds = w.builds_until_quiet()
        assert 1 <= len(builds) <= 2, builds  # one batch, or one more for changes during the build
        assert builds[-1]["event"] == "build_done" and builds[-1]["files_total"] == 303
        assert _symbols(git_repo.path, "burst_299") == ["many/m299.py"]
        assert _symbols(git_repo.path, "ignored_one") == []
    finally:
        code, err = w.stop()
    assert code == 0, err


def test_ctrl_c_stops_the_watcher_with_exit_130(git_repo):
    git_repo.write("a.py", "x = 1\n")
    git_repo.commit("init")
    w = Watcher(git_repo.path)
    try:
        w.next("build_done")
        w.proc.send_signal(signal.SIGINT)
        w.proc.wait(timeout=30)
    finally:
        code, err = w.stop()
    assert code == 130, err
    assert "interrupted" in err and "Traceback" not in err


def test_a_failed_build_is_reported_and_watching_goes_on(git_repo):
    git_repo.write_many({"a.py": "x = 1\n"})
    git_repo.commit("init")
    w = Watcher(git_repo.path, "--stop-on-stdin-eof", "--no-initial-build")
    try:
        w.next("watching")
        git_repo.write("pyproject.toml", "[tool.codeagent]\nexclude = 7\n")  # malformed rules
        failed = w.next("build_done")
        assert failed["event"] == "build_failed" and "pyproject.toml" in failed["error"]["message"]
        os.unlink(git_repo.path / "pyproject.toml")
        git_repo.write("b.py", "def after_failure():\n    pass\n")
        assert w.next("build_done")["event"] == "build_done"
        assert _symbols(git_repo.path, "after_failure") == ["b.py"]
    finally:
        code, err = w.stop()
    assert code == 0, err


@pytest.mark.parametrize("quiet", ["5", "70000"])
def test_out_of_range_timings_are_argument_errors(cli, git_repo, quiet):
    result = cli("watch", str(git_repo.path), "--quiet-ms", quiet)
    assert result.returncode == 2 and "--quiet-ms" in result.stderr


def test_a_branch_switch_is_one_build_that_changes_the_index(git_repo):
    git_repo.write_many({f"m/f{i}.py": f"def on_main_{i}():\n    return {i}\n" for i in range(400)})
    git_repo.commit("main")
    git_repo.checkout("other", create=True)
    git_repo.write_many({f"m/f{i}.py": f"def on_other_{i}():\n    return {i}\n" for i in range(400)})
    git_repo.commit("other")
    git_repo.checkout("main")
    w = Watcher(git_repo.path, "--stop-on-stdin-eof")
    try:
        w.next("build_done")
        git_repo.checkout("other")
        builds = w.builds_until_quiet()
        assert [b["event"] for b in builds] == ["build_done"] * len(builds)
        assert sum(b["changed"] for b in builds) == 1, builds
        assert _symbols(git_repo.path, "on_other_399") == ["m/f399.py"]
        assert _symbols(git_repo.path, "on_main_0") == []
    finally:
        code, err = w.stop()
    assert code == 0, err


def test_builds_are_processes_forked_by_one_builder(git_repo):
    """Each build runs in a child of the builder (which has the libraries imported), with its
    own output and exit code; the builder lives across builds and is started again if it died."""
    git_repo.write("a.py", "def first():\n    pass\n")
    git_repo.commit("init")
    builder = Builder()
    try:
        code, out, _, cpu = builder.run(build_args(git_repo.path, None))
        assert code == 0 and json.loads(out)["files_total"] == 1 and cpu > 0
        pid = builder.proc.pid
        git_repo.write("b.py", "def forked_build():\n    pass\n")
        code, out, _, _ = builder.run(build_args(git_repo.path, None))
        assert code == 0 and json.loads(out)["files_parsed"] == 1 and builder.proc.pid == pid
        assert _symbols(git_repo.path, "forked_build") == ["b.py"]
        code, out, _, _ = builder.run(["build", str(git_repo.path / "missing"), "--json"])
        assert code != 0 and "error" in json.loads(out) and builder.proc.pid == pid
        os.kill(pid, signal.SIGKILL)
        builder.proc.wait()
        git_repo.write("c.py", "def after_restart():\n    pass\n")
        code, out, _, _ = builder.run(build_args(git_repo.path, None))
        assert code == 0 and builder.proc.pid != pid
        assert _symbols(git_repo.path, "after_restart") == ["c.py"]
    finally:
        builder.stop()
    assert builder.proc is None


def _store(repo: Path):
    from codeagent.store import Store

    return Store(repo / ".codeagent")


def _grown_repo(git_repo, files: int = 40) -> None:
    git_repo.write_many({f"pkg/m{i}.py": "".join(f"def f{i}_{j}(x):\n    return g{j}(x)\n\n" for j in range(40))
                         for i in range(files)})
    git_repo.commit("init")


def test_a_grown_overlay_is_consolidated_when_idle_not_on_the_edit(git_repo, monkeypatch):
    """Past its bound an edit still builds an overlay and says consolidation_due; the watcher
    consolidates once the work tree is idle, and the index then has no overlay."""
    monkeypatch.setenv("CODEAGENT_TEST_OVERLAY_MAX_BYTES", "100000")  # a one-file overlay passes it
    _grown_repo(git_repo)
    w = Watcher(git_repo.path, "--stop-on-stdin-eof")
    try:
        first = w.next("build_done")
        store = _store(git_repo.path)
        assert store.assembly_base(first["manifest_id"]) is None
        git_repo.write("pkg/m1.py", "def edited_before_idle():\n    return 1\n")
        edit = w.next("build_done")
        assert edit["event"] == "build_done" and edit["consolidation_due"] and not edit.get("consolidation")
        assert store.assembly_base(edit["manifest_id"]) == first["manifest_id"]  # an overlay, not a consolidation
        assert _symbols(git_repo.path, "edited_before_idle") == ["pkg/m1.py"]
        w.next("consolidating")
        done = w.next("build_done")
        assert done["event"] == "build_done" and done["consolidation"] and not done["consolidation_due"]
        current = store.read_ref("worktree")
        assert current == done["manifest_id"] and store.assembly_base(current) is None
        assert _symbols(git_repo.path, "edited_before_idle") == ["pkg/m1.py"]
        git_repo.write("pkg/m2.py", "def after_consolidation():\n    return 2\n")
        after = w.next("build_done")
        assert store.assembly_base(after["manifest_id"]) == current
        assert _symbols(git_repo.path, "after_consolidation") == ["pkg/m2.py"]
    finally:
        code, err = w.stop()
    assert code == 0, err


def test_an_edit_during_a_consolidation_is_built_first(git_repo, monkeypatch):
    """An edit arriving while the idle consolidation runs interrupts it (or finds it ended) and
    is built at once; nothing is lost and the consolidation comes back when idle."""
    monkeypatch.setenv("CODEAGENT_TEST_OVERLAY_MAX_BYTES", "100000")
    _grown_repo(git_repo, files=150)
    w = Watcher(git_repo.path, "--stop-on-stdin-eof")
    try:
        w.next("build_done")
        store = _store(git_repo.path)
        git_repo.write("pkg/m1.py", "def first_edit():\n    return 1\n")
        assert w.next("build_done")["consolidation_due"]
        w.next("consolidating")
        git_repo.write("pkg/m2.py", "def during_consolidation():\n    return 2\n")
        seen = []
        while not seen or seen[-1].get("consolidation") or seen[-1]["event"] != "build_done":
            event = w.events.get(timeout=EVENT_TIMEOUT)
            if event["event"] in ("build_done", "build_failed", "consolidation_abandoned"):
                seen.append(event)
        assert [e["event"] for e in seen if e["event"] == "build_failed"] == []
        assert _symbols(git_repo.path, "during_consolidation") == ["pkg/m2.py"]
        assert _symbols(git_repo.path, "first_edit") == ["pkg/m1.py"]
        if seen[0]["event"] == "consolidation_abandoned":
            assert store.assembly_base(seen[-1]["manifest_id"]) is not None  # built as an overlay
            w.next("consolidating")
            assert w.next("build_done")["consolidation"]
        assert store.assembly_base(store.read_ref("worktree")) is None
        assert not [p for p in store.tmp_dir.iterdir() if p.name.startswith(("assemble", "overlay"))]
    finally:
        code, err = w.stop()
    assert code == 0, err


@pytest.mark.parametrize("builder_late", [False, True], ids=["builder-ready", "builder-late"])
def test_a_background_build_can_be_interrupted_and_changes_nothing(git_repo, builder_late):
    """Builder.start runs a build without waiting; cancelling it interrupts the child (exit
    130), the ref stays where it was, no temp file is left and the builder serves the next
    build. builder-late: the builder is held (SIGSTOP) past the cancel's grace before it forks,
    as a loaded machine holds its imports: the cancel still interrupts the build."""
    _grown_repo(git_repo, files=300)
    builder = Builder()
    grace = 3.0
    try:
        if builder_late:
            pid = builder._started().pid
            os.kill(pid, signal.SIGSTOP)
            threading.Timer(grace + 0.5, os.kill, (pid, signal.SIGCONT)).start()
        job = builder.start(build_args(git_repo.path, None))
        reply = job.cancel(grace=grace)
        assert reply[0] == 130, reply
        refs = git_repo.path / ".codeagent" / "refs" / "worktree"
        tmp = git_repo.path / ".codeagent" / "tmp"
        assert not refs.exists() and (not tmp.exists() or not list(tmp.iterdir()))
        code, out, _, _ = builder.run(build_args(git_repo.path, None))
        assert code == 0 and json.loads(out)["files_total"] == 300
    finally:
        builder.stop()
