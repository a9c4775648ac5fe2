"""The watchdog calls each armed function once its deadline passes, never a disarmed one."""

from __future__ import annotations

import threading
import time

from codeagent.query.watchdog import Watchdog


def test_fires_in_deadline_order_and_skips_disarmed():
    """Load-safe: the watchdog's lock is held while arming (nothing fires before the disarm
    however long the arms take), and the deadlines are far enough apart that no stall between
    two arms can swap them."""
    dog = Watchdog()
    fired: list[str] = []
    done = threading.Event()
    with dog._cond:
        dog.arm(2.0, lambda: (fired.append("late"), done.set()))
        dog.arm(0.05, lambda: fired.append("early"))
        cancelled = dog.arm(0.02, lambda: fired.append("cancelled"))
        dog.disarm(cancelled)
    assert done.wait(60)
    assert fired == ["early", "late"]


def test_disarmed_before_its_deadline_never_fires_and_one_thread_serves_all():
    dog = Watchdog()
    fired: list[int] = []
    with dog._cond:  # nothing fires until every disarm is done, however loaded the machine
        tokens = [dog.arm(0.05, lambda i=i: fired.append(i)) for i in range(50)]
        for t in tokens[:49]:
            dog.disarm(t)
    deadline = time.monotonic() + 60
    while not fired and time.monotonic() < deadline:  # 49 comes after every disarmed deadline
        time.sleep(0.01)
    assert fired == [49]
    assert sum(t.name == "codeagent-watchdog" for t in threading.enumerate()) >= 1
    before = threading.active_count()
    for _ in range(20):
        dog.disarm(dog.arm(10, lambda: fired.append(-1)))
    assert threading.active_count() == before and fired == [49]


def test_a_failing_function_does_not_stop_later_deadlines():
    dog = Watchdog()
    ok = threading.Event()
    dog.arm(0.01, lambda: 1 / 0)
    dog.arm(0.05, ok.set)
    assert ok.wait(5)
