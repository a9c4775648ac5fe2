"""Watch-mode benchmark on the stdlib corpus: `codeagent serve --watch` with a client querying.

    python bench/watch.py [--edits 50] [--switch-files 2000] [--corpus DIR]

    python bench/watch.py --scales 1,3   # the one-file builds on a 3x corpus too (bench/scale.py)

Prints, in one run:
  - one-file-edit `codeagent build`s (a fresh process, as a watch build is), alternating the
    copy-the-database path (`--consolidate`: a full database per manifest) and the overlay
    path (the default): wall and CPU seconds, bytes written (/proc/<pid>/io write_bytes), per
    corpus scale;
  - edit -> searchable: a client's search_symbols finds a function written into a file, p50 /
    p95 over --edits edits (the debounce, the build's process and the server's swap to the new
    manifest included; target p95 <= 1.0 s), and where that time went (`breakdown`);
  - bytes written per edit by the watcher and its builds (the watcher's /proc io counts the
    builds it reaped) and by the server (target: <= 1 MB plus the new shard);
  - --graph-edits one-file edits each followed by get_callers on the new function: edit ->
    searchable, edit -> a graph answer from the edit's own graph (metadata graph `ready`), and
    the graph step's build when it runs as one of its own (two-phase publishing);
  - a branch switch rewriting --switch-files files: seconds until a symbol only that branch
    has is searchable, and how many builds it took (target: one).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ENV, git, median, percentile, print_table, stdlib_repo  # noqa: E402
from scale import scaled_repo  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]  # bench/mcp.py is not the SDK

GIT_ID = ["-c", "user.name=bench", "-c", "user.email=bench@example.com"]
SEARCH_TIMEOUT = 120.0
SWITCH_TIMEOUT = 600.0  # a branch switch rebuilds most of the tree: minutes on a loaded machine


def io_of(pid: int) -> dict[str, int]:
    rows = Path(f"/proc/{pid}/io").read_text().splitlines()
    return {k: int(v) for k, v in (r.split(": ") for r in rows)}


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def written_below(pid: int) -> int:
    """Bytes written by `pid` and every live process below it (each one's count includes the
    children it reaped: the watcher's builder and the builds it forked)."""
    total = io_of(pid)["write_bytes"]
    for child in children(pid):
        try:
            total += written_below(child)
        except OSError:  # exited meanwhile: counted by its parent once reaped
            pass
    return total


def run_build_measured(python: str, repo: Path, *extra: str) -> tuple[float, int, float]:
    """(seconds, bytes written, CPU seconds) of one `codeagent build` of the work tree in a
    fresh process (/proc/<pid>/io and stat read before the child is reaped: waitid WNOWAIT)."""
    start = time.perf_counter()
    proc = subprocess.Popen([python, "-m", "codeagent", "build", str(repo), "--json", *extra], env=ENV,
                            cwd=tempfile.gettempdir(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    written = io_of(proc.pid)["write_bytes"]
    fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime
    proc.wait()
    if proc.returncode:
        raise SystemExit(f"build failed:\n{proc.stderr.read().decode()}")
    return time.perf_counter() - start, written, cpu


def edit(repo: Path, rel: str, name: str) -> None:
    path = repo / rel
    path.write_bytes(path.read_bytes() + f"\n\ndef {name}():\n    return 1\n".encode())


def targets(repo: Path, n: int) -> list[str]:
    """n mid-sized files to edit (deterministic)."""
    files = sorted(str(p.relative_to(repo)) for p in repo.rglob("*.py")
                   if ".codeagent" not in p.parts and 4_000 < p.stat().st_size < 40_000)
    return random.Random(7).sample(files, min(n, len(files)))


PATHS = {"copy the database (--consolidate)": ("--consolidate",), "overlay": ()}


def one_file_builds(python: str, repo: Path, edits: int) -> dict[str, dict[str, list[float]]]:
    """One-file edits, each built by a fresh `codeagent build`, the paths alternating edit by
    edit (the same load for both); an overlay build after a consolidated one starts a new
    overlay, so each overlay figure is that of a one-file overlay."""
    out: dict[str, dict[str, list[float]]] = {p: {"seconds": [], "written": [], "cpu": []} for p in PATHS}
    for i, rel in enumerate(targets(repo, edits * len(PATHS))):
        path = list(PATHS)[i % len(PATHS)]
        edit(repo, rel, f"cli_probe_{i}_{os.getpid()}")
        for key, value in zip(("seconds", "written", "cpu"), run_build_measured(python, repo, *PATHS[path])):
            out[path][key].append(value)
    return out


def build_rows(scale: int, builds: dict[str, dict[str, list[float]]]) -> list[list[object]]:
    rows = []
    for path, got in builds.items():
        what = f"{scale}x: codeagent build, {path}"
        rows.append([what, f"seconds / CPU seconds p50 over {len(got['seconds'])}",
                     f"{median(got['seconds']):.2f} / {median(got['cpu']):.2f} s"])
        rows.append([what, "bytes written per one-file edit (median)", f"{median(got['written']) / 1e6:.2f} MB"])
    return rows


async def _found(client, name: str) -> bool:
    result = await client.call_tool("search_symbols", {"query": name, "match": "exact"})
    return bool((result.structured_content or {}).get("results"))


async def _until_found(client, name: str, started: float, timeout: float = SEARCH_TIMEOUT) -> float:
    import anyio

    while not await _found(client, name):
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"{name} was not searchable within {timeout}s")
        await anyio.sleep(0.02)
    return time.perf_counter() - started


async def last_build(client, key: str = "last_build") -> dict:
    """The watcher's last build_done event (`last_graph_build`: of a graph step run after its
    build published), as the server's index resource reports it."""
    body = json.loads((await client.read_resource("codeagent://index")).contents[0].text)
    return body.get(key) or {}


async def _graph_exact(client, name: str, started: float) -> float:
    """Seconds from `started` until get_callers on `name` answers from the manifest's own graph
    (metadata graph `ready`; a code without two-phase builds never says otherwise)."""
    import anyio

    hit = (await client.call_tool("search_symbols", {"query": name, "match": "exact"})).structured_content
    while True:
        got = (await client.call_tool("get_callers", {"symbol_id": hit["results"][0]["symbol_id"]})).structured_content
        if got["metadata"].get("graph", "ready") == "ready":
            return time.perf_counter() - started
        if time.perf_counter() - started > SEARCH_TIMEOUT:
            raise SystemExit(f"the graph of {name} did not land within {SEARCH_TIMEOUT}s")
        await anyio.sleep(0.02)


async def graph_edits(client, repo: Path, n: int) -> dict[str, list[float]]:
    """`n` one-file edits, each followed by a graph answer: edit -> searchable and edit ->
    a get_callers answer from the edit's own graph (the graph step's build included), and
    the graph step's build (seconds, CPU) when it ran as a build of its own."""
    import anyio

    out: dict[str, list[float]] = {"edit -> searchable": [], "edit -> graph answer": [],
                                   "graph build": [], "graph build CPU seconds": []}
    for i, rel in enumerate(targets(repo, 10**6)[-n:]):
        name = f"graph_probe_{i}_{os.getpid()}"
        started = time.perf_counter()
        edit(repo, rel, name)
        out["edit -> searchable"].append(await _until_found(client, name, started))
        out["edit -> graph answer"].append(await _graph_exact(client, name, started))
        await settle(client, quiet=1.0)
        graph = await last_build(client, "last_graph_build")
        if graph.get("manifest_id") == (await last_build(client)).get("manifest_id"):
            out["graph build"].append(graph["seconds"])
            out["graph build CPU seconds"].append(graph.get("cpu") or float("nan"))
        await anyio.sleep(0.3)
    return out


def breakdown(edited_at: float, seconds: float, build: dict) -> dict[str, float]:
    """Where one edit's seconds went, from the build_done event's wall-clock end (`at`) and
    its length: edit -> build started (the file event, the debounce, the filter), the build
    (the child's start, its phases), build done -> the client's answer (the event reaching
    the server, its swap to the new manifest, the first request on it, the client's poll)."""
    if "at" not in build:  # a watcher that does not say when its builds ended
        return {}
    start = build["at"] - build["seconds"]
    phases = build.get("phases") or {}
    graph = {"build: graph step": phases["graph"]} if phases.get("graph") else {}  # a two-phase build's runs apart
    return {"to build start": start - edited_at, "build": build["seconds"],
            "build: assemble": phases.get("assemble", float("nan")), **graph,
            "build: CPU seconds": build.get("cpu") or float("nan"),
            "build done -> answer": edited_at + seconds - build["at"]}


def builds_logged(repo: Path) -> int:
    log = repo / ".codeagent" / "logs" / "builds.jsonl"
    return len(log.read_text().splitlines()) if log.exists() else 0


async def watched(python: str, repo: Path, edits: int, switch_files: int, graph_n: int = 0,
                  json_out: Path | None = None) -> dict:
    """Edits and a branch switch with `serve --watch` running and a client querying (the
    edits' figures written to `json_out` as soon as they are in)."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=python, args=["-m", "codeagent", "serve", "--repo", str(repo),
                                                         "--watch"],
                                   env=ENV, cwd=tempfile.gettempdir())
    me = os.getpid()
    async with Client(params, read_timeout_seconds=120) as client:
        server = next(p for p in children(me) if "serve" in Path(f"/proc/{p}/cmdline").read_text())
        for _ in range(600):  # the watcher's catch-up build (nothing to do: already built)
            status = (await client.call_tool("index_status", {})).structured_content
            watcher = children(server)
            if watcher and status["index_status"] == "ready" and status.get("recent_builds"):
                break
            await anyio.sleep(0.1)
        await anyio.sleep(1.0)
        watcher = children(server)[0]
        before = (written_below(watcher), io_of(server)["write_bytes"], builds_logged(repo))
        latencies, parts = [], []
        for i, rel in enumerate(targets(repo, edits)):
            name = f"watch_probe_{i}_{me}"
            edited_at, started = time.time(), time.perf_counter()
            edit(repo, rel, name)
            latencies.append(await _until_found(client, name, started))
            parts.append(breakdown(edited_at, latencies[-1], await last_build(client)))
            await anyio.sleep(0.3)  # an agent reads the answer before its next edit
        if json_out:
            json_out.write_text(json.dumps({"latencies": latencies, "parts": parts,
                                            "load": os.getloadavg()[0]}, indent=1))
        await settle(client)
        after = (written_below(watcher), io_of(server)["write_bytes"], builds_logged(repo))
        graphs = await graph_edits(client, repo, graph_n) if graph_n else {}
        switch = await branch_switch(client, repo, switch_files)
    return {"latencies": latencies, "parts": parts, "watcher_written": after[0] - before[0],
            "server_written": after[1] - before[1], "builds": after[2] - before[2], "switch": switch,
            "graphs": graphs}


async def settle(client, quiet: float = 3.0) -> None:
    """Wait until no build has run for `quiet` seconds."""
    import anyio

    calm = time.perf_counter()
    while time.perf_counter() - calm < quiet:
        status = (await client.call_tool("index_status", {})).structured_content
        if status["index_status"] == "indexing":
            calm = time.perf_counter()
        await anyio.sleep(0.2)


async def branch_switch(client, repo: Path, n: int) -> dict:
    """Check out a branch that rewrites n files; time until its own symbol is searchable."""
    import anyio

    branch = f"switch-{os.getpid()}"
    files = targets(repo, 10**6)[:n]
    if len(files) < n:
        files = sorted(str(p.relative_to(repo)) for p in repo.rglob("*.py")
                       if ".codeagent" not in p.parts)[:n]
    git(repo, "checkout", "-q", "-b", branch)  # the edits so far come along
    name = f"switch_probe_{os.getpid()}"
    for rel in files:
        (repo / rel).write_bytes((repo / rel).read_bytes() + b"\n# switched\n")
    edit(repo, files[0], name)
    git(repo, "add", "-A")
    git(repo, *GIT_ID, "commit", "-qm", "switch")
    git(repo, "checkout", "-q", "main")
    await settle(client)  # the switch back's own build is not counted
    builds = builds_logged(repo)
    started = time.perf_counter()
    git(repo, "checkout", "-q", branch)
    seconds = await _until_found(client, name, started, SWITCH_TIMEOUT)
    await settle(client)
    done = builds_logged(repo) - builds
    git(repo, "checkout", "-q", "main")  # the corpus stays one commit: the next run reuses it
    git(repo, "branch", "-q", "-D", branch)
    return {"files": len(files), "seconds": seconds, "builds": done}


def assembled_size(repo: Path) -> str:
    """The size of the work tree's assembled database (for an overlay: its base's, and the
    overlay's files)."""
    assembled = repo / ".codeagent" / "assembled"
    directory = assembled / (repo / ".codeagent" / "refs" / "worktree").read_text().strip()
    marker = directory / "OVERLAY"
    if not marker.exists():
        return f"assembled database {_mb(directory.glob('index.duckdb*'))}"
    base = assembled / json.loads(marker.read_text())["base"]
    return (f"assembled database {_mb(base.glob('index.duckdb*'))} with an overlay of "
            f"{_mb(p for p in directory.rglob('*.duckdb') if p.is_file())}")


def _mb(paths) -> str:
    return f"{sum(p.stat().st_size for p in paths) / 1e6:.1f} MB"


def _by_part(parts: list[dict[str, float]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for p in parts:
        for k, v in p.items():
            out.setdefault(k, []).append(v)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edits", type=int, default=50)
    ap.add_argument("--current-edits", type=int, default=5,
                    help="one-file edits built by a fresh `codeagent build`, per path and scale "
                         "(0: none, only the watch figures)")
    ap.add_argument("--scales", default="1", help="corpus scales of the one-file builds, e.g. 1,3")
    ap.add_argument("--switch-files", type=int, default=2000)
    ap.add_argument("--corpus", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-watch")
    ap.add_argument("--graph-edits", type=int, default=10,
                    help="one-file edits each followed by a graph answer (edit -> exact callers)")
    ap.add_argument("--json-out", type=Path, default=None,
                    help="also write each edit's latency and breakdown here (JSON)")
    args = ap.parse_args()
    import anyio

    python = sys.executable
    repo = stdlib_repo(args.corpus)
    git(repo, "reset", "-q", "--hard")
    wall, _, _ = run_build_measured(python, repo)
    print(f"corpus: {repo}, first build {wall:.1f} s, {assembled_size(repo)}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    rows = []
    for scale in (int(x) for x in args.scales.split(",") if args.current_edits):
        if scale == 1:
            rows += build_rows(1, one_file_builds(python, repo, args.current_edits))
            continue
        big = scaled_repo(args.corpus.with_name(f"{args.corpus.name}-{scale}x"), scale)
        wall, _, _ = run_build_measured(python, big)
        print(f"{scale}x corpus: {big}, build {wall:.1f} s")
        rows += build_rows(scale, one_file_builds(python, big, args.current_edits))
        git(big, "reset", "-q", "--hard")
    got = anyio.run(watched, python, repo, args.edits, args.switch_files, args.graph_edits, args.json_out)
    lat, n = got["latencies"], len(got["latencies"])
    mb = 1e6
    print(f"load average {os.getloadavg()[0]:.1f}")
    print_table(["path", "what", "figure"], rows + [
        ["serve --watch", f"edit -> searchable p50 / p95 over {n}",
         f"{percentile(lat, 50):.2f} / {percentile(lat, 95):.2f} s"],
        *[["serve --watch", f"  {part} p50 / p95",
           f"{percentile(values, 50):.2f} / {percentile(values, 95):.2f} s"]
          for part, values in _by_part(got["parts"]).items()],
        ["serve --watch", "builds for the edits (graph steps included)", str(got["builds"])],
        *[["serve --watch", f"graph edits: {what} p50 / p95 over {len(values)}",
           f"{percentile(values, 50):.2f} / {percentile(values, 95):.2f} s"]
          for what, values in got["graphs"].items() if values],
        ["serve --watch", "watcher + builds: bytes written per edit",
         f"{got['watcher_written'] / max(n, 1) / mb:.1f} MB"],
        ["serve --watch", "server: bytes written per edit", f"{got['server_written'] / max(n, 1) / mb:.2f} MB"],
        ["serve --watch", f"branch switch ({got['switch']['files']} files) -> searchable",
         f"{got['switch']['seconds']:.2f} s, {got['switch']['builds']} build(s)"],
    ])


if __name__ == "__main__":
    main()
