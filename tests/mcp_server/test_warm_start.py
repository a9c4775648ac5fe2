"""A server opens its index and loads what a first look-up reads while it starts (the symbol
table, and the file texts its snippets are cut from), in the background (IndexFollower.warm):
the first request finds them ready. Latency is not asserted
here (bench/scale.py measures it); what is: the work is done before any request, it answers
from the same view, no index means no work, and a client leaving mid-warm-up gets a clean exit."""

from __future__ import annotations

import subprocess
import sys
import time

from codeagent.mcp_server.state import ServerConfig, ServerState
from codeagent.mcp_server.tools.search import SearchTools


def _warmed(state: ServerState, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        follower = state.follower()
        current = follower._current
        if current is not None and {"symbol_table", "resident_texts"} <= current.cache.keys():
            return True
        time.sleep(0.05)
    return False


def test_the_index_is_open_and_its_symbols_and_texts_loaded_before_any_request(indexed_repo):
    state = ServerState(ServerConfig(indexed_repo.path))
    try:
        state.warm_up()
        assert _warmed(state)
        warmed = state.follower()._current
        found = SearchTools(state).lookup_symbol(qualified_name="pkg.core.helper")
        assert [r.name for r in found.results] == ["helper"]
        assert state.follower()._current is warmed  # answered from the view warmed up
    finally:
        state.close()


def test_without_an_index_warm_up_does_nothing(git_repo):
    git_repo.write("m.py", "x = 1\n")
    git_repo.commit()
    state = ServerState(ServerConfig(git_repo.path))
    try:
        state.warm_up()
        assert state._follower is None
    finally:
        state.close()


def test_a_client_leaving_while_the_server_warms_up_gets_a_clean_exit(indexed_repo):
    proc = subprocess.run([sys.executable, "-m", "codeagent", "serve", "--repo", str(indexed_repo.path)],
                          input=b"", capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert b"FATAL" not in proc.stderr and b"Traceback" not in proc.stderr
