"""Shared fixtures: real git repositories in temp dirs, built with a tiny helper."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from repo_helpers import GitRepo  # noqa: E402

# Suites of long stress runs (kill, swap and soak loops; whole-client conversations): an xdist
# worker starts them first, so that no worker is left with one at the end while the other idles.
LONG_RUNNING = ("reliability/", "mcp_server/test_inspector.py", "eval/test_ci_gate.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # every worker collects, and must collect the same order
        items.sort(key=lambda item: not any(part in item.nodeid for part in LONG_RUNNING))


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (pyproject's addopts): one worker more than this process may use cores. A test
    here waits on real builds, servers, clients and watchers in turn; with one worker a core
    the two cores of CI were ~85% busy, with a third worker the waits overlap others' work
    (the suite 427 -> 394 s on 2 cores, the same CPU-seconds). PYTEST_XDIST_AUTO_NUM_WORKERS
    still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    return len(os.sched_getaffinity(0)) + 1


FIGURES: dict[str, dict] = {}  # suite -> figures, from the reports' "figures" user property


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for name, value in report.user_properties:
        if name == "figures":
            for suite, figures in value.items():
                FIGURES.setdefault(suite, {}).update(figures)


def pytest_terminal_summary(terminalreporter) -> None:
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for suite, figures in sorted(FIGURES.items()):
        terminalreporter.write_line(f"{suite}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))
    out = os.environ.get("CODEAGENT_FIGURES_JSON")
    if out:
        Path(out).write_text(json.dumps(FIGURES, indent=2, sort_keys=True))


@pytest.fixture(autouse=True, scope="session")
def _own_daemon_dir(tmp_path_factory: pytest.TempPathFactory):
    """CLI runs in tests never reach a developer's running `codeagent daemon`: the daemon's
    socket is looked up in a directory of this session (tests/core/test_daemon.py starts one)."""
    os.environ["CODEAGENT_DAEMON_DIR"] = str(tmp_path_factory.mktemp("daemon"))
    through = os.environ.get("CODEAGENT_TEST_THROUGH_DAEMON") == "1"  # every CLI run via one
    if through:
        subprocess.run([sys.executable, "-m", "codeagent", "daemon", "start"], check=True)
    yield
    if through:
        subprocess.run([sys.executable, "-m", "codeagent", "daemon", "stop"], check=True)


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepo:
    return GitRepo.create(tmp_path / "repo")


@pytest.fixture
def cli(tmp_path: Path):
    """Run the real `codeagent` CLI in a subprocess; returns CompletedProcess."""

    def run(*args: str, cwd: Path | None = None, check: bool = False, input: str | None = None,
            timeout: float = 300):
        proc = subprocess.run([sys.executable, "-m", "codeagent", *map(str, args)], cwd=cwd or tmp_path,
                              capture_output=True, text=True, input=input, timeout=timeout,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
        if check and proc.returncode != 0:
            raise AssertionError(f"codeagent {' '.join(map(str, args))} exited {proc.returncode}\n"
                                 f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        return proc

    return run
