"""Path escapes against the MCP file sandbox: >= 500 attempts (../, absolute, encoded, NUL,
symlinks, hardlinks, a symlink flipped during reads) => 0 escapes, 0 crashes. Most drive the
sandbox functions directly; a subset goes through the real stdio server."""

from __future__ import annotations

import itertools
import os
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from mcp_raw import RawServer, tool_error_code
from relhelpers import codeagent, init_repo, record

from codeagent.errors import CodeagentError
from codeagent.query.sandbox import Sandbox

CANARY = "CANARY-OUTSIDE-7f3a9c"


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("paths")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{CANARY} secret\n")
    (outside / "hardlinked.txt").write_text(f"{CANARY} hardlinked\n")
    repo = init_repo(base / "repo", {
        "README.md": "# inside\n", "pkg/core.py": "def core():\n    return 1\n",
        "sub/dir/file.txt": "inside file\n", ".env": f"KEY={CANARY}\n",
        "keys/server.pem": f"{CANARY}\n", ".gitignore": "ignored/\n",
        "ignored/x.txt": f"{CANARY} ignored\n"})
    links = {"link_out_dir": str(outside), "link_out_file": str(outside / "secret.txt"),
             "link_rel_out": "../outside/secret.txt", "sub/link_up": "../../outside",
             "chain_a": "chain_b", "chain_b": "link_out_dir", "link_root": "/",
             "link_parent": "..", "link_inside": "README.md", "loop1": "loop2", "loop2": "loop1",
             "flip": "README.md", "sub/dir/deep_out": "../../../outside/secret.txt",
             "link_proc": "/proc/self/root"}
    for name, target in links.items():
        os.symlink(target, repo / name)
    os.link(outside / "hardlinked.txt", repo / "hard_out.txt")
    assert codeagent("build", repo).returncode == 0
    return repo, outside


def escape_paths(repo: Path, outside: Path) -> list[str]:
    """The attack corpus: traversal x targets x encodings, absolute forms, links, internals."""
    ups = ["../", "../../", "../" * 12, "..\\", "..\\..\\", "./../", "pkg/../../", "sub/dir/../../../",
           "./pkg/./../../", "//..//..//", "..//", "..\\/", "pkg/..\\..\\", "sub/../sub/../../"]
    targets = ["outside/secret.txt", "etc/passwd", "proc/self/environ", "root/.ssh/id_rsa", ""]
    encoders = [
        lambda s: s,
        lambda s: quote(s, safe=""),
        lambda s: quote(quote(s, safe=""), safe=""),
        lambda s: s.replace("..", "%2E%2e"),
        lambda s: s.replace("../", "%2e%2e%2f"),
        lambda s: s.replace("/", "%5c"),
        lambda s: s.replace("..", "%c0%ae%c0%ae"),
        lambda s: s.replace(".", "\uff0e").replace("/", "\uff0f"),
        lambda s: " " + s + " ",
        lambda s: "README.md\x00" + s,
    ]
    paths = [enc(up + t) for up, t, enc in itertools.product(ups, targets, encoders)]
    secret = str(outside / "secret.txt")
    paths += [secret, str(outside), f"{repo}/../outside/secret.txt", f"{repo}/../../..{secret}",
              "/etc/passwd", "//etc/passwd", "\\etc\\passwd", "file:///etc/passwd", "~/.ssh/id_rsa",
              "~root/.bashrc", "C:\\Windows\\win.ini", "C:/Windows/win.ini", "/proc/self/root/etc/passwd",
              f"/proc/self/cwd/../outside/secret.txt", "/dev/zero", "/dev/stdin", "/", "..", ".../",
              "....//....//etc/passwd", "..;/etc/passwd", "\n../etc/passwd", "\t../outside",
              "%00../../etc/passwd", "README.md%00../../outside/secret.txt", quote(secret, safe=""),
              "/" + "a/" * 2000 + "../" * 2100 + "etc/passwd", "a" * 5000]
    via_links = ["link_out_dir", "link_out_dir/secret.txt", "link_out_file", "link_rel_out",
                 "sub/link_up", "sub/link_up/secret.txt", "chain_a", "chain_a/secret.txt",
                 "chain_b/secret.txt", "link_root/etc/passwd", "link_root" + secret,
                 "link_parent/outside/secret.txt", "link_parent", "loop1", "loop2/x",
                 "hard_out.txt", "sub/dir/deep_out", "link_proc/etc/passwd",
                 "link_proc" + secret, "pkg/../link_out_dir/secret.txt", "./link_out_file"]
    internals = [".env", "keys/server.pem", ".git/config", ".git/HEAD", ".codeagent/STORE",
                 ".codeagent/refs/worktree", "pkg/../.env", "./.git/config", ".git",
                 "ignored/x.txt", "sub/../ignored/x.txt", "%2egit/config", ".git%2fconfig"]
    for p in via_links + internals:
        paths += [p, quote(p, safe=""), p + "/", "./" + p]
    return list(dict.fromkeys(paths))


