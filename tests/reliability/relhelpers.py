"""Helpers for the reliability suites: seeded repos and edits, child builds, store checks."""

from __future__ import annotations

import json
import os
import queue
import random
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from codeagent import format as fmt
from codeagent.errors import CodeagentError
from codeagent.hashing import hash_bytes
from codeagent.format.manifest import load_manifest
from codeagent.store import Store

FIGURES: dict[str, dict] = {}  # suite -> figures, sent with the test's report (conftest.py)

PY = sys.executable
HERE = Path(__file__).resolve().parent
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "GIT_CONFIG_NOSYSTEM": "1"}


def record(suite: str, **figures: object) -> None:
    FIGURES.setdefault(suite, {}).update(figures)
    print(f"[{suite}] " + ", ".join(f"{k}={v}" for k, v in figures.items()))


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          env=env, text=True).stdout


def init_repo(path: Path, files: dict[str, str | bytes] | None = None, commit: bool = True) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for rel, content in (files or {}).items():
        p = path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content.encode() if isinstance(content, str) else content)
    if commit:
        git(path, "add", "-A")
        git(path, "commit", "-q", "--allow-empty", "-m", "init")
    return path


def py_module(rng: random.Random, n: int) -> str:
    funcs = []
    for i in range(rng.randint(2, 6)):
        funcs.append(f"def f{n}_{i}(x):\n    \"\"\"Return x shifted by {rng.randint(0, 999)}.\"\"\"\n"
                     f"    return helper_{rng.randint(0, 9)}(x) + {rng.randint(0, 99)}\n")
    return (f"import os\n\n\nclass Thing{n}:\n    def run(self):\n        return f{n}_0(1)\n\n\n"
            + "\n\n".join(funcs))


def seed_files(rng: random.Random, count: int) -> dict[str, str]:
    files = {f"pkg/mod{i}.py": py_module(rng, i) for i in range(count)}
    files["README.md"] = "# demo\n\n## Usage\n\nCall `Thing0().run()`.\n"
    files["web/app.js"] = "export function start(a) { return a + 1; }\n"
    return files


@dataclass
class Mutator:
    """Seeded, varied work-tree edits; some revert to an earlier tree so old manifests recur."""

    repo: Path
    rng: random.Random
    snapshots: list[dict[str, bytes]] = field(default_factory=list)
    counter: int = 1000
    ops: dict[str, int] = field(default_factory=dict)

    def tree(self) -> dict[str, bytes]:
        return {rel: (self.repo / rel).read_bytes() for rel in tree_paths(self.repo)}

    def step(self) -> str:
        paths = tree_paths(self.repo)
        op = self.rng.choices(["edit", "add", "delete", "move", "revert", "commit"],
                              weights=[5, 2, 1, 1, 1, 1])[0]
        if op == "revert" and self.snapshots:
            self._restore(self.rng.choice(self.snapshots))
        elif op == "delete" and len(paths) > 5:
            (self.repo / self.rng.choice(paths)).unlink()
        elif op == "move" and paths:
            src = self.rng.choice(paths)
            dst = self.repo / "moved" / f"{self.counter}_{Path(src).name}"
            dst.parent.mkdir(exist_ok=True)
            (self.repo / src).rename(dst)
        elif op == "commit":
            git(self.repo, "add", "-A")
            git(self.repo, "commit", "-q", "--allow-empty", "-m", f"c{self.counter}")
        elif op == "add":
            (self.repo / "pkg" / f"new{self.counter}.py").write_text(py_module(self.rng, self.counter))
        else:
            op = "edit"
            for rel in self.rng.sample(paths, min(len(paths), self.rng.randint(1, 4))):
                with open(self.repo / rel, "a") as fh:
                    fh.write(f"\n\ndef added_{self.counter}_{self.rng.randint(0, 99)}():\n    return 1\n")
        self.counter += 1
        self.ops[op] = self.ops.get(op, 0) + 1
        if self.rng.random() < 0.2:
            self.snapshots.append(self.tree())
        return op

    def _restore(self, snap: dict[str, bytes]) -> None:
        for rel in tree_paths(self.repo):
            if rel not in snap:
                (self.repo / rel).unlink()
        for rel, data in snap.items():
            p = self.repo / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if not p.exists() or p.read_bytes() != data:
                p.write_bytes(data)


def tree_paths(repo: Path) -> list[str]:
    out = []
    for dirpath, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if d not in (".git", ".codeagent")]
        for name in files:
            out.append(os.path.relpath(os.path.join(dirpath, name), repo).replace(os.sep, "/"))
    return sorted(out)


def tree_digest(repo: Path) -> dict[str, str]:
    return {rel: hash_bytes((repo / rel).read_bytes()) for rel in tree_paths(repo)}


def head(repo: Path) -> str | None:
    try:
        return git(repo, "rev-parse", "--verify", "-q", "HEAD").strip() or None
    except subprocess.CalledProcessError:
        return None


def codeagent(*args: str, env: dict | None = None, timeout: float = 120,
              **kw) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "codeagent", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, **kw)


def spawn_build(repo: Path, *extra: str, env: dict | None = None) -> subprocess.Popen:
    """A `codeagent build` child in its own process group (so a kill takes its workers too)."""
    return subprocess.Popen([PY, "-m", "codeagent", "build", str(repo), "--json", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, **(env or {})}, start_new_session=True)


