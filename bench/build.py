"""Build benchmark on the stdlib corpus, against universal-ctags in the same run.

    python bench/build.py [--repeat 5] [--cold-repeat 1] [--jobs 0] [--corpus DIR]

Prints: cold build (and its scan / parse / assemble wall seconds), no-op rebuild,
one-file-change rebuild (medians; each in a fresh process, then again through a
`codeagent daemon` started for the run), files/s, MB/s, store size, peak RSS, and ctags -R
on the same files with the ratio. Wall and CPU (user+sys, pool
workers included) are both shown: on a loaded machine compare CPU. Targets (2 cores, no neural
embeddings): cold <= 8x ctags, no-op <= 0.25 s, one-file change <= 0.5 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ENV, median, print_table, stdlib_repo  # noqa: E402

# A fresh process per command unless a row says "daemon" (then a daemon of this run's own).


def run_with_rss(cmd: list[str], cwd: Path, env: dict | None = None) -> tuple[float, int, str, float]:
    """(wall seconds, peak RSS in KiB, stdout, CPU seconds) of one child process; CPU is
    user+sys of the child and the children it reaped (the parse pool), so it stays
    comparable when other work loads the machine."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env or ENV)
    out = proc.stdout.read() if proc.stdout else b""
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err.decode()}")
    return wall, usage.ru_maxrss, out.decode(), usage.ru_utime + usage.ru_stime


def spread(times: list[float]) -> str:
    """The range of a row's runs, for a median that sits near its target."""
    return f"{min(times):.3f}-{max(times):.3f} s over {len(times)}"


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _reaped_cpu(pid: int) -> float:
    """CPU seconds of the children `pid` has reaped (the daemon's commands)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def _wait_reaped(pid: int) -> None:
    """Until the daemon has reaped its commands (the client may exit first): their CPU is
    counted in the daemon's children times only then."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    for _ in range(200):
        if not children.read_text().strip():
            return
        time.sleep(0.01)


@contextlib.contextmanager
def started_daemon(python: str = sys.executable):
    """(the environment that routes `codeagent` commands to a daemon of `python` started for
    this run, a function giving the CPU seconds its forked commands used so far: call it
    after a command, it waits until the daemon has reaped it)."""
    with tempfile.TemporaryDirectory() as sock_dir:
        env = {**ENV, "CODEAGENT_DAEMON": "", "CODEAGENT_DAEMON_DIR": sock_dir}
        started = subprocess.run([python, "-m", "codeagent", "daemon", "start", "--json",
                                  "--idle-timeout", "600"], env=env, capture_output=True, text=True)
        if started.returncode:
            raise SystemExit(f"codeagent daemon start failed:\n{started.stderr}")
        pid = json.loads(started.stdout)["pid"]

        def reaped() -> float:
            _wait_reaped(pid)
            return _reaped_cpu(pid)

        try:
            yield env, reaped
        finally:
            subprocess.run([python, "-m", "codeagent", "daemon", "stop"], env=env, capture_output=True)


