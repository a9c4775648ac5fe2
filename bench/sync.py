"""Sync benchmark on the stdlib corpus: bytes and seconds for a full sync and a branch switch.

    python bench/sync.py [--repeat 3] [--corpus DIR] [--changed-percent 1]

CI's side (build `main` and a branch changing 1% of the files, publish both to a directory
remote) runs once; then, REPEAT times, a fresh clone syncs `main` over HTTP from a server on
127.0.0.1 (full sync) and then the branch (branch switch), counting the bytes the server
sends. Peers in the same run: the same full sync from the directory and from a tar bundle,
and a local cold build of `main` (what sync saves). Prints medians.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import sys
import tempfile
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import git, median, print_table, stdlib_repo  # noqa: E402

from codeagent.indexer.build import BuildOptions, build  # noqa: E402
from codeagent.indexer.replicate.publish import bundle, publish  # noqa: E402
from codeagent.indexer.replicate.sync import SyncOptions, sync  # noqa: E402


class CountingHandler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    served = 0
    lock = threading.Lock()

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args) -> None:
        pass

    def copyfile(self, source, outputfile) -> None:
        data = source.read()
        outputfile.write(data)
        with CountingHandler.lock:
            CountingHandler.served += len(data)


def serve(directory: Path) -> tuple[str, ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(CountingHandler, directory=str(directory)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


def make_branch(repo: Path, percent: float) -> int:
    """A `switch` branch appending a function to `percent`% of the .py files; returns how many."""
    files = sorted(git(repo, "ls-files", "*.py").split())
    step = max(1, round(100 / percent))
    changed = files[::step]
    git(repo, "checkout", "-q", "-B", "switch", "main")
    for rel in changed:
        with open(repo / rel, "a", encoding="utf-8") as fh:
            fh.write("\n\ndef _bench_sync_marker():\n    return 1\n")
    git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qam", "switch")
    git(repo, "checkout", "-q", "main")
    return len(changed)


def timed_sync(client: Path, source: str, ref: str) -> dict:
    before = CountingHandler.served
    t0 = time.perf_counter()
    out = sync(SyncOptions(repo=client, source=source, ref=ref)).to_dict()
    out["wall"] = time.perf_counter() - t0
    out["served"] = CountingHandler.served - before
    return out


def table(rows: dict[str, list[dict]], n_changed: int, cold_build: float, n_files: int) -> list[list]:
    full_bytes = median([r["served"] for r in rows["full"]])
    labels = {"full": "full sync (http)", "switch": f"branch switch, {n_changed} files changed (http)",
              "dir": "full sync (directory)", "bundle": "full sync (tar bundle)"}
    out = []
    for kind, runs in rows.items():
        moved = median([r["served"] if kind in ("full", "switch") else r["bytes_received"] for r in runs])
        wall = median([r["wall"] for r in runs])
        out.append([labels[kind], median([r["objects_fetched"] for r in runs]),
                    f"{moved / 1e6:.3f}", f"{100 * moved / full_bytes:.2f}%",
                    f"{median([r['seconds_fetch'] for r in runs]):.2f}",
                    f"{median([r['seconds_assemble'] for r in runs]):.2f}", f"{wall:.2f}",
                    f"{cold_build / wall:.1f}x"])
    out.append([f"peer: cold local build of main ({n_files} files)", "-", "-", "-", "-", "-",
                f"{cold_build:.2f}", "1.0x"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--corpus", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-stdlib")
    ap.add_argument("--changed-percent", type=float, default=1.0)
    args = ap.parse_args()
    repo = stdlib_repo(args.corpus)
    n_changed = make_branch(repo, args.changed_percent)
    work = Path(tempfile.mkdtemp(prefix="codeagent-bench-sync-"))
    try:
        store = work / "ci-store"
        t0 = time.perf_counter()
        built = build(BuildOptions(repo=repo, rev="main", store_dir=store))
        cold_build = time.perf_counter() - t0
        build(BuildOptions(repo=repo, rev="switch", store_dir=store))
        remote = work / "remote"
        for ref in ("main", "switch"):
            publish(repo, str(remote), ref, store_dir=store)
        tar = work / "index.tar"
        bundle(repo, tar, ["main"], store_dir=store)
        url, server = serve(remote)
        rows: dict[str, list[dict]] = {k: [] for k in ("full", "switch", "dir", "bundle")}
        for n in range(args.repeat):
            client = work / f"client{n}"
            git(work, "clone", "-q", str(repo), str(client))
            rows["full"].append(timed_sync(client, url, "main"))
            rows["switch"].append(timed_sync(client, url, "switch"))
            for kind, source in (("dir", str(remote)), ("bundle", str(tar))):
                shutil.rmtree(client / ".codeagent")
                rows[kind].append(timed_sync(client, source, "main"))
        server.shutdown()
        print(f"corpus: {repo} ({built.files_total} files), repeat {args.repeat}, medians")
        print_table(["scenario", "objects", "MB moved", "% of full", "fetch s", "assemble s",
                     "total s", "vs cold build"], table(rows, n_changed, cold_build, built.files_total))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
