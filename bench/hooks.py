"""Latency of the agents' grep/glob hook on the standard-library corpus, end to end.

    python bench/hooks.py [--dest DIR] [--rounds N] [--base CHECKOUT]

Runs the hook command `codeagent install claude-code --hooks` writes, as Claude Code runs it
(through /bin/sh, the event JSON on stdin), once per event of a fixed set of Grep and Glob
calls, and prints p50/p95 wall time per call and the CPU milliseconds it cost: the hook
process, plus the daemon and the warm reader that answer it (read from /proc, so the figure
holds under load, where wall time mostly measures the queue for the CPU). Rows:

- the interpreter floor: `python -c pass` and `python -I -S -c pass`;
- this checkout's hook (hook_runner.py under -I -S, forwarded to its daemon);
- with --base, a checkout of the previous code (its own venv) running its own hook command
  (`CODEAGENT_DAEMON=1 codeagent hook claude-code`) through its own daemon, interleaved with
  ours call by call so both see the same load;
- a Codex Bash event (`rg -n NAME`) through ours;
- ours with no daemon running: the fail-open path (prints nothing).

Target: p95 <= 150 ms through the daemon. Each daemon runs in a socket directory of this run
only, so no other user's daemon is touched; all are stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import median, percentile, stdlib_repo  # noqa: E402

from codeagent.clients.hooks import hook_command  # noqa: E402

GREPS = [r"def urlopen", r"class JSONDecoder", r"TimeoutError", r"def parse_args\(", r"HTTPConnection",
         r"getaddrinfo", r"def dumps", r"class Thread\b", r"SimpleNamespace", r"def run_until_complete"]
GLOBS = ["**/json/*.py", "**/*parser*.py", "**/asyncio/*.py", "**/http/client.py", "**/email/*.py"]
HEAVY = ("duckdb", "pyarrow", "numpy", "click", "tree_sitter")
TICK = os.sysconf("SC_CLK_TCK")


def events(repo: Path) -> list[dict]:
    out = [{"tool_name": "Grep", "tool_input": {"pattern": p}} for p in GREPS]
    out += [{"tool_name": "Glob", "tool_input": {"pattern": p}} for p in GLOBS]
    return [{**e, "hook_event_name": "PostToolUse", "cwd": str(repo), "tool_response": {}} for e in out]


def proc_cpu(pid: int) -> float:
    """CPU ms of a process and its reaped children (utime, stime, cutime, cstime: clock ticks,
    hence the mean over calls rather than a median)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) * 1000 / TICK