def through_daemon(build: list[str], cwd: Path, target: Path, original: bytes, repeat: int):
    """([wall], [CPU]) of no-op and of one-file-change builds sent to a daemon started for this
    run; CPU is the client's plus what the daemon's forked command used."""
    with started_daemon() as (env, reaped):
        def timed() -> tuple[float, float, str]:
            before = reaped()
            t, _, out, cpu = run_with_rss(build, cwd, env)
            return t, cpu + reaped() - before, out

        try:
            timed()  # the first command through a new daemon pays for nothing the others do not
            noop = [timed() for _ in range(repeat)]
            one = []
            for i in range(repeat):
                target.write_bytes(original + f"\n# daemon edit {i}\n".encode())
                one.append(timed())
                assert json.loads(one[-1][2])["files_parsed"] == 1, one[-1][2]
        finally:
            target.write_bytes(original)
    return ([r[0] for r in noop], [r[1] for r in noop]), ([r[0] for r in one], [r[1] for r in one])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cold-repeat", type=int, default=1,
                    help="cold builds to take the median of (each from an empty store)")
    ap.add_argument("--jobs", type=int, default=0)
    ap.add_argument("--corpus", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-build",
                    help="its own copy: other bench scripts share codeagent-bench-stdlib and its store")
    args = ap.parse_args()
    repo = stdlib_repo(args.corpus)
    shutil.rmtree(repo / ".codeagent", ignore_errors=True)
    # Builds run from outside the corpus: `python -m` from inside it would import the copied
    # stdlib and write its byte-code into the tree being indexed.
    subprocess.run(["git", "-C", str(repo), "clean", "-fdxq"], check=True)
    outside = Path(tempfile.mkdtemp(prefix="codeagent-bench-cwd-"))
    files = int(subprocess.check_output(["git", "-C", str(repo), "ls-files"], text=True).count("\n"))
    size = sum((repo / p).stat().st_size for p in
               subprocess.check_output(["git", "-C", str(repo), "ls-files"], text=True).splitlines())
    build = [sys.executable, "-m", "codeagent", "build", str(repo), "--json", "--jobs", str(args.jobs)]

    run_with_rss([sys.executable, "-m", "codeagent", "--help"], outside)  # warm the byte-code cache
    cold_runs = []
    for _ in range(max(1, args.cold_repeat)):
        shutil.rmtree(repo / ".codeagent", ignore_errors=True)
        cold_runs.append(run_with_rss(build, outside))
    cold_t, cold_cpu = median([r[0] for r in cold_runs]), median([r[3] for r in cold_runs])
    cold_rss, cold = max(r[1] for r in cold_runs), json.loads(cold_runs[-1][2])
    cold_phases = {k: median([json.loads(r[2])["phases"][k] for r in cold_runs])
                   for k in ("scan", "parse", "assemble")}
    noop_runs = [run_with_rss(build, outside) for _ in range(args.repeat)]
    noop, noop_cpu = [r[0] for r in noop_runs], [r[3] for r in noop_runs]
    target = repo / "json" / "encoder.py"
    original = target.read_bytes()
    one, one_cpu = [], []
    try:
        for i in range(args.repeat):
            target.write_bytes(original + f"\n# edit {i}\n".encode())
            t, _, out, cpu = run_with_rss(build, outside)
            assert json.loads(out)["files_parsed"] == 1, out
            one.append(t)
            one_cpu.append(cpu)
    finally:
        target.write_bytes(original)
    daemon_noop, daemon_one = through_daemon(build, outside, target, original, args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        ctags = ["ctags", "-R", "--exclude=.codeagent", "-f", str(Path(tmp) / "tags"), "."]
        ctags_runs = [run_with_rss(ctags, repo) for _ in range(args.repeat)]
    shutil.rmtree(outside, ignore_errors=True)
    ct, ct_cpu = median([r[0] for r in ctags_runs]), median([r[3] for r in ctags_runs])
    jobs = args.jobs or os.cpu_count() or 1
    rows = [
        ["cold build" + (" (median)" if len(cold_runs) > 1 else ""), f"{cold_t:.2f} s", f"{cold_cpu:.2f} s",
         f"{cold_t / ct:.1f}x ctags wall, {cold_cpu / ct_cpu:.1f}x CPU "
         f"({cold_cpu / jobs / ct_cpu:.1f}x CPU/{jobs} jobs)", "<= 8x ctags"],
        ["  cold: scan / parse / assemble", " / ".join(f"{v:.2f}" for v in cold_phases.values()) + " s",
         "", "wall, from `build --json` phases", ""],
        ["no-op rebuild (median)", f"{median(noop):.3f} s", f"{median(noop_cpu):.3f} s", spread(noop), "<= 0.25 s"],
        ["one-file change (median)", f"{median(one):.3f} s", f"{median(one_cpu):.3f} s", spread(one), "<= 0.5 s"],
        ["no-op rebuild, daemon (median)", f"{median(daemon_noop[0]):.3f} s",
         f"{median(daemon_noop[1]):.3f} s", "`daemon start` first; " + spread(daemon_noop[0]), "<= 0.25 s"],
        ["one-file change, daemon (median)", f"{median(daemon_one[0]):.3f} s",
         f"{median(daemon_one[1]):.3f} s", "`daemon start` first; " + spread(daemon_one[0]), "<= 0.5 s"],
        ["ctags -R (median)", f"{ct:.2f} s", f"{ct_cpu:.2f} s", "1.0x", ""],
        ["files / s (cold)", f"{files / cold_t:.0f}", "", f"{files} files", ""],
        ["MB / s (cold)", f"{size / 1e6 / cold_t:.1f}", "", f"{size / 1e6:.1f} MB", ""],
        ["store size", f"{dir_bytes(repo / '.codeagent') / 1e6:.1f} MB", "", "", ""],
        ["peak RSS (cold build)", f"{cold_rss / 1024:.0f} MiB", "", "", ""],
        ["files parsed (cold)", str(cold["files_parsed"]), "", f"{cold['files_skipped']['total']} skipped", ""],
    ]
    print(f"corpus: {repo} ({files} files, {size / 1e6:.1f} MB), jobs={args.jobs or os.cpu_count()}, "
          f"repeat={args.repeat}, cold repeat={len(cold_runs)}")
    print_table(["measure", "wall", "CPU (user+sys)", "ratio / note", "target"], rows)


if __name__ == "__main__":
    main()