class ForkedBuild:
    """One `codeagent` command (a build, mostly) forked by a BuildForker: `pid` (its session, a kill by group takes
    its workers too), `wait` and `returncode` as a Popen's."""

    def __init__(self, pid: int, replies: queue.Queue) -> None:
        self.pid, self._replies, self.returncode = pid, replies, None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            try:
                self.returncode = self._replies.get(timeout=timeout)["exit"]
            except queue.Empty:
                raise subprocess.TimeoutExpired(["codeagent", "build"], timeout) from None
        return self.returncode


class BuildForker:
    """`codeagent build` children forked from one process that imported the build's libraries
    once (build_forker.py; the watcher's builder does the same), so each child starts at the
    build's first step: its span is the build's, not the interpreter's start-up."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([PY, str(HERE / "build_forker.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self._replies: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._replies.put(json.loads(line))
        self._replies.put({"pid": None, "exit": None})

    def spawn(self, repo: Path, *extra: str, env: dict | None = None,
              out: Path | None = None) -> ForkedBuild:
        """Start `codeagent build REPO --json EXTRA...` (stdout to `out` and stderr to
        `out`.err, else nowhere)."""
        return self.command("build", repo, "--json", *extra, env=env, out=out)

    def run(self, *argv: object, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        """`codeagent ARGV...` forked and waited for, its output read back: what
        `codeagent(*argv)` returns, without an interpreter's start-up per command."""
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out"
            code = self.command(*argv, env=env, out=out).wait(timeout=timeout)
            return subprocess.CompletedProcess(list(map(str, argv)), code, out.read_text(errors="replace"),
                                               Path(f"{out}.err").read_text(errors="replace"))

    def command(self, *argv: object, env: dict | None = None, out: Path | None = None) -> ForkedBuild:
        """Start `codeagent ARGV...` (stdout to `out` and stderr to `out`.err, else nowhere)."""
        request = {"argv": list(map(str, argv)), "env": env or {}}
        if out is not None:
            request.update(out=str(out), err=f"{out}.err")
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        pid = self._replies.get(timeout=60)["pid"]
        if pid is None:
            raise RuntimeError(f"the build forker exited ({self.proc.wait()})")
        return ForkedBuild(pid, self._replies)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.proc.stdout.close()

    def __enter__(self) -> BuildForker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def clean_manifest_id(repo: Path, store_dir: Path, rev: str | None = None) -> str:
    """The manifest id of a full build of the repo's current tree into a fresh store."""
    from codeagent.indexer.build import BuildOptions, build

    return build(BuildOptions(repo=repo, store_dir=store_dir, rev=rev, jobs=1)).manifest_id


def whole_manifest_id(store_dir: Path, manifest_id: str) -> str:
    """The id `manifest_id`'s manifest has stored whole: a work tree's may be stored as a delta
    on an earlier one (format/manifest.py), with an id of its own; a clean build's is whole."""
    return hash_bytes(load_manifest(Store(store_dir), manifest_id).canonical_bytes())


def tmp_leftovers(store_dir: Path) -> list[str]:
    tmp = store_dir / fmt.TMP_DIR
    left = [p.name for p in tmp.iterdir()] if tmp.exists() else []
    for sub in ("objects", "actions", "refs"):
        base = store_dir / sub
        if base.exists():
            left += [str(p) for p in base.rglob(".tmp-*")]
    return left


def assembled_manifest_id(store: Store, manifest_id: str) -> str:
    """Open the assembled DuckDB read-only and ask it which manifest it holds."""
    from codeagent.query.overlay import connect_overlay

    base = store.assembly_base(manifest_id)  # a work-tree overlay reads its base's database too
    path = store.assembled_dir(manifest_id) / fmt.DUCKDB_FILE
    con = (duckdb.connect(str(path), read_only=True) if base is None
           else connect_overlay(store.assembled_dir(base), path.parent))
    try:
        return con.execute("SELECT value FROM meta WHERE key = 'manifest_id'").fetchone()[0]
    finally:
        con.close()


def check_store(store_dir: Path, ref: str = "worktree",
                open_db: bool = True) -> tuple[list[str], str | None]:
    """(problems, manifest id the ref names): verify, then the ref's manifest and assembly
    (`open_db`: also open its DuckDB read-only and ask which manifest it holds)."""
    from codeagent.indexer.maintenance import verify_store

    try:
        store = Store(store_dir)
        report = verify_store(store)
        problems = [f"{p.kind}: {p.name} {p.detail}" for p in report.problems]
        mid = store.read_ref(ref)
        if mid is None:
            return problems, None
        load_manifest(store, mid)
        if not store.is_assembled(mid):
            problems.append(f"ref {ref} names {mid[:12]} whose assembled dir is not COMPLETE")
        elif open_db and assembled_manifest_id(store, mid) != mid:
            problems.append(f"assembled dir of {mid[:12]} holds another manifest")
        return problems, mid
    except (CodeagentError, duckdb.Error, OSError) as exc:
        return [f"{type(exc).__name__}: {exc}"], None


def manifest_matches_tree(store_dir: Path, manifest_id: str, repo: Path) -> str:
    """"" when the manifest lists exactly the repo's current files and bytes, else why not."""
    m = load_manifest(Store(store_dir), manifest_id)
    tree = tree_digest(repo)
    listed = {f.path: f.blob for f in m.files}
    if set(listed) != set(tree):
        return f"paths differ: {sorted(set(listed) ^ set(tree))[:5]}"
    bad = [p for p, b in listed.items() if b and b != tree[p]]
    if bad:
        return f"blobs differ: {bad[:5]}"
    if m.commit != head(repo):
        return f"commit {m.commit} is not HEAD {head(repo)}"
    return ""
