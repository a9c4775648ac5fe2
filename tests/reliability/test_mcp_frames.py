"""Hostile protocol input to the real stdio server: >= 1,000 malformed or oversized JSON-RPC
frames (server stays up, memory bounded, every request with an id answered) and >= 50 ReDoS
patterns (each answered within its timeout, the next request still answered)."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest

from mcp_raw import RawServer, tool_error_code
from relhelpers import codeagent, init_repo, record

MAX_FRAME = 65536


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    files = {"pkg/core.py": "def helper(x):\n    return x\n", "README.md": "# demo\n",
             "evil.txt": "".join(s + "\n" for s in (
                 "a" * 4000 + "!", "a" * 60 + "b" * 60 + "!", ("ab" * 2000) + "c",
                 "x" * 3000 + "y", " " * 3000 + "!", "<" * 2000 + ">", "0" * 5000 + "x"))}
    path = init_repo(tmp_path_factory.mktemp("frames") / "repo", files)
    assert codeagent("build", path).returncode == 0
    return path


def _request(rid, method="tools/call", params=None) -> dict:
    msg = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


BAD_SHAPES = [  # JSON-RPC requests of the wrong shape, each with an id that must be answered
    lambda r: {"jsonrpc": "1.0", "id": r, "method": "ping"},
    lambda r: {"jsonrpc": 2, "id": r, "method": "ping"},
    lambda r: {"id": r, "method": "ping"},
    lambda r: {"jsonrpc": "2.0", "id": r, "method": 123},
    lambda r: {"jsonrpc": "2.0", "id": r, "method": None},
    lambda r: {"jsonrpc": "2.0", "id": r, "method": ["tools/call"]},
    lambda r: {"jsonrpc": "2.0", "id": r, "method": "tools/call", "params": "oops"},
    lambda r: {"jsonrpc": "2.0", "id": r, "method": "tools/call", "params": [1, 2]},
    lambda r: {"jsonrpc": "2.0", "id": r, "method": "no/such/method"},
    lambda r: {"jsonrpc": "2.0", "id": r, "method": ""},
    lambda r: {"jsonrpc": "2.0", "id": str(r), "method": "tools/call", "params": {}},
    lambda r: _request(r, params={"name": "no_such_tool", "arguments": {}}),
    lambda r: _request(r, params={"name": "read_file"}),
    lambda r: _request(r, params={"name": "read_file", "arguments": "README.md"}),
    lambda r: _request(r, params={"name": "read_file", "arguments": {"path": 7}}),
    lambda r: _request(r, params={"name": "read_file", "arguments": {"path": "README.md", "x": 1}}),
    lambda r: _request(r, params={"name": "read_file", "arguments": {"path": "README.md", "line_start": -5}}),
    lambda r: _request(r, params={"name": "read_file", "arguments": {"path": "p" * 5000}}),
    lambda r: _request(r, params={"name": "search_files", "arguments": {"pattern": ""}}),
    lambda r: _request(r, params={"name": "search_files", "arguments": {"pattern": "a", "max_results": 10**12}}),
    lambda r: _request(r, params={"name": "get_directory_tree", "arguments": {"depth": "deep"}}),
    lambda r: _request(r, params={"name": "search_code", "arguments": {"query": "\ud800\udfff"}}),
    lambda r: _request(r, params={"name": "get_symbol", "arguments": {"symbol_id": None}}),
    lambda r: _request(r, params={"name": 42, "arguments": {}}),
    lambda r: _request(r, "tools/list", {"cursor": 12}),
    lambda r: _request(r, "resources/read", {"uri": "file:///etc/passwd"}),
    lambda r: _request(r, "initialize", {"protocolVersion": 5}),
]


def hostile_frames(rng: random.Random, start: int) -> list[tuple[bytes, object]]:
    """(frame bytes ending in a newline, id that must be answered or None)."""
    frames: list[tuple[bytes, object]] = []
    rid = start

    def add(obj_or_bytes, must_answer: bool) -> None:
        nonlocal rid
        raw = obj_or_bytes if isinstance(obj_or_bytes, bytes) else json.dumps(obj_or_bytes).encode()
        expected = obj_or_bytes.get("id") if isinstance(obj_or_bytes, dict) else rid
        frames.append((raw.replace(b"\n", b" ") + b"\n", expected if must_answer else None))
        rid += 1

    good = json.dumps(_request(0, "tools/call", {"name": "read_file", "arguments": {"path": "README.md"}})).encode()
    for _ in range(150):
        add(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))), False)
    for _ in range(150):
        add(good[: rng.randrange(1, len(good) - 1)], False)
    for _ in range(50):
        add(b'{"jsonrpc":"2.0","id":' + str(rid).encode() + b',"method":"ping","params":{"s":"\xff\xfe\xc0"}}', False)
    for i in range(540):
        add(BAD_SHAPES[i % len(BAD_SHAPES)](rid), True)
    for depth in (100, 500, 900, 1000, 10_000, 100_000):
        for _ in range(5):
            head = f'{{"jsonrpc":"2.0","id":{rid},"method":"ping","params":{{"a":'.encode()
            add(head + b"[" * depth + b"]" * depth + b"}}", True)
    for size in (MAX_FRAME + 1, 2 * MAX_FRAME, 1 << 20, 4 << 20):
        for _ in range(5):
            head = f'{{"jsonrpc":"2.0","id":{rid},"method":"ping","params":{{"pad":"'.encode()
            add(head + b"x" * size + b'"}}', True)
    for _ in range(20):
        add([_request(rid, "ping"), _request(rid + 100000, "ping")], False)
        add(b"[]", False)
    for _ in range(40):
        add({"jsonrpc": "2.0", "method": rng.choice(["notifications/x", "", "ping"]), "params": "bad"}, False)
        add(b"   \t  ", False)
    return frames


def test_a_thousand_hostile_frames_leave_the_server_up_and_answering(repo: Path) -> None:
    rng = random.Random(1234)
    server = RawServer(repo, "--max-frame-bytes", str(MAX_FRAME))
    started = time.monotonic()
    try:
        assert server.call(1, "read_file", {"path": "README.md"}) is not None
        baseline = server.rss_kb()
        frames = hostile_frames(rng, 10_000)
        must = [rid for _, rid in frames if rid is not None]
        for n, (raw, _) in enumerate(frames):
            server.send(raw)
            if n % 100 == 99:  # a well-formed request between bursts must still be served
                probe = server.call(f"probe-{n}", "read_file", {"path": "README.md"}, timeout=60)
                assert probe and "# demo" in json.dumps(probe), f"probe after frame {n}: {probe}"
        deadline = time.monotonic() + 60
        for rid in must:
            server.wait(rid, timeout=max(0.01, deadline - time.monotonic()))
        unanswered = [rid for rid in must if rid not in server.by_id]
        peak_growth_mb = (server.rss_kb("VmHWM") - baseline) / 1024
        rss_growth_mb = (server.rss_kb() - baseline) / 1024
        internal = sum(1 for m in server.by_id.values()
                       if "internal_error" in json.dumps(m) or m.get("error", {}).get("code") == -32603)
        final = server.call("final", "read_file", {"path": "README.md"})
        alive = server.alive()
    finally:
        rc = server.close()
    record("mcp-frames", frames=len(frames), with_id=len(must), unanswered=len(unanswered),
           null_id_errors=server.null_id_errors, internal_errors=internal,
           non_json_stdout_lines=server.garbage_lines, rss_growth_mb=round(rss_growth_mb, 1),
           peak_growth_mb=round(peak_growth_mb, 1), seconds=round(time.monotonic() - started, 1))
    assert len(frames) >= 1000
    assert alive and final is not None and rc == 0
    assert not unanswered, f"{len(unanswered)} requests with an id got no answer: {unanswered[:10]}"
    assert server.garbage_lines == 0, "the server wrote something that is not JSON to stdout"
    assert internal == 0
    assert peak_growth_mb < 150, f"peak memory grew {peak_growth_mb:.0f} MiB"


REDOS = [
    r"(a+)+$", r"(a+)+b", r"(a*)*b", r"(a|a)*b", r"(a|aa)+$", r"(a|a?)+$", r"(.*a){20}",
    r"(a?){30}a{30}", r"^(a+)+$", r"([a-zA-Z]+)*$", r"(\w+\s?)*$", r"^(([a-z])+.)+[A-Z]([a-z])+$",
    r"(x+x+)+y", r"(.*)*!", r"(.+)+!", r"^(\s*)*$", r"(\s+)+!", r"(<+)+>x", r"(0*)*x!",
    r"(ab|a)*c!", r"(a|b|ab)*c!", r"((ab)*)*d", r"(.*){1,32000}[bc]", r"^(a|a)*$", r"(\d+)*x!",
    r"(a{1,100}){1,100}!", r"((a+)+)+!", r"(?:a+)+$", r"(?:(?:a*)*)*b", r"(a+|b+)*c!",
    r"(\w|\d)+!!", r"([^!]*)*!!", r"(x|xx|xxx)*y!", r"(.|\s)*!!", r"a{0,1000}a{1000}!",
    r"(a)\1", r"(?=a)a", r"(?<=a)b", r"(?!x)x", r"\p{Greek}+\p{Nope}", r"(" * 500 + "a" + ")" * 500,
    r"a{1000}{1000}", r"[" + "a-z" * 500 + "]+!", r"(?i)(A+)+$", r"(?s)(.*)*$", r"(a+)+(b+)+(c+)+!",
    "(" + "|".join("a" * i for i in range(1, 60)) + ")*!", r"x*" * 200 + "!", r"(?:x?){5000}x{5000}",
    r"[\s\S]*[\s\S]*[\s\S]*!!", r"(\S+\s+)*!", r"(a|ab|abc|abcd)*e!", r"((a|b)*)*c!",
]


def test_redos_patterns_answer_within_their_timeout(repo: Path) -> None:
    server = RawServer(repo)
    timeout_ms = 2000
    slowest, outcomes, late, dead = 0.0, {}, [], []
    try:
        for n, pattern in enumerate(REDOS):
            for args in ({"pattern": pattern, "is_regex": True, "timeout_ms": timeout_ms},
                         {"pattern": "a", "glob": pattern[:200] + "/**/*" * 20, "timeout_ms": timeout_ms}):
                started = time.monotonic()
                reply = server.call(f"re-{n}-{len(outcomes)}", "search_files", args, timeout=60)
                took = time.monotonic() - started
                slowest = max(slowest, took)
                if reply is None or took > timeout_ms / 1000 + 5:
                    late.append((pattern[:40], round(took, 2)))
                body = json.dumps(reply)
                kind = ("rpc_error" if reply and "error" in reply else
                        tool_error_code(reply) or "ok")
                outcomes[kind] = outcomes.get(kind, 0) + 1
                if "internal_error" in body:
                    dead.append(("internal_error", pattern[:40]))
                if server.call(f"next-{n}-{len(outcomes)}-{took}", "read_file", {"path": "README.md"}, timeout=30) is None:
                    dead.append(("next request unanswered", pattern[:40]))
    finally:
        rc = server.close()
    record("mcp-redos", patterns=len(REDOS), calls=2 * len(REDOS), late=len(late),
           slowest_s=round(slowest, 2), problems=len(dead),
           outcomes="/".join(f"{k}:{v}" for k, v in sorted(outcomes.items())))
    assert len(REDOS) >= 50
    assert not late, late
    assert not dead, dead
    assert rc == 0
