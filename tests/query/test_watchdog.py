"""The watchdog calls each armed function once its deadline passes, never a disarmed one."""

from __future__ import annotations

import threading
import time

from codeagent.query.watchdog import Watchdog


def test_fires_in_deadline_order_and_skips_disarmed():
    dog = Watchdog()
    fired: list[str] = []
    done = threading.Event()
    dog.arm(0.15, lambda: (fired.append("late"), done.set()))
    dog.arm(0.05, lambda: fired.append("early"))
    cancelled = dog.arm(0.02, lambda: fired.append("cancelled"))
    dog.disarm(cancelled)
    assert done.wait(5)
    assert fired == ["early", "late"]


def test_disarmed_before_its_deadline_never_fires_and_one_thread_serves_all():
    dog = Watchdog()
    fired: list[int] = []
    tokens = [dog.arm(0.05, lambda i=i: fired.append(i)) for i in range(50)]
    for t in tokens[:49]:
        dog.disarm(t)
    time.sleep(0.3)
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