def _leaks(value: object, repo: Path) -> bool:
    text = repr(value)
    return CANARY in text or "root:x:0:0" in text


def _attempt(box: Sandbox, fn: str, path: str) -> str:
    """"refused", "served" (inside, harmless), "escape" or "crash:<type>"."""
    try:
        if fn == "read_file":
            out = box.read_file(path)
            inside = os.path.realpath(os.path.join(box.root, out.resolved))
            ok = inside == box.root or inside.startswith(box.root + os.sep)
            return "escape" if _leaks(out.data, box.root) or not ok else "served"
        if fn == "list_dir":
            rel, entries = box.list_dir(path)
            out = [rel, *[e.path for e in entries]]
        else:
            out = [e.path for e, _ in box.walk(path, max_depth=3)]
        bad = [p for p in out if p.startswith(("/", "..")) or "secret.txt" in p]
        return "escape" if bad or _leaks(out, box.root) else "served"
    except CodeagentError:
        return "refused"
    except Exception as exc:  # anything else is a crash the server would have to absorb
        return f"crash:{type(exc).__name__}:{exc}"[:200]


def test_sandbox_refuses_every_escape(world) -> None:
    repo, outside = world
    box = Sandbox(repo)
    paths = escape_paths(repo, outside)
    outcomes: dict[str, int] = {}
    escapes, crashes = [], []
    for path in paths:
        for fn in ("read_file", "list_dir", "walk"):
            result = _attempt(box, fn, path)
            outcomes[result.split(":")[0]] = outcomes.get(result.split(":")[0], 0) + 1
            if result == "escape":
                escapes.append((fn, path))
            elif result.startswith("crash"):
                crashes.append((fn, path, result))
    assert box.read_file("link_inside").data == b"# inside\n"
    record("mcp-path-escapes-sandbox", paths=len(paths), attempts=sum(outcomes.values()),
           refused=outcomes.get("refused", 0), served_inside=outcomes.get("served", 0),
           escapes=len(escapes), crashes=len(crashes))
    assert len(paths) >= 500
    assert not escapes, escapes[:20]
    assert not crashes, crashes[:20]


def test_a_symlink_flipped_during_reads_never_leaks(world) -> None:
    repo, outside = world
    box = Sandbox(repo)
    link = repo / "flip"
    stop = threading.Event()

    def flipper() -> None:
        targets = ["README.md", str(outside / "secret.txt"), "link_out_dir", "../outside/secret.txt"]
        n = 0
        while not stop.is_set():
            tmp = repo / f".flip-{n}"
            os.symlink(targets[n % len(targets)], tmp)
            os.replace(tmp, link)
            n += 1

    thread = threading.Thread(target=flipper)
    thread.start()
    counts = {"served": 0, "refused": 0, "escape": 0, "crash": 0}
    try:
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            for fn in ("read_file", "list_dir"):
                counts[_attempt(box, fn, "flip").split(":")[0]] += 1
    finally:
        stop.set()
        thread.join()
        os.symlink("README.md", repo / ".flip-reset")
        os.replace(repo / ".flip-reset", link)
    record("mcp-path-escapes-flip", reads=sum(counts.values()), **counts)
    assert counts["escape"] == 0 and counts["crash"] == 0, counts
    assert counts["served"] > 0 and counts["refused"] > 0, counts


def test_path_escapes_through_the_real_stdio_server(world) -> None:
    repo, outside = world
    paths = escape_paths(repo, outside)[::4]
    server = RawServer(repo)
    escapes, unanswered, codes = [], [], {}
    started = time.monotonic()
    try:
        rid = 1000
        for path in paths:
            for tool, args in (("read_file", {"path": path}), ("list_directory", {"path": path}),
                               ("get_file_outline", {"path": path or "x"})):
                rid += 1
                reply = server.call(rid, tool, args, timeout=60)
                if reply is None:
                    unanswered.append((tool, path))
                    continue
                if CANARY in str(reply) or "root:x:0:0" in str(reply):
                    escapes.append((tool, path))
                code = tool_error_code(reply) if "result" in reply else f"rpc{reply['error']['code']}"
                codes[str(code)] = codes.get(str(code), 0) + 1
        alive = server.alive()
    finally:
        rc = server.close()
    record("mcp-path-escapes-stdio", attempts=rid - 1000, escapes=len(escapes),
           unanswered=len(unanswered), internal_errors=codes.get("internal_error", 0),
           seconds=round(time.monotonic() - started, 1))
    assert not escapes, escapes[:20]
    assert not unanswered, unanswered[:20]
    assert alive and rc == 0
    assert codes.get("internal_error", 0) == 0, codes
