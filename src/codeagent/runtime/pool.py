"""The build's process pools: forked (workers inherit what the parent loaded), with Ctrl-C
held while they fork so that it never lands in the fork's hooks or a half-started pool, and
left to the parent in the workers."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

from ..interrupts import held, ignore_in_worker


def fork_pool(workers: int, initializer: Callable[[], None] | None = None) -> ProcessPoolExecutor:
    """A started pool of `workers` forked processes, each running `initializer` first."""
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_worker_start, initargs=(initializer,),
                               mp_context=multiprocessing.get_context("fork"))
    try:
        with held():
            pool.submit(int)  # a fork-context pool forks all its workers (and its threads) on the first submit
    except BaseException:  # a Ctrl-C held back, raised now: the caller never gets the pool to close
        # Waited for: a manager thread still closing its wakeup pipe races the interpreter's
        # exit hook writing to it (concurrent.futures, Python 3.11: EBADF, exit 1). The workers
        # ignore Ctrl-C and take the stop sentinel at once.
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    return pool


def _worker_start(initializer: Callable[[], None] | None) -> None:
    ignore_in_worker()
    if initializer is not None:
        initializer()