class Hook:
    """One checkout's hook command, its daemon (own socket directory) and its warm reader."""

    def __init__(self, name: str, command: str, venv_python: str) -> None:
        self.name, self.command, self.python = name, command, os.path.realpath(venv_python)
        self.env = {**os.environ, "CODEAGENT_DAEMON_DIR": tempfile.mkdtemp(prefix="codeagent-hook-bench-")}
        self.env.pop("CODEAGENT_DAEMON", None)  # the command says CODEAGENT_DAEMON=1 itself
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self.answered = 0

    def daemon(self, *args: str) -> str:
        cli = [os.path.join(os.path.dirname(self.command_python()), "codeagent"), "daemon", *args]
        return subprocess.run(cli, env=self.env, capture_output=True, text=True, check=False).stdout

    def command_python(self) -> str:
        word = next(w for w in self.command.split() if "=" not in w)
        return word

    def servers(self) -> list[int]:
        """The daemon's pid and the warm readers started by this checkout's interpreter."""
        status = json.loads(self.daemon("status", "--json") or "{}")
        pids = [status["pid"]] if status.get("pid") else []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    cmd = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
                except OSError:
                    continue
                if b"codeagent.runtime.warm" in cmd and os.path.realpath(cmd[0].decode()) == self.python:
                    pids.append(int(entry))
        return pids

    def warm_up(self, event: dict, cwd: Path) -> None:
        """The session's first calls: start the daemon, then its warm reader; wait for both."""
        for _ in range(80):
            got = self.run(event, cwd, {"CODEAGENT_DAEMON_DEBUG": "1"})
            if "answered by the warm reader" in got.stderr:
                return
            time.sleep(0.5)
        raise SystemExit(f"{self.name}: the warm reader never answered")

    def run(self, event: dict, cwd: Path, extra: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(["/bin/sh", "-c", self.command], input=json.dumps(event), cwd=cwd,
                              env={**self.env, **(extra or {})}, capture_output=True, text=True)

    def timed(self, event: dict, cwd: Path, servers: list[int]) -> None:
        before = sum(proc_cpu(p) for p in servers)
        t0 = children_cpu()
        start = time.perf_counter()
        out = self.run(event, cwd).stdout
        self.walls.append((time.perf_counter() - start) * 1000)
        self.cpus.append(children_cpu() - t0 + sum(proc_cpu(p) for p in servers) - before)
        self.answered += bool(out.strip())

    def row(self) -> str:
        w, cpu = self.walls, sum(self.cpus) / len(self.cpus)
        return (f"{self.name:<34} {len(w):>4} calls ({self.answered:>3} answered)  wall p50 "
                f"{median(w):6.1f} ms  p95 {percentile(w, 95):6.1f} ms   CPU mean {cpu:5.1f} ms")


def children_cpu() -> float:
    """CPU ms of this process's reaped children (getrusage: finer than os.times' ticks)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1000


def floor(args: list[str], n: int) -> Hook:
    h = Hook(" ".join(["python", *args[1:]]), "", args[0])
    for _ in range(n):
        t0 = children_cpu()
        start = time.perf_counter()
        subprocess.run(args, check=True)
        h.walls.append((time.perf_counter() - start) * 1000)
        h.cpus.append(children_cpu() - t0)
    return h


def imports_of(h: Hook, event: dict, cwd: Path) -> str:
    """What the hook process imports (python -X importtime): module count, the heavy ones."""
    words = shlex.split(h.command)
    at = next(i for i, w in enumerate(words) if "=" not in w)
    if os.path.basename(words[at]).startswith("python"):
        words[at + 1:at + 1] = ["-X", "importtime"]
    else:  # a console script: its interpreter, traced
        words[at:at] = [h.python, "-X", "importtime"]
    err = subprocess.run(["/bin/sh", "-c", shlex.join(words)], input=json.dumps(event), cwd=cwd,
                         env=h.env, capture_output=True, text=True).stderr
    names = [line.split("|")[-1].strip() for line in err.splitlines() if line.startswith("import time:")][1:]
    heavy = sorted({n.split(".")[0] for n in names if n.split(".")[0] in HEAVY})
    return f"{len(names)} modules, heavy ones: {', '.join(heavy) or 'none'}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dest", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-stdlib")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--base", type=Path, default=None,
                    help="a checkout of the previous code with its own .venv (git worktree)")
    a = ap.parse_args()
    from codeagent.indexer.build import BuildOptions, build  # deferred: only the set-up builds

    repo = stdlib_repo(a.dest)
    build(BuildOptions(repo=repo, rev="main"))
    print(f"load average at start: {open('/proc/loadavg').read().split()[:3]}")
    evs = events(repo)
    ours = Hook("this checkout (hook_runner -I -S)", hook_command("claude-code"), sys.executable)
    hooks = [ours]
    if a.base:
        base_exe = a.base / ".venv" / "bin" / "codeagent"
        hooks.append(Hook("previous code (codeagent hook)", f"CODEAGENT_DAEMON=1 {base_exe} hook claude-code",
                          str(a.base / ".venv" / "bin" / "python")))
    codex = Hook("this checkout, Codex Bash `rg -n`", hook_command("codex"), sys.executable)
    codex.env = ours.env
    try:
        for h in hooks:
            h.warm_up(evs[0], repo)
        servers = {h.name: h.servers() for h in hooks}
        for _ in range(a.rounds):
            for e in evs:
                for h in hooks:  # interleaved: every checkout sees the same load
                    h.timed(e, repo, servers[h.name])
            for p in GREPS[:5]:
                word = re.findall(r"[A-Za-z_]{3,}", p)[-1]
                codex.timed({"hook_event_name": "PostToolUse", "tool_name": "Bash", "cwd": str(repo),
                             "tool_input": {"command": f"rg -n {word} ."}, "tool_response": ""},
                            repo, servers[ours.name])
        sample = json.loads(ours.run(evs[1], repo).stdout)["hookSpecificOutput"]["additionalContext"]
        for h in hooks:
            print(f"the hook process of {h.name} imports {imports_of(h, evs[1], repo)}")
    finally:
        for h in hooks:
            h.daemon("stop")
            shutil.rmtree(h.env["CODEAGENT_DAEMON_DIR"], ignore_errors=True)
    absent = Hook("this checkout, no daemon (fails open)", hook_command("claude-code").split(" ", 1)[1],
                  sys.executable)  # without CODEAGENT_DAEMON=1: no daemon is started
    for e in evs[:10]:
        absent.timed(e, repo, [])
    shutil.rmtree(absent.env["CODEAGENT_DAEMON_DIR"], ignore_errors=True)
    n = max(10, a.rounds * 5)
    rows = [floor([sys.executable, "-c", "pass"], n), floor([sys.executable, "-I", "-S", "-c", "pass"], n),
            *hooks, codex, absent]
    print("\n".join(r.row() for r in rows))
    print("(target: p95 <= 150 ms through the daemon; CPU = hook process + daemon + warm reader)")
    print("sample answer:\n" + sample)
    print(f"load average at end: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
