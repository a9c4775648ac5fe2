"""Ctrl-C (SIGINT to the command's process group, as a terminal sends it) at spread points of
a build: exit 130, one line on stderr, no traceback, and the store still verifies with its ref
on the previous index or the new one."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import textwrap
import time
from pathlib import Path

from codeagent.indexer.build import BuildOptions, build
from relhelpers import PY, Mutator, check_store, codeagent, init_repo, record, seed_files

LONG = os.environ.get("CODEAGENT_LONG") == "1"
INTERRUPT_LINES = ("interrupted: codeagent build stopped; the store is consistent",
                   "interrupted: codeagent stopped while starting; nothing was changed")


def _interrupt(args: list[str], delay: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    child = subprocess.Popen([PY, "-m", "codeagent", *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True,
                             env={**os.environ, "CODEAGENT_DAEMON": "0", **(env or {})})
    try:
        child.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGINT)
    out, err = child.communicate(timeout=120)
    return subprocess.CompletedProcess(args, child.returncode, out, err)


def _timed(*args: object) -> float:
    started = time.monotonic()
    assert codeagent(*args).returncode == 0
    return time.monotonic() - started


def test_sigint_during_a_build_exits_130_with_one_line(tmp_path: Path) -> None:
    rng = random.Random(130)
    repo = init_repo(tmp_path / "repo", seed_files(rng, 120))
    store = repo / ".codeagent"
    cold = _timed("build", repo, "--store", tmp_path / "timing")
    assert codeagent("build", repo).returncode == 0
    mutator = Mutator(repo, rng)
    for _ in range(4):
        mutator.step()
    incremental = _timed("build", repo)
    interrupted = finished = 0
    runs = 10 if LONG else 6  # each a fresh interpreter interrupted, then a build run to the end
    # The spread delays come from builds timed a moment ago; a load that eases meanwhile can
    # make a build end before its delay. So the runs that finished first are made up by runs
    # interrupted at their first store step (CODEAGENT_TEST_KILL_AT, a point measured in
    # progress, not in wall time) of an incremental build, which always land mid-build: the
    # count below never waits on load.
    for i in range(runs + runs // 2 + 1):
        topping_up = i >= runs
        if topping_up and interrupted >= runs // 2:
            break
        fraction = 0.15 + 0.85 * rng.random()  # start-up, parse, assembly, swap
        if i % 2 or topping_up:  # an incremental build over a previous index
            for _ in range(4):
                mutator.step()
            target, args = store, ["build", str(repo)]
            delay = incremental * fraction
        else:  # a cold build: parse pool workers get the SIGINT too
            target = tmp_path / f"cold{i}"
            args = ["build", str(repo), "--store", str(target)]
            delay = cold * fraction
        before = check_store(target, open_db=False)[1] if target.exists() else None
        at_step = {"CODEAGENT_TEST_KILL_AT": "1", "CODEAGENT_TEST_KILL_SIGNAL": "INT"} if topping_up else None
        proc = _interrupt(args, 3600.0 if topping_up else delay, at_step)
        lines = proc.stderr.strip().splitlines()
        if proc.returncode == 0:
            finished += 1
        else:
            interrupted += 1
            assert proc.returncode == 130, proc.stderr[-2000:]
            assert len(lines) == 1 and lines[0].startswith(INTERRUPT_LINES), proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr
        if target.exists() and (target / "refs").exists():
            problems, after = check_store(target)
            assert not problems, problems
            if before is not None:
                assert after is not None, "the interrupted build lost the previous index"
        assert codeagent(*args).returncode == 0
        assert not check_store(target)[0]
    record("interrupts", runs=runs, interrupted=interrupted, finished_first=finished)
    assert interrupted >= runs // 2, f"only {interrupted} of {runs} builds were interrupted"


def test_a_ctrl_c_while_a_store_is_first_made_leaves_no_index_not_a_strange_folder(tmp_path: Path) -> None:
    """Ctrl-C at a cold build's first store step (the store's marker, about to be renamed into
    place): exit 130 with the one line; the folder then reads as no index (exit 5, the build
    command named), and the next build makes the store."""
    repo = init_repo(tmp_path / "repo", seed_files(random.Random(7), 5))
    target = tmp_path / "fresh"
    args = ["build", str(repo), "--store", str(target)]
    proc = _interrupt(args, 3600.0, {"CODEAGENT_TEST_KILL_AT": "1", "CODEAGENT_TEST_KILL_SIGNAL": "INT"})
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip().startswith(INTERRUPT_LINES) and "Traceback" not in proc.stderr
    for command in ("status", "verify", "gc"):  # verify and gc said exit 7, "not a codeagent store"
        proc = codeagent(command, str(repo), "--store", str(target))
        assert proc.returncode == 5, (command, proc.stderr)
        assert "codeagent build" in proc.stderr
    assert codeagent(*args).returncode == 0
    assert not check_store(target)[0]


def _steps(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_ctrl_c_at_every_step_of_gc_and_of_an_assembly_exits_130(tmp_path: Path) -> None:
    """A Ctrl-C landed at a known step (store.faults: CODEAGENT_TEST_KILL_SIGNAL=INT) of gc
    (its deletes) and of a build's assembly (its steps): exit 130, the one line, the store
    verifying with the kept ref intact; the next run finishes the job."""
    # The builds that only set the scene (an index to keep, garbage for gc) and the ones that
    # finish an interrupted build run in this process: only the interrupted commands and the
    # ones whose steps are counted need a `codeagent` process of their own (~0.6 CPU-s each).
    rng = random.Random(131)
    repo = init_repo(tmp_path / "repo", seed_files(rng, 12))
    build(BuildOptions(repo=repo, rev="main", jobs=1))
    build(BuildOptions(repo=repo, jobs=1))
    log = tmp_path / "steps.log"
    outcomes: dict[str, int] = {}
    counter = iter(range(10_000))

    def change() -> None:  # the same shape of change each time: the same steps to land on
        for path in rng.sample(sorted(repo.glob("pkg/mod*.py")), 3):
            path.write_text(path.read_text() + f"\n\ndef extra_{next(counter)}():\n    return 1\n")
        if gc:
            build(BuildOptions(repo=repo, jobs=1))  # garbage: the worktree's previous index

    for gc in (False, True):
        args = ["gc", str(repo), "--keep-refs", "main"] if gc else ["build", str(repo)]
        change()
        log.unlink(missing_ok=True)
        assert codeagent(*args, env={"CODEAGENT_TEST_STEPS": str(log), "CODEAGENT_DAEMON": "0"}).returncode == 0
        steps = log.read_text().splitlines()
        wanted = [i for i, step in enumerate(steps, 1) if step.startswith(("assemble", "delete"))]
        assert wanted, f"{args[0]} took no step to interrupt: {steps}"
        for at in sorted(rng.sample(wanted, min(len(wanted), 6))):
            change()
            log.unlink(missing_ok=True)
            proc = codeagent(*args, env={"CODEAGENT_TEST_KILL_AT": str(at), "CODEAGENT_TEST_KILL_SIGNAL": "INT",
                                         "CODEAGENT_TEST_STEPS": str(log), "CODEAGENT_DAEMON": "0"})
            key = f"{args[0]}_exit_{proc.returncode}"
            outcomes[key] = outcomes.get(key, 0) + 1
            if proc.returncode == 0 and len(log.read_text().splitlines()) < at:
                continue  # this gc had less garbage than the one measured: it ended first
            lines = proc.stderr.strip().splitlines()
            assert proc.returncode == 130, (at, steps, proc.stderr[-2000:])
            assert len(lines) == 1 and lines[0].startswith(f"interrupted: codeagent {args[0]} stopped"), proc.stderr
            problems, _ = check_store(repo / ".codeagent")
            assert not problems, problems
            if gc:
                assert codeagent(*args).returncode == 0
            else:
                build(BuildOptions(repo=repo, jobs=1))
                assert not check_store(repo / ".codeagent")[0]
    record("interrupts-at-steps", **outcomes)
    assert outcomes.get("build_exit_130", 0) >= 3 and outcomes.get("gc_exit_130", 0) >= 2, outcomes


def test_ctrl_c_inside_the_parse_pool_fork_exits_130_with_one_line(tmp_path: Path) -> None:
    """The Ctrl-C a terminal sends to the whole group, landed inside each fork of the parse
    pool's start-up (store.faults: CODEAGENT_TEST_INT_AT_FORK, sent from the parent's at-fork
    hooks, where logging's run, while the child starts): once printed a traceback from the
    hook or from the worker's initializer, and could leave a pool without its manager thread
    that the exit then waited on forever. Now: exit 130, the one line; a previous index stays."""
    repo = init_repo(tmp_path / "repo", seed_files(random.Random(132), 80))
    kept = tmp_path / "kept"
    assert codeagent("build", repo, "--store", kept, "--jobs", "2").returncode == 0
    previous = check_store(kept)[1]
    for path in repo.rglob("*.py"):  # enough to parse that the incremental build starts the pool too
        path.write_text(path.read_text() + "\n# changed\n")
    for fork in (1, 2):
        for target in (tmp_path / f"cold{fork}", kept):
            proc = subprocess.run([PY, "-m", "codeagent", "build", str(repo), "--store", str(target),
                                   "--jobs", "2"],
                                  capture_output=True, text=True, timeout=120, start_new_session=True,
                                  env={**os.environ, "CODEAGENT_DAEMON": "0",
                                       "CODEAGENT_TEST_INT_AT_FORK": str(fork)})
            lines = proc.stderr.strip().splitlines()
            assert proc.returncode == 130, (fork, target.name, proc.stderr[-2000:])
            assert len(lines) == 1 and lines[0].startswith(INTERRUPT_LINES[0]), proc.stderr[-2000:]
            problems, now = check_store(target)
            assert not problems, problems
            if target == kept:
                assert now == previous, "the interrupted build lost the previous index"
    assert codeagent("build", repo, "--store", kept).returncode == 0


def test_a_pool_a_ctrl_c_stops_in_its_start_up_is_gone_before_the_exit() -> None:
    """A Ctrl-C held through a pool's start-up is raised once the pool has forked; the pool is
    shut down then. Shut down without waiting, its manager thread was still closing its wakeup
    pipe when the interpreter's exit wrote to that pipe (concurrent.futures' exit hook, not
    under the pool's lock, Python 3.11): now and then `OSError: [Errno 9] Bad file descriptor`
    and exit 1 instead of 130 and the one line. Now no thread of the pool outlives it."""
    script = textwrap.dedent("""
        import sys
        import threading
        from concurrent.futures import process
        from codeagent import interrupts
        from codeagent.runtime.pool import fork_pool
        from codeagent.store import faults

        faults.install(faults.Faults(int_at_fork=int(sys.argv[1])))

        interrupts.install()
        try:
            fork_pool(2)
            print("no Ctrl-C")
        except KeyboardInterrupt:
            alive = [t for t in threading.enumerate() if isinstance(t, process._ExecutorManagerThread)]
            print("stopped", len(alive))
    """)
    for fork in (1, 2):
        proc = subprocess.run([PY, "-c", script, str(fork)], capture_output=True, text=True, timeout=120,
                              start_new_session=True)
        assert (proc.stdout.strip(), proc.stderr, proc.returncode) == ("stopped 0", "", 0), fork


def test_a_ctrl_c_a_callback_drops_is_delivered_again() -> None:
    """Python prints and drops an exception raised in a weakref callback (or a finalizer, or a
    fork hook): a Ctrl-C landing there is delivered again outside it, without a traceback."""
    script = textwrap.dedent("""
        import os, signal, sys, time, weakref
        from codeagent import interrupts

        class Thing:
            pass

        interrupts.install()
        thing = Thing()
        ref = weakref.ref(thing, lambda r: os.kill(os.getpid(), signal.SIGINT))
        try:
            del thing
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                pass
            print("lost")
        except KeyboardInterrupt:
            print("delivered", interrupts.interrupted())
    """)
    proc = subprocess.run([PY, "-c", script], capture_output=True, text=True, timeout=120)
    assert (proc.stdout.strip(), proc.stderr) == ("delivered True", "")


def test_a_ctrl_c_while_the_arguments_are_parsed_exits_130_with_one_line(tmp_path: Path) -> None:
    """A Ctrl-C that lands before the command takes Ctrl-C over (the watcher cancels a build as
    soon as its process is forked) is an interrupted command too: exit 130 and the one line,
    not click's "Aborted!" and exit 1."""
    script = textwrap.dedent("""
        import os, signal, sys
        from codeagent.runtime.daemon.run import run_cli

        def sigint_in(name):
            def hook(frame, event, arg):
                if event == "call" and frame.f_code.co_name == name:
                    sys.setprofile(None)
                    os.kill(os.getpid(), signal.SIGINT)
            return hook

        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.setprofile(sigint_in(sys.argv[1]))
        print(run_cli(["status", sys.argv[2]], "codeagent"))
    """)
    for where in ("parse_args", "invoke"):
        proc = subprocess.run([PY, "-c", script, where, str(tmp_path)], capture_output=True, text=True,
                              timeout=120)
        assert proc.stdout.strip() == "130", (where, proc.stdout, proc.stderr)
        assert "Aborted" not in proc.stderr and proc.stderr.count("interrupted: codeagent") == 1, \
            (where, proc.stderr)
