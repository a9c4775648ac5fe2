"""Crash harness: SIGKILL `codeagent build` at seeded random points, then check the store.

After every kill: `verify` finds nothing, the ref names the old manifest or a manifest of the
current tree, and that manifest's assembled dir is COMPLETE and holds it. Every
CHECKPOINT kills (and at the end): a build runs to completion, succeeds, yields the manifest
id a clean build of the same tree yields in a fresh store, and leaves no temp file.
The negative control runs the same harness against a torn-write (non-atomic) store writer and
must catch it. CODEAGENT_CRASH_KILLS / CODEAGENT_CRASH_SEED override N / the seed.

Half the kills come after a random wall time within the last finished build's span (anywhere:
the walk, the parse pool, the writes); the other half at a step of the store operation
(store.faults' CODEAGENT_TEST_KILL_AT), drawn from the last 40% of the steps the last finished
build took, the ref swap and the step just after it included. A one-file change is assembled
as an overlay in about a second, so kills timed by the clock alone mostly landed before the
swap and the "both sides of the swap" check failed by chance.

Each build is forked from one process that imported the build's libraries once
(relhelpers.BuildForker, as the watcher's builder forks its builds): a kill lands in the
build's work, not in the interpreter's start-up, and each kill costs the build only.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from relhelpers import (BuildForker, Mutator, check_store, clean_manifest_id, codeagent, init_repo,
                        manifest_matches_tree, record, seed_files, tmp_leftovers, whole_manifest_id)

LONG = os.environ.get("CODEAGENT_LONG") == "1"
# 30 kills in the fast tier (50 took 28 s of CI's 10 minutes); the long tier kills 500 times.
KILLS = int(os.environ.get("CODEAGENT_CRASH_KILLS", "500" if LONG else "30"))
SEED = int(os.environ.get("CODEAGENT_CRASH_SEED", "20261123"))
CHECKPOINT = 25


@dataclass
class CrashRun:
    attempts: int = 0
    killed: int = 0
    finished_first: int = 0
    ref_old: int = 0
    ref_new: int = 0
    tmp_left_by_kill: int = 0
    checkpoints: int = 0
    problems: list[str] = field(default_factory=list)
    ops: dict = field(default_factory=dict)
    spans: list = field(default_factory=list)  # (seconds, output) of builds run to completion
    steps: int = 0  # store steps the last build run to completion took


def _steps_env(env: dict | None, log: Path) -> dict:
    log.unlink(missing_ok=True)
    return {**(env or {}), "CODEAGENT_TEST_STEPS": str(log)}


def _steps_taken(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def _timed_build(forker: BuildForker, repo: Path, env: dict | None,
                 run: CrashRun | None = None) -> tuple[float, dict]:
    log, out = repo.parent / "steps.log", repo.parent / "build-out.json"
    started = time.monotonic()
    code = forker.spawn(repo, env=_steps_env(env, log), out=out).wait(timeout=300)
    elapsed = time.monotonic() - started
    if code != 0:
        err = Path(f"{out}.err").read_text(errors="replace").strip()
        return elapsed, {"error": f"exit {code}: {err[-1500:]}"}
    if run is not None:
        run.steps = _steps_taken(log)
    return elapsed, json.loads(out.read_text())


def _checkpoint(forker: BuildForker, run: CrashRun, repo: Path, store: Path, fresh: Path,
                env: dict | None) -> str | None:
    """Run the next build to completion and compare it with a clean build in a fresh store."""
    run.checkpoints += 1
    run.spans.append(_timed_build(forker, repo, env, run))
    out = run.spans[-1][1]
    if "error" in out:
        run.problems.append(f"checkpoint {run.checkpoints}: next build failed: {out['error']}")
        return check_store(store, open_db=False)[1]
    expected = clean_manifest_id(repo, fresh / f"clean-{run.checkpoints}")
    if whole_manifest_id(store, out["manifest_id"]) != expected:
        run.problems.append(f"checkpoint {run.checkpoints}: manifest {out['manifest_id'][:12]} "
                            f"!= clean build {expected[:12]}")
    left = tmp_leftovers(store)
    if left:
        run.problems.append(f"checkpoint {run.checkpoints}: temp files left: {left[:3]}")
    problems, mid = check_store(store)
    run.problems += [f"checkpoint {run.checkpoints}: {p}" for p in problems]
    return mid


def _after_kill(run: CrashRun, i: int, repo: Path, store: Path, prev: str | None) -> str | None:
    problems, mid = check_store(store, open_db=False)
    if mid is not None and mid != prev and not problems:
        problems, mid = check_store(store)
    if mid is None and prev is not None:
        problems.append(f"ref vanished (was {prev[:12]})")
    elif mid == prev:
        run.ref_old += 1
    elif mid is not None:
        why = manifest_matches_tree(store, mid, repo)
        if why:
            problems.append(f"ref names {mid[:12]}, neither old nor the current tree: {why}")
        run.ref_new += 1
    run.tmp_left_by_kill += bool(tmp_leftovers(store))
    run.problems += [f"kill {i}: {p}" for p in problems]
    return mid


def _exited_within(child, seconds: float) -> float | None:
    """How long the child ran, if it exited within `seconds`; None if it still runs."""
    started = time.monotonic()
    try:
        child.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None
    return time.monotonic() - started


def run_harness(root: Path, kills: int, seed: int, env: dict | None = None,
                stop_on_problem: bool = False) -> CrashRun:
    with BuildForker() as forker:
        return _kill_builds(forker, root, kills, seed, env, stop_on_problem)


def _kill_builds(forker: BuildForker, root: Path, kills: int, seed: int, env: dict | None,
                 stop_on_problem: bool) -> CrashRun:
    rng = random.Random(seed)
    repo = init_repo(root / "repo", seed_files(rng, 24))
    store = repo / ".codeagent"
    mutator = Mutator(repo, rng)
    run = CrashRun()
    _, out = _timed_build(forker, repo, None)
    assert "error" not in out, f"baseline build failed: {out}"
    mutator.step()
    span, out = _timed_build(forker, repo, env, run)
    assert "error" not in out, f"baseline build failed: {out}"
    prev = out["manifest_id"]
    log = root / "kill-steps.log"
    for i in range(kills):
        mutator.step()
        by_step = i % 2 == 0 and run.steps > 0
        if by_step:  # late: assembly, ref swap, what follows it
            at = rng.randint(max(1, int(run.steps * 0.6)), run.steps)
            child = forker.spawn(repo, env={**_steps_env(env, log), "CODEAGENT_TEST_KILL_AT": str(at)})
            child.wait()
            took = None if child.returncode == -signal.SIGKILL else 0.0
        else:
            child = forker.spawn(repo, env=_steps_env(env, log))
            took = _exited_within(child, span * rng.uniform(0.0, 1.0))
        run.attempts += 1
        if took is None:
            try:
                os.killpg(child.pid, signal.SIGKILL)  # the build, or workers of one killed at a step
            except ProcessLookupError:
                pass
            run.killed += 1
        else:
            run.finished_first += 1
            run.steps = _steps_taken(log) or run.steps
            if not by_step:
                span = (span + took) / 2  # the machine got faster (a parallel test ended): follow it
        child.wait()
        prev = _after_kill(run, i, repo, store, prev)
        if run.problems and stop_on_problem:
            break
        if (i + 1) % CHECKPOINT == 0 or i == kills - 1:
            prev = _checkpoint(forker, run, repo, store, root, env)
            # Follow the machine's current speed, by the quicker build: a one-file change is an
            # overlay (~1.5 s) but a checkpoint may consolidate (2-3x that), and kills timed by
            # the slow ones would mostly land after the quick ones finished.
            span = min(span, (span + run.spans[-1][0]) / 2)
            if run.problems and stop_on_problem:
                break
    run.ops = dict(mutator.ops)
    if not run.problems:
        verify = codeagent("verify", repo)
        if verify.returncode != 0:
            run.problems.append(f"final `codeagent verify` exited {verify.returncode}: {verify.stdout}")
    return run


def test_sigkill_during_builds_never_corrupts_the_store(tmp_path: Path) -> None:
    started = time.monotonic()
    run = run_harness(tmp_path, KILLS, SEED)
    record("crash", seed=SEED, attempts=run.attempts, sigkills=run.killed,
           finished_before_kill=run.finished_first, ref_old_after_kill=run.ref_old,
           ref_new_after_kill=run.ref_new, kills_leaving_tmp=run.tmp_left_by_kill,
           checkpoints=run.checkpoints, problems=len(run.problems),
           seconds=round(time.monotonic() - started, 1))
    assert not run.problems, "\n".join(run.problems[:20])
    assert run.killed >= KILLS * 0.6, f"only {run.killed} of {KILLS} builds were killed mid-way"
    assert run.ref_old and run.ref_new, "kills must land both before and after the ref swap"


def test_harness_catches_a_non_atomic_writer(tmp_path: Path) -> None:
    """Negative control: objects and refs written in place (torn on a kill) must be caught."""
    started = time.monotonic()
    run = run_harness(tmp_path, KILLS, SEED + 1, env={"CODEAGENT_TEST_NONATOMIC": "1"},
                      stop_on_problem=True)
    record("crash-negative-control", attempts=run.attempts, detected=bool(run.problems),
           first_problem=(run.problems[0][:80] if run.problems else "-"),
           seconds=round(time.monotonic() - started, 1))
    assert run.problems, f"{run.attempts} kills of a torn-write store went undetected"


def test_a_build_killed_while_pruning_leaves_no_half_deleted_assembly(tmp_path: Path, monkeypatch) -> None:
    """Deterministic version of a kill inside prune: rmtree stops after its first unlink.

    A half-deleted assembled dir that still holds COMPLETE would be taken as assembled when
    the tree returns to that manifest, and the ref would name an index without its DuckDB.
    """
    import shutil

    from codeagent.indexer.build import BuildOptions, build

    repo = init_repo(tmp_path / "repo", seed_files(random.Random(3), 4))
    store = repo / ".codeagent"
    original = (repo / "README.md").read_bytes()
    opts = BuildOptions(repo=repo, jobs=1)
    first = build(opts).manifest_id
    for n in (1, 2):
        (repo / "README.md").write_bytes(original + f"\nedit {n}\n".encode())
        if n == 2:
            real_rmtree = shutil.rmtree

            def killed_rmtree(path, *args, **kwargs):
                target = Path(path) / "index.duckdb"
                if target.exists():
                    target.unlink()
                raise KeyboardInterrupt("SIGKILL stand-in: the build died inside rmtree")

            monkeypatch.setattr(shutil, "rmtree", killed_rmtree)
            try:
                build(opts)
            except KeyboardInterrupt:
                pass
            monkeypatch.setattr(shutil, "rmtree", real_rmtree)
        else:
            build(opts)
    (repo / "README.md").write_bytes(original)
    again = build(opts).manifest_id
    assert again == first
    problems, mid = check_store(store)
    assert mid == first and not problems, problems
