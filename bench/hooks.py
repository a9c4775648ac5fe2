"""Latency of the Claude Code Grep/Glob hook on the standard-library corpus, through the daemon.

    python bench/hooks.py [--dest DIR] [--rounds N]

Runs the hook command `codeagent install claude-code --hooks` writes (the console script with
`hook claude-code`, CODEAGENT_DAEMON=1, the event JSON on stdin) as Claude Code runs it, once
per event of a fixed set of Grep and Glob calls, and prints p50/p95 wall time per call: through
the daemon (its warm reader started first, as the session's first hook starts it), and a few
in-process calls for comparison. Target: p95 <= 150 ms through the daemon. The daemon runs in a
socket directory of this run only, so no other user's daemon is touched.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import median, percentile, stdlib_repo  # noqa: E402

from codeagent.clients.install import codeagent_command  # noqa: E402

GREPS = [r"def urlopen", r"class JSONDecoder", r"TimeoutError", r"def parse_args\(", r"HTTPConnection",
         r"getaddrinfo", r"def dumps", r"class Thread\b", r"SimpleNamespace", r"def run_until_complete"]
GLOBS = ["**/json/*.py", "**/*parser*.py", "**/asyncio/*.py", "**/http/client.py", "**/email/*.py"]


def events(repo: Path) -> list[dict]:
    out = [{"tool_name": "Grep", "tool_input": {"pattern": p}} for p in GREPS]
    out += [{"tool_name": "Glob", "tool_input": {"pattern": p}} for p in GLOBS]
    return [{**e, "hook_event_name": "PostToolUse", "cwd": str(repo), "tool_response": {}} for e in out]


def call(exe: list[str], event: dict, env: dict, cwd: Path) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run([*exe, "hook", "claude-code"], input=json.dumps(event), env=env, cwd=cwd,
                          capture_output=True, text=True)
    return (time.perf_counter() - t) * 1000, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dest", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-stdlib")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    from codeagent.indexer.build import BuildOptions, build

    repo = stdlib_repo(a.dest)
    build(BuildOptions(repo=repo, rev="main"))
    exe = codeagent_command()
    sock_dir = tempfile.mkdtemp(prefix="codeagent-hook-bench-")
    env = {**os.environ, "CODEAGENT_DAEMON": "1", "CODEAGENT_DAEMON_DIR": sock_dir}
    evs = events(repo)
    subprocess.run([*exe, "daemon", "start"], env=env, capture_output=True, check=False)
    try:
        for _ in range(40):  # the first calls start the warm reader; wait until it answers
            got = subprocess.run([*exe, "hook", "claude-code"], input=json.dumps(evs[0]),
                                 env={**env, "CODEAGENT_DAEMON_DEBUG": "1"}, cwd=repo,
                                 capture_output=True, text=True)
            if "answered by the warm reader" in got.stderr:
                break
            time.sleep(0.5)
        daemon = []
        answered = 0
        for _ in range(a.rounds):
            for e in evs:
                ms, out = call(exe, e, env, repo)
                daemon.append(ms)
                answered += bool(out.strip())
        sample = json.loads(call(exe, evs[1], env, repo)[1])["hookSpecificOutput"]["additionalContext"]
        search = []  # the same daemon's plain `codeagent search`: what the machine's load allows
        for _ in range(a.rounds):
            for p in GREPS[:5]:
                t = time.perf_counter()
                subprocess.run([*exe, "search", p.split()[-1], "--repo", str(repo)], env=env,
                               capture_output=True, check=False)
                search.append((time.perf_counter() - t) * 1000)
    finally:
        subprocess.run([*exe, "daemon", "stop"], env=env, capture_output=True, check=False)
    cold = [call(exe, e, {**os.environ, "CODEAGENT_DAEMON": "0"}, repo)[0] for e in evs[:5]]
    print(f"hook calls through the daemon: {len(daemon)} ({answered} with hits), "
          f"p50 {median(daemon):.1f} ms, p95 {percentile(daemon, 95):.1f} ms (target p95 <= 150 ms)")
    print(f"reference, `codeagent search` through the same daemon: {len(search)} calls, "
          f"p50 {median(search):.1f} ms, p95 {percentile(search, 95):.1f} ms")
    print(f"in-process (no daemon): {len(cold)} calls, p50 {median(cold):.1f} ms, p95 {percentile(cold, 95):.1f} ms")
    print("sample answer:\n" + sample)
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
