"""The resident daemon: commands run through it behave as in-process ones (output, exit
codes, working directory, signals), it is replaced when its code changes, and it can be
bypassed. Real processes throughout: the daemon, its clients and their builds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import codeagent.format
from codeagent.runtime import daemon

CLI = [sys.executable, "-m", "codeagent"]


def run(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120):
    return subprocess.run([*CLI, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def wait_for(predicate, timeout: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A daemon of our own (own socket dir), stopped and gone after the test."""
    monkeypatch.setenv("CODEAGENT_DAEMON_DIR", str(tmp_path / "d"))
    monkeypatch.delenv("CODEAGENT_DAEMON", raising=False)
    proc = run("daemon", "start", "--json", "--idle-timeout", "300")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["already_running"] is False and info["socket"] == daemon.socket_path()
    yield info
    daemon.stop()
    wait_for(lambda: daemon.status() is None, what="the daemon to stop")
    wait_for(lambda: not _alive(info["pid"]), what="the daemon process to exit")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie of a process we did not reap (the daemon is detached: not ours)
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def served() -> int:
    return daemon.status()["served"]


def test_build_through_the_daemon_equals_an_in_process_build(running, git_repo, tmp_path):
    git_repo.write_many({"app/main.py": "def main():\n    return helper()\n\n\ndef helper():\n    return 1\n",
                         "README.md": "# demo\n"})
    git_repo.commit("init")
    before = served()
    via = run("build", "--json", cwd=git_repo.path)  # REPO defaults to the caller's cwd
    assert via.returncode == 0, via.stderr
    assert served() == before + 1
    local = run("build", str(git_repo.path), "--store", tmp_path / "other", "--json",
                env={"CODEAGENT_DAEMON": "0"})
    assert local.returncode == 0, local.stderr
    assert served() == before + 1  # CODEAGENT_DAEMON=0 bypassed it
    a, b = json.loads(via.stdout), json.loads(local.stdout)
    assert a["manifest_id"] == b["manifest_id"] and a["files_parsed"] == 2
    search = run("search", "helper", "--json", cwd=git_repo.path)
    assert search.returncode == 0 and "app/main.py" in search.stdout
    assert served() == before + 2


def test_errors_keep_their_exit_code_and_streams(running, tmp_path):
    via = run("build", tmp_path / "missing", "--json")
    local = run("build", tmp_path / "missing", "--json", env={"CODEAGENT_DAEMON": "0"})
    assert via.returncode == local.returncode == 3
    assert via.stdout == local.stdout and json.loads(via.stdout)["error"]["code"] == "not_a_repository"
    assert via.stderr == local.stderr and "does not exist" in via.stderr
    usage = run("build", "--no-such-option")
    assert usage.returncode == 2 and "No such option" in usage.stderr and usage.stdout == ""


