"""Concurrency: readers querying while builds swap the ref; two builders on one store."""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from pathlib import Path

from relhelpers import PY, check_store, codeagent, init_repo, py_module, record, spawn_build

HERE = Path(__file__).resolve().parent
LONG = os.environ.get("CODEAGENT_LONG") == "1"
# 12 swaps in the fast tier keep CI's run within its 10 minutes (each swap is a build while four
# readers query, ~1.5 s and ~2 CPU-seconds on 2 cores; 20 took 30 s); the long tier swaps 300 times.
SWAPS = int(os.environ.get("CODEAGENT_SWAPS", "300" if LONG else "12"))
READERS = [("raw", 1), ("engine", 2), ("open", 1)]  # reader_child.py's modes


def _version_files(n: int) -> dict[str, str]:
    return {"version.py": f"VERSION = {n}\n\n\ndef version_{n}():\n    return {n}\n",
            "notes.txt": f"marker {n}\n"}


def _write(repo: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (repo / rel).write_text(text)


def test_readers_never_see_errors_or_mixed_manifests_while_builds_swap(tmp_path: Path) -> None:
    """Readers of every kind (raw DuckDB, a server's follower, a command's fresh view) during
    SWAPS builds, each changing the version and adding or removing a file: no error, and every
    answer (file count, a file's bytes, symbol, text and regex hits) from one manifest."""
    from codeagent.indexer.build import BuildOptions, build

    rng = random.Random(7)
    repo = init_repo(tmp_path / "repo", {**_version_files(0), "a.py": py_module(rng, 0)})
    opts = BuildOptions(repo=repo, jobs=1)
    produced = {build(opts).manifest_id}
    stop = tmp_path / "stop"
    modes = [m for m, n in READERS for _ in range(n)]
    readers = [subprocess.Popen([PY, str(HERE / "reader_child.py"), str(repo / ".codeagent"),
                                 str(repo), mode, str(stop)], stdout=subprocess.PIPE, text=True)
               for mode in modes]
    started = time.monotonic()
    try:
        time.sleep(1.0)  # let every reader start querying
        for i in range(1, SWAPS + 1):
            _write(repo, _version_files(i))
            extra = repo / f"extra{i % 7}.py"
            if extra.exists() and rng.random() < 0.5:
                extra.unlink()
            else:
                extra.write_text(py_module(rng, i))
            produced.add(build(opts).manifest_id)
    finally:
        build_seconds = time.monotonic() - started
        stop.write_text("stop")
        outputs = [r.communicate(timeout=60)[0] for r in readers]
    assert all(r.returncode == 0 for r in readers), [r.returncode for r in readers]
    results = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    totals = {k: sum(r["counts"][k] for r in results) for k in ("queries", "errors", "mixed", "retries")}
    strays = {m for r in results for m in r["seen"]} - produced
    record("concurrency-readers", readers=len(readers), modes="+".join(sorted(set(modes))),
           swaps=SWAPS, **totals, manifests_seen=len({m for r in results for m in r["seen"]}),
           stray_manifests=len(strays), seconds=round(build_seconds, 1))
    details = [e for r in results for e in r["errors"]]
    assert totals["errors"] == 0 and totals["mixed"] == 0, "\n".join(details[:20])
    assert not strays, f"readers saw manifests no build produced: {strays}"
    assert totals["queries"] >= 10 * len(readers)
    assert all(r["counts"]["manifests_seen"] > 1 for r in results), "some reader never saw a swap"


def test_two_builders_at_once_are_serialised_by_the_lock(tmp_path: Path) -> None:
    rng = random.Random(8)
    repo = init_repo(tmp_path / "repo", {f"m{i}.py": py_module(rng, i) for i in range(12)})
    assert codeagent("build", repo).returncode == 0
    rounds, conflicts, problems = (12 if LONG else 8), 0, []  # 2 fresh `codeagent build`s a round
    for n in range(rounds):
        (repo / f"m{n}.py").write_text(py_module(rng, 100 + n))
        wait = ["--wait", "60"] if n % 4 == 3 else []
        pair = [subprocess.Popen([PY, "-m", "codeagent", "build", str(repo), *wait],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(2)]
        outs = [(p.wait(timeout=120), *p.communicate()) for p in pair]
        codes = sorted(rc for rc, _, _ in outs)
        for rc, _out, err in outs:
            if rc == 8:
                conflicts += 1
                if "another build holds the store lock" not in err or "--wait" not in err:
                    problems.append(f"round {n}: unclear lock message: {err[-300:]}")
            elif rc != 0:
                problems.append(f"round {n}: exit {rc}: {err[-300:]}")
        if wait and codes != [0, 0]:
            problems.append(f"round {n}: with --wait both must succeed, got {codes}")
        if 0 not in codes:
            problems.append(f"round {n}: no builder succeeded: {codes}")
        store_problems, mid = check_store(repo / ".codeagent")
        problems += [f"round {n}: {p}" for p in store_problems]
    verify = codeagent("verify", repo)
    record("concurrency-builders", rounds=rounds, lock_conflicts_exit_8=conflicts,
           problems=len(problems), verify_exit=verify.returncode)
    assert not problems, "\n".join(problems)
    assert conflicts > 0, "the two builders never overlapped: the lock was not exercised"
    assert verify.returncode == 0, verify.stdout


def test_a_killed_builders_pool_workers_do_not_keep_the_lock(tmp_path: Path) -> None:
    """SIGKILL only the build's main process while its parser pool runs: the next build
    must get the lock (flock is shared with forked workers until they exit)."""
    import signal

    rng = random.Random(11)
    repo = init_repo(tmp_path / "repo", {f"p{i}.py": py_module(rng, i) for i in range(150)})
    child = spawn_build(repo, "-j", "2")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (repo / ".codeagent" / "objects").exists():
        time.sleep(0.05)
    time.sleep(0.3)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    orphans_gone = False
    gone_by = time.monotonic() + 60  # a deadline, not 100 polls: a loaded machine is slow to reap
    while time.monotonic() < gone_by:  # the parser workers must die with their parent (PR_SET_PDEATHSIG)
        try:
            os.killpg(child.pid, 0)
        except ProcessLookupError:
            orphans_gone = True
            break
        time.sleep(0.05)
    started = time.monotonic()
    try:
        proc = codeagent("build", repo, "--wait", "30")
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)  # the orphaned workers (they do not exit alone)
        except ProcessLookupError:
            pass
    waited = time.monotonic() - started
    record("concurrency-orphaned-workers", next_build_exit=proc.returncode, seconds=round(waited, 1),
           workers_died_with_parent=orphans_gone)
    assert proc.returncode == 0, proc.stderr
    assert orphans_gone, "the killed build's parser workers are still running"
    problems, _ = check_store(repo / ".codeagent")
    assert not problems, problems
