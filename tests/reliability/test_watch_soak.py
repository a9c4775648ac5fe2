"""Soak: scripted edits (create, modify, delete, rename, branch switch, a file changed back)
while a real stdio client queries `serve --watch`. After each debounce window the served
manifest is the one a fresh full build of the same tree makes, and the answers are the fresh
build's; no call errs; the store verifies at the end. CODEAGENT_LONG=1 runs 300 edits."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from codeagent.format.manifest import load_manifest
from codeagent.hashing import hash_bytes
from codeagent.indexer.build import BuildOptions, build
from codeagent.query import find_symbols, open_index
from codeagent.store import Store

LONG = os.environ.get("CODEAGENT_LONG") == "1"
EDITS = 300 if LONG else 8  # windows of one or two edits each (12 took 18 s of CI's 10 minutes)
MAX_FILES = 40  # every soak symbol fits one answer
WINDOW = 60.0  # seconds a settled tree may take to be served (a loaded 2-core machine)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _cli(*args: str | Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "codeagent", *map(str, args)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"codeagent {args}: {proc.stderr}"
    return proc.stdout


def _source(name: str, body: int) -> str:
    return f"def {name}(x):\n    return x + {body}\n\n\nclass Box{body}:\n    pass\n"


class Script:
    """The scripted edits on a git work tree (two branches), deterministic per seed."""

    def __init__(self, repo, seed: int) -> None:
        self.repo = repo
        self.rng = random.Random(seed)
        self.serial = 0
        self.history: dict[str, list[str]] = {}  # path -> contents it had, oldest first
        self.branch = "main"

    def files(self) -> list[str]:
        return sorted(str(p.relative_to(self.repo.path)) for p in self.repo.path.rglob("*.py")
                      if ".codeagent" not in p.parts and ".git" not in p.parts)

    def write(self, rel: str) -> None:
        self.serial += 1
        text = _source(f"soak_{self.serial}", self.serial)
        self.history.setdefault(rel, []).append(text)
        self.repo.write(rel, text)

    def step(self) -> str:
        files = self.files()
        op = self.rng.choice(["create", "modify", "modify", "delete", "rename", "back", "switch"]
                             if len(files) > 3 else ["create"])
        op = "delete" if len(files) > MAX_FILES else op
        target = self.rng.choice(files) if files else ""
        if op == "create":
            self.write(f"pkg{self.rng.randrange(3)}/new_{self.serial}.py")
        elif op == "modify":
            self.write(target)
        elif op == "delete":
            (self.repo.path / target).unlink()
        elif op == "rename":
            dest = f"pkg{self.rng.randrange(3)}/moved_{self.serial}.py"
            self.serial += 1
            (self.repo.path / dest).parent.mkdir(parents=True, exist_ok=True)
            os.rename(self.repo.path / target, self.repo.path / dest)
        elif op == "back":
            old = [p for p in files if len(self.history.get(p, [])) > 1]
            if not old:
                return self.step()
            rel = self.rng.choice(old)
            self.repo.write(rel, self.history[rel][0])  # the file changed back to its first text
        else:
            self.repo.commit(f"soak {self.serial}")
            self.branch = "side" if self.branch == "main" else "main"
            self.repo.checkout(self.branch)
        return op


def _tree(store: Path, manifest_id: str) -> str:
    """The hash of the whole manifest `manifest_id` names (a work tree's may be stored as a
    delta on an earlier one, with an id of its own)."""
    return hash_bytes(load_manifest(Store(store), manifest_id).canonical_bytes())


def _fresh(repo: Path, store: Path) -> tuple[str, list[tuple[str, str]], str]:
    """(whole manifest's hash, every soak symbol's (name, path), its graph's state: ready) of a
    fresh full build of the tree."""
    shutil.rmtree(store, ignore_errors=True)
    # in this process (what `codeagent build --worktree --store STORE` runs, without starting
    # Python and its libraries once a window)
    mid = build(BuildOptions(repo=repo, store_dir=store, jobs=1)).manifest_id
    with open_index(repo, store) as view:
        hits = find_symbols(view, "soak_", match="prefix", limit=50, include_references=False).results
    return _tree(store, mid), sorted((h.name, h.path) for h in hits), "ready"


async def _served(c, store: Path) -> tuple[str, list[tuple[str, str]], str]:
    """The same of what the server answers (its graph `indexing` until the watcher's graph step
    for the manifest has landed)."""
    status = await c.call_tool("index_status", {})
    assert not status.is_error, status.content
    found = await c.call_tool("search_symbols", {"query": "soak_", "match": "prefix", "limit": 50})
    assert not found.is_error, found.content
    hits = found.structured_content["results"]
    return (_tree(store, status.structured_content["manifest_id"]), sorted((h["name"], h["path"]) for h in hits),
            found.structured_content["metadata"]["graph"])


async def test_served_answers_match_a_fresh_build_after_every_window(git_repo, tmp_path):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    script = Script(git_repo, seed=22)
    for i in range(4):
        script.write(f"pkg{i % 3}/base_{i}.py")
    git_repo.commit("base")
    git_repo.checkout("side", create=True)
    script.write("pkg1/side_only.py")
    git_repo.commit("side")
    script.branch = "side"
    _cli("build", git_repo.path)
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "codeagent", "serve", "--repo", str(git_repo.path), "--watch"],
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=str(tmp_path))
    ops: list[str] = []
    lags: list[float] = []  # seconds from a window's fresh build to the served answers matching it
    async with Client(params, read_timeout_seconds=120) as c:
        for n in range(EDITS):
            for _ in range(1 + script.rng.randrange(2)):  # one or two edits per window
                ops.append(script.step())
            want = _fresh(git_repo.path, tmp_path / "fresh")
            deadline = time.monotonic() + WINDOW
            while (got := await _served(c, git_repo.path / ".codeagent")) != want:
                assert time.monotonic() < deadline, (
                    f"edit {n} ({ops[-2:]}): served {got[0][:12]} with {len(got[1])} soak symbols, "
                    f"a fresh build makes {want[0][:12]} with {len(want[1])}")
                await anyio.sleep(0.1)
            lags.append(time.monotonic() - deadline + WINDOW)
    lags.sort()
    print(f"soak: {EDITS} windows, {len(ops)} edits ({', '.join(f'{o} {ops.count(o)}' for o in sorted(set(ops)))}), "
          f"served = fresh after median {lags[len(lags) // 2]:.2f} s, max {lags[-1]:.2f} s")
    assert {"create", "modify", "delete", "rename", "back", "switch"} <= set(ops) or not LONG
    _cli("verify", git_repo.path)