def _big_repo(git_repo, files: int = 500):
    body = "".join(f"def f{i}(x):\n    return g{i}(x) + {i}\n\n\n" for i in range(60))
    git_repo.write_many({f"pkg/m{n}.py": f"# module {n}\n{body}" for n in range(files)})
    git_repo.commit("many")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_reach_the_command_and_a_killed_build_leaves_no_index(running, git_repo, sig):
    _big_repo(git_repo)
    proc = subprocess.Popen([*CLI, "build", str(git_repo.path), "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    wait_for(lambda: daemon.status()["commands_running"] == 1, what="the build to start")
    time.sleep(0.5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    if sig == signal.SIGINT:  # one line and exit 130, as without the daemon
        assert proc.returncode == 130 and err.startswith("interrupted: codeagent build stopped")
        assert len(err.strip().splitlines()) == 1
    else:
        assert proc.returncode == -sig
    assert out == ""
    wait_for(lambda: daemon.status()["commands_running"] == 0, what="the command to end")
    assert not (git_repo.path / ".codeagent" / "refs" / "worktree").exists()
    again = run("build", str(git_repo.path), "--json")  # the store lock was released
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["files_total"] == 500


def test_a_killed_client_takes_its_command_down(running, git_repo):
    _big_repo(git_repo)
    proc = subprocess.Popen([*CLI, "build", str(git_repo.path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_for(lambda: daemon.status()["commands_running"] == 1, what="the build to start")
    proc.kill()
    proc.wait(timeout=10)
    wait_for(lambda: daemon.status()["commands_running"] == 0, what="the orphaned build to die")
    assert not (git_repo.path / ".codeagent" / "refs" / "worktree").exists()


def test_changed_code_on_disk_replaces_the_daemon(running, git_repo):
    git_repo.write("a.py", "x = 1\n")
    git_repo.commit("init")
    module = Path(codeagent.format.__file__)
    st = module.stat()
    try:
        os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        assert daemon.status()["stale"] is True
        proc = run("build", str(git_repo.path), "--json")  # runs in-process, still correct
        assert proc.returncode == 0 and json.loads(proc.stdout)["files_parsed"] == 1
        wait_for(lambda: not _alive(running["pid"]), what="the stale daemon to exit")
        fresh = wait_for(daemon.status, what="its replacement")
        assert fresh["pid"] != running["pid"] and fresh["stale"] is False
    finally:
        os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns))
    daemon.stop()
    wait_for(lambda: daemon.status() is None, what="the replacement to stop")


def test_start_stop_status(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEAGENT_DAEMON_DIR", str(tmp_path / "d"))
    none = run("daemon", "status")
    assert none.returncode == 1 and "no daemon running" in none.stdout
    first = run("daemon", "start", "--json")
    second = run("daemon", "start", "--json")
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert (a["already_running"], b["already_running"]) == (False, True) and a["pid"] == b["pid"]
    assert (tmp_path / "d").stat().st_mode & 0o777 == 0o700
    status = run("daemon", "status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["pid"] == a["pid"]
    assert "stopping" in run("daemon", "stop").stdout
    wait_for(lambda: not _alive(a["pid"]), what="the daemon to exit")
    assert not Path(a["socket"]).exists()
    assert "no daemon running" in run("daemon", "stop").stdout


def test_autostart_on_first_use(tmp_path, monkeypatch, git_repo):
    monkeypatch.setenv("CODEAGENT_DAEMON_DIR", str(tmp_path / "d"))
    git_repo.write("a.py", "x = 1\n")
    git_repo.commit("init")
    proc = run("build", str(git_repo.path), "--json", env={"CODEAGENT_DAEMON": "1"})
    assert proc.returncode == 0 and json.loads(proc.stdout)["files_parsed"] == 1
    info = wait_for(daemon.status, what="the autostarted daemon")
    try:
        noop = run("build", str(git_repo.path), "--json", env={"CODEAGENT_DAEMON": "1"})
        assert noop.returncode == 0 and json.loads(noop.stdout)["changed"] is False
        assert daemon.status()["served"] == info["served"] + 1
    finally:
        daemon.stop()
        wait_for(lambda: not _alive(info["pid"]), what="the daemon to exit")


def test_callers_the_daemon_cannot_impersonate_run_in_process(running, git_repo):
    """The forked command would run with the daemon's interpreter settings, capabilities and
    limits, not the caller's: such callers are told to run in their own process."""
    git_repo.write("a.py", "x = 1\n")
    git_repo.commit("init")
    before = served()
    env_differs = run("build", str(git_repo.path), "--json", env={"PYTHONHASHSEED": "123"})
    assert env_differs.returncode == 0 and json.loads(env_differs.stdout)["files_parsed"] == 1
    assert served() == before
    limits_differ = subprocess.run(["sh", "-c", 'ulimit -S -n 77 && exec "$@"', "sh", *CLI,
                                    "status", str(git_repo.path), "--json"],
                                   capture_output=True, text=True, timeout=60)
    assert limits_differ.returncode == 0, limits_differ.stderr
    assert json.loads(limits_differ.stdout)["refs"], limits_differ.stdout
    assert served() == before
    same = run("status", str(git_repo.path), "--json")
    assert same.returncode == 0 and served() == before + 1


def test_the_entry_script_and_python_m_share_one_daemon(running, tmp_path):
    script = Path(sys.executable).parent / "codeagent"
    if not script.exists():
        pytest.skip("no codeagent entry script beside this interpreter")
    before = served()
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "codeagent" in proc.stdout
    assert served() == before + 1


def test_a_socket_directory_open_to_others_is_not_trusted(running):
    """Someone else's (or a world-writable) directory must not receive our environment,
    terminal and arguments: the client runs in-process instead of connecting."""
    folder = Path(running["socket"]).parent
    before = served()
    folder.chmod(0o777)
    try:
        proc = run("--version")
        assert proc.returncode == 0 and "codeagent" in proc.stdout
    finally:
        folder.chmod(0o700)
    assert served() == before
    assert run("--version").returncode == 0 and served() == before + 1


def _readers(folder: Path) -> list[Path]:
    return sorted(folder.glob("q-*.sock"))


def test_searches_through_the_daemon_are_answered_by_a_warm_reader(running, git_repo, tmp_path):
    """The first search starts the repository's warm reader; later ones get its answer, the
    same as an in-process search's, and see a rebuilt index; it goes when the daemon goes."""
    git_repo.write_many({"app/main.py": "def main():\n    return parse_headers()\n\n\n"
                                        "def parse_headers(raw=''):\n    return dict(raw)\n",
                         "app/util.py": "def helper():\n    return 1\n"})
    git_repo.commit("init")
    assert run("build", cwd=git_repo.path).returncode == 0
    folder = Path(running["socket"]).parent
    first = run("search", "parse the headers", "--json", cwd=git_repo.path)
    assert first.returncode == 0, first.stderr
    sock = wait_for(lambda: _readers(folder), what="the warm reader")[0]
    warm = run("search", "parse the headers", "--json", cwd=git_repo.path, env={"CODEAGENT_DAEMON_DEBUG": "1"})
    assert "answered by the warm reader" in warm.stderr, warm.stderr
    local = run("search", "parse the headers", "--json", cwd=git_repo.path, env={"CODEAGENT_DAEMON": "0"})
    a, b = json.loads(warm.stdout), json.loads(local.stdout)
    for answer in (a, b):
        answer.pop("took_ms", None)
        answer.get("metadata", {}).pop("latency_ms", None)
    assert a == b and a["results"][0]["path"] == "app/main.py"
    missing = run("search", "x", "--ref", "no-such-branch", cwd=git_repo.path)
    assert missing.returncode != 0 and "no-such-branch" in missing.stderr + missing.stdout

    git_repo.write_many({"app/retry.py": "def retry_after_timeout():\n    return 2\n"})
    git_repo.commit("retry")
    assert run("build", cwd=git_repo.path).returncode == 0
    again = run("search", "retry_after_timeout", "--json", cwd=git_repo.path, env={"CODEAGENT_DAEMON_DEBUG": "1"})
    assert "answered by the warm reader" in again.stderr, again.stderr
    assert json.loads(again.stdout)["results"][0]["path"] == "app/retry.py"

    daemon.stop()
    wait_for(lambda: not sock.exists(), what="the warm reader to leave with the daemon")
