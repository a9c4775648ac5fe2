"""Crash harness for maintenance: SIGKILL `codeagent gc` and a self-repairing build at seeded
random points. A kept ref is never lost: after every kill it names a manifest whose objects
are all present (gc) or the next build repairs the store and `verify` passes (repair).

The kill point is a step of the operation (a write about to be renamed, a delete, an assembly
step: store.faults' CODEAGENT_TEST_KILL_AT), drawn from the steps the last finished run took,
so a loaded machine kills mid-way as often as a quiet one: a wall-time kill there mostly
landed after the end. Every command is forked from one process that imported the libraries
(relhelpers.BuildForker), not a fresh interpreter. CODEAGENT_LONG=1 runs 100 kills of each
(marked slow)."""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from relhelpers import BuildForker, Mutator, check_store, git, init_repo, record, seed_files

from codeagent import format as fmt
from codeagent.indexer.maintenance import verify_store
from codeagent.format.manifest import load_manifest
from codeagent.store import Store

LONG = os.environ.get("CODEAGENT_LONG") == "1"
SEED = int(os.environ.get("CODEAGENT_CRASH_SEED", "20261126"))
KEPT = ("heads/main", "worktree")


class StepKiller:
    """Runs a codeagent command killed at a random step of it (1..the steps of the last run of
    the same kind that finished; the first run of a kind finishes and counts them)."""

    def __init__(self, forker: BuildForker, root: Path, rng: random.Random) -> None:
        self.forker = forker
        self.log, self.err = root / "steps.log", root / "killed-out"
        self.rng = rng
        self.spans: dict[str, int] = {}
        self.killed_at: Counter[str] = Counter()  # the kind of step each kill landed on

    def run(self, kind: str, *args: str) -> bool:
        """True when the command was killed mid-way, False when it finished first."""
        self.log.unlink(missing_ok=True)
        env = {"CODEAGENT_TEST_STEPS": str(self.log), "CODEAGENT_DAEMON": "0"}
        if self.spans.get(kind):
            env["CODEAGENT_TEST_KILL_AT"] = str(self.rng.randint(1, self.spans[kind]))
        child = self.forker.command(*args, env=env, out=self.err)  # a session of its own
        code = child.wait(timeout=300)
        try:
            os.killpg(child.pid, signal.SIGKILL)  # parse workers of a killed build, if any lingered
        except ProcessLookupError:
            pass
        if code == -signal.SIGKILL:
            last = self.log.read_text().splitlines()[-1] if self.log.exists() else "start"
            self.killed_at[last.rsplit(" ", 1)[0]] += 1
            return True
        assert code == 0, Path(f"{self.err}.err").read_text(errors="replace")[-2000:]
        self.spans[kind] = len(self.log.read_text().splitlines()) if self.log.exists() else 0
        return False


def _kept_intact(store_dir: Path, expected: dict[str, str]) -> list[str]:
    """Problems of the kept refs: gone, moved, or naming an object the store lacks."""
    store = Store(store_dir)
    refs = store.list_refs()
    problems = []
    for ref, mid in expected.items():
        if refs.get(ref) != mid:
            problems.append(f"kept ref {ref} lost (now {refs.get(ref)})")
            continue
        missing = [o for o in load_manifest(store, mid).referenced_objects() if not store.has(o)]
        if missing:
            problems.append(f"kept ref {ref} names {len(missing)} deleted objects")
    return problems


def _repo(forker: BuildForker, root: Path, rng: random.Random) -> Path:
    repo = init_repo(root / "repo", seed_files(rng, 16))
    assert forker.run("build", repo, "--ref", "main").returncode == 0
    assert forker.run("build", repo).returncode == 0
    return repo


def run_gc_kills(forker: BuildForker, root: Path, kills: int, seed: int) -> dict:
    rng = random.Random(seed)
    repo = _repo(forker, root, rng)
    mutator = Mutator(repo, rng)
    store = repo / ".codeagent"
    expected = {r: m for r, m in Store(store).list_refs().items() if r in KEPT}
    stats = {"kills": 0, "finished": 0, "lost_refs": 0, "problems": []}
    killer = StepKiller(forker, root, rng)
    for i in range(kills):
        mutator.step()  # new garbage: a topic ref of the current tree
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", f"t{i}")
        git(repo, "branch", "-f", f"topic{i % 3}")
        assert forker.run("build", repo, "--ref", f"topic{i % 3}").returncode == 0
        if not killer.spans:  # an unkilled gc counts its steps, then new garbage for the kill
            assert not killer.run("gc", "gc", repo, "--keep-refs", "main", "--keep-refs", "worktree")
            assert forker.run("build", repo, "--ref", f"topic{i % 3}").returncode == 0
        killed = killer.run("gc", "gc", repo, "--keep-refs", "main", "--keep-refs", "worktree")
        stats["kills" if killed else "finished"] += 1
        problems = _kept_intact(store, expected)
        stats["lost_refs"] += sum("lost" in p for p in problems)
        problems += [f"{p.kind}: {p.name} {p.detail}" for p in verify_store(Store(store)).problems]
        stats["problems"] += [f"kill {i}: {p}" for p in problems]
    stats["killed_at"] = dict(killer.killed_at)
    done = forker.run("gc", repo, "--keep-refs", "main", "--keep-refs", "worktree", "--json")
    assert done.returncode == 0, done.stderr
    assert sorted(Store(store).list_refs()) == sorted(KEPT)
    return stats


