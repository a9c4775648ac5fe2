"""Where a fleet build's tasks run: in this machine's process pool (`local`) or on a Ray
cluster (`ray`, the optional extra). Both take the same task functions (tasks.py) and give
their answers back as they finish, with a bounded number in flight so the driver never holds
more than a few batches of file bytes."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from ...errors import InvalidParameter
from ..build import _die_with_parent
from ...runtime.pool import fork_pool

ENGINES = ("local", "ray")
RAY_TASK_RETRIES = 4  # a task whose worker died is run again (its writes are content-addressed)


class Engine(Protocol):
    workers: int

    def map_unordered(self, fn: Callable[..., Any], calls: Iterable[tuple]) -> Iterator[Any]: ...

    def close(self) -> None: ...


class LocalEngine:
    """A forked process pool of `workers` (1: in this process)."""

    def __init__(self, workers: int = 0) -> None:
        self.workers = workers or os.cpu_count() or 1
        self._pool = None

    def map_unordered(self, fn: Callable[..., Any], calls: Iterable[tuple]) -> Iterator[Any]:
        if self.workers == 1:
            for args in calls:
                yield fn(*args)
            return
        from concurrent.futures import FIRST_COMPLETED, wait  # stdlib; only a pooled build waits

        if self._pool is None:
            self._pool = fork_pool(self.workers, _die_with_parent)
        pending: set = set()
        for args in calls:
            pending.add(self._pool.submit(fn, *args))
            if len(pending) >= 2 * self.workers:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                yield from (f.result() for f in done)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            yield from (f.result() for f in done)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


class RayEngine:
    """Tasks on a Ray cluster: the one this process is connected to, else `address`, else a
    local one of `workers` CPUs started here (and stopped by `close`)."""

    def __init__(self, address: str | None = None, workers: int = 0) -> None:
        try:
            import ray  # the optional extra: only `--engine ray` needs it
        except ImportError:
            raise InvalidParameter("--engine ray needs the ray extra",
                                   hint="pip install 'codeagent[ray]', or use --engine local") from None
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(num_cpus=workers or os.cpu_count() or 1, include_dashboard=False,
                         log_to_driver=False, _node_ip_address="127.0.0.1")
            self._started = True
        self.workers = int(ray.cluster_resources().get("CPU", 1))
        self._remote: dict[Callable, Any] = {}

    def _task(self, fn: Callable[..., Any]):
        if fn not in self._remote:
            self._remote[fn] = self._ray.remote(max_retries=RAY_TASK_RETRIES, num_cpus=1)(fn)
        return self._remote[fn]

    def map_unordered(self, fn: Callable[..., Any], calls: Iterable[tuple]) -> Iterator[Any]:
        ray, task = self._ray, self._task(fn)
        pending: list = []
        for args in calls:
            pending.append(task.remote(*args))
            if len(pending) >= 2 * self.workers:
                done, pending = ray.wait(pending, num_returns=1)
                yield from ray.get(done)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield from ray.get(done)

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()


def open_engine(name: str, *, address: str | None = None, workers: int = 0) -> Engine:
    if name == "local":
        if address:
            raise InvalidParameter("--address is for --engine ray")
        return LocalEngine(workers)
    if name == "ray":
        return RayEngine(address, workers)
    raise InvalidParameter(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
