"""`codeagent org build --engine ray` on a real local Ray cluster: the manifests of the local
engine, and a worker killed mid-build changes nothing (its task runs again and writes the same
bytes under the same names). One test: a cluster takes ~10 s to start."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'codeagent[ray]')")

from codeagent.indexer.fleet.engines import LocalEngine, RayEngine  # noqa: E402
from codeagent.indexer.fleet.plan import build_fleet  # noqa: E402
from codeagent.indexer.fleet.spec import load_fleet  # noqa: E402
from codeagent.indexer.maintenance import verify_store  # noqa: E402
from codeagent.store import Store  # noqa: E402


def _task_pids(title: str) -> list[int]:
    """Pids of this machine's Ray workers running a task of this name (Ray sets the process
    title to `ray::<task>` while it runs one)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if fh.read().startswith(title.encode()):
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


class WorkerKiller(threading.Thread):
    """Kills the first Ray worker seen running a parse task."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.killed: list[int] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set() and not self.killed:
            for pid in _task_pids("ray::parse_batch"):
                os.kill(pid, signal.SIGKILL)
                self.killed.append(pid)
                break
            time.sleep(0.005)


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_build_matches_local_and_survives_a_killed_worker(cluster, fleet, tmp_path: Path):
    local = build_fleet(load_fleet(fleet["file"]), Store(tmp_path / "local", create=True), LocalEngine(1))
    store = Store(tmp_path / "ray", create=True)
    killer = WorkerKiller()
    killer.start()
    engine = RayEngine()
    try:  # one file a task: a parse is running for most of the build, so there is one to kill
        result = build_fleet(load_fleet(fleet["file"]), store, engine, batch_files=1)
    finally:
        killer.stop.set()
        engine.close()
    assert killer.killed, "no parse task was seen running: nothing was killed"
    assert result.engine == "ray" and result.workers == 2
    ids = {(n, p.ref): p.manifest_id for n, plans in result.repos.items() for p in plans}
    assert ids == {(n, p.ref): p.manifest_id for n, plans in local.repos.items() for p in plans}
    assert result.blobs_parsed == local.blobs_parsed
    assert all(store.is_assembled(mid) for mid in ids.values())
    assert verify_store(store).ok