DAMAGE = ("shards", "assembly", "manifest", "shards+assembly")


def _damage(store: Store, mid: str, damage: str, rng: random.Random) -> None:
    """What a build must repair: shards deleted, a byte of the assembled database flipped (it
    assembles again), the manifest deleted (it rebuilds it from the action cache)."""
    if "shards" in damage:
        shards = sorted(load_manifest(store, mid).shard_ids())
        for oid in rng.sample(shards, min(len(shards), rng.randint(1, 4))):
            store.object_path(oid).unlink()
    if "assembly" in damage:
        db = store.assembled_dir(mid) / fmt.DUCKDB_FILE
        if not db.exists():  # a work-tree overlay
            db = db.with_name(fmt.OVERLAY_FILE)
        data = bytearray(db.read_bytes())
        data[rng.randrange(len(data))] ^= 0xFF
        db.write_bytes(bytes(data))
    if damage == "manifest":
        store.object_path(mid).unlink()


def run_repair_kills(forker: BuildForker, root: Path, kills: int, seed: int) -> dict:
    rng = random.Random(seed)
    repo = _repo(forker, root, rng)
    store_dir = repo / ".codeagent"
    stats = {"kills": 0, "finished": 0, "lost_refs": 0, "problems": []}
    killer = StepKiller(forker, root, rng)
    for i in range(kills):
        store = Store(store_dir)
        mid = store.read_ref("worktree")
        damage = DAMAGE[i % len(DAMAGE)]
        if damage not in killer.spans:  # an unkilled repair of this kind counts its steps
            _damage(store, mid, damage, rng)
            assert not killer.run(damage, "build", repo, "--json")
        _damage(store, mid, damage, rng)
        killed = killer.run(damage, "build", repo, "--json")
        stats["kills" if killed else "finished"] += 1
        after = Store(store_dir).read_ref("worktree")
        if after is None:
            stats["lost_refs"] += 1
            stats["problems"].append(f"kill {i}: the worktree ref vanished")
            break
        repaired = forker.run("build", repo, "--json")
        if repaired.returncode != 0:
            stats["problems"].append(f"kill {i}: the build after the kill failed: {repaired.stderr[-300:]}")
            break
        problems, now = check_store(store_dir)
        stats["problems"] += [f"kill {i}: {p}" for p in problems]
        if now != mid:
            stats["problems"].append(f"kill {i}: repaired index {str(now)[:12]} is not {mid[:12]}")
    stats["killed_at"] = dict(killer.killed_at)
    return stats


def _check(name: str, stats: dict, kills: int, seconds: float) -> None:
    record(name, seed=SEED, runs=kills, sigkills=stats["kills"], finished_before_kill=stats["finished"],
           lost_refs=stats["lost_refs"], problems=len(stats["problems"]),
           killed_at=stats.get("killed_at"), seconds=round(seconds, 1))
    assert not stats["problems"], "\n".join(stats["problems"][:20])
    assert stats["lost_refs"] == 0
    assert stats["kills"] >= (kills - 1) * 0.8, f"only {stats['kills']} of {kills} runs were killed mid-way"


@pytest.mark.parametrize("kind", ["gc", "repair"])
def test_sigkill_during_maintenance_loses_no_ref(tmp_path: Path, kind: str) -> None:
    started = time.monotonic()
    kills = 6
    with BuildForker() as forker:
        stats = (run_gc_kills if kind == "gc" else run_repair_kills)(forker, tmp_path, kills, SEED)
    _check(f"crash-{kind}", stats, kills, time.monotonic() - started)


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="set CODEAGENT_LONG=1")
@pytest.mark.parametrize("kind", ["gc", "repair"])
def test_sigkill_during_maintenance_100_runs(tmp_path: Path, kind: str) -> None:
    started = time.monotonic()
    with BuildForker() as forker:
        stats = (run_gc_kills if kind == "gc" else run_repair_kills)(forker, tmp_path, 100, SEED + 1)
    _check(f"crash-{kind}-long", stats, 100, time.monotonic() - started)
