"""Scale benchmark: 1x, 3x and 10x the stdlib corpus, build side and serve side.

    python bench/scale.py [--scales 1,3,10] [--queries 100] [--build-arg=--memory=1G]

Corpus Nx: N copies of the stdlib's .py files under c00/ ... (copy i > 0 has a `# copy i`
line appended to each file, so every copy is new content the build must parse; identical
copies would cost one parse). Per scale it prints: cold build wall, peak RSS (the largest
process, and the sum over the build's process tree sampled every 0.1 s: parse workers
included), store size; then `codeagent serve` (stdio) RSS after start, after the first
lookup_symbol, after N mixed queries, and the RSS and PSS of two servers on the same index
(PSS counts shared pages once: what the two cost together), and the first query's latency.
Targets (issue 24) are printed beside the figures of this run.

--baseline PYTHON (an interpreter with the previous code installed) measures that code in the
same run: its cold build, then servers of both codes on the index this code built (the same
on-disk format), alternated --rounds times, medians printed side by side. "First query" is
from the answer to `initialize` to the first look-up's answer; "start to first answer" from
spawning the process. The load average is printed with each scale.

--serve-only measures the servers on the indexes a previous run left in --corpus-dir (a cold
10x build takes most of an hour on a loaded 2-core machine; the on-disk format is the same).

--touch sets every file's mtime to now before the servers start, so the build's stat cache
holds none of them, as after a copy, a restore or a `touch`: a server's first look at the work
tree's freshness hashes every file (first answers say `freshness: unknown` while it runs).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ENV, git, print_table, stdlib_files, STDLIB  # noqa: E402

MIB = 1 << 20
AT_REST = 1.5  # seconds after a burst before RSS is read: a server drops mapped pages when idle
# The first is the first query's, and must be found ("c00.json.decoder.JSONDecoder" is not:
# a package's modules are not named after the copy's directory, a top-level module is).
LOOKUPS = ["copy.deepcopy", "collections.OrderedDict", "pathlib.Path",
           "logging.getLogger", "json.decoder.JSONDecoder", "argparse.ArgumentParser"]
QUERIES = ["parse url query string", "OrderedDict", "thread pool executor",
           "ValueError: invalid literal", "deepcopy", "socket timeout", "read csv rows"]


def scaled_repo(dest: Path, copies: int) -> Path:
    """A git repository at DEST with `copies` copies of the stdlib .py files (reused when built)."""
    if (dest / ".git").exists() and (dest / ".copies").exists() and (dest / ".copies").read_text() == str(copies):
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    files = stdlib_files()
    for i in range(copies):
        tail = f"\n# copy {i}\n".encode() if i else b""
        for src in files:
            target = dest / f"c{i:02d}" / src.relative_to(STDLIB)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(src.read_bytes() + tail)
    (dest / ".gitignore").write_text(".copies\n")
    (dest / ".copies").write_text(str(copies))
    git(dest, "init", "-q", "-b", "main")
    for args in (("add", "-A"), ("commit", "-qm", f"stdlib x{copies}")):
        git(dest, "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args)
    return dest


def _tree_rss(pid: int) -> int:
    """Bytes resident in `pid` and its descendants."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as fh:
                total += int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo += [int(c) for c in fh.read().split()]
        except (OSError, ValueError):
            continue
    return total


def measured_run(cmd: list[str], cwd: Path) -> tuple[float, int, int, str]:
    """(wall seconds, peak RSS of the largest process, peak RSS of the process tree, stdout)."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    peak, streams = [0], {}
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            peak[0] = max(peak[0], _tree_rss(proc.pid))

    def drain(name: str, stream) -> None:
        streams[name] = stream.read()

    threads = [threading.Thread(target=sample, daemon=True),
               threading.Thread(target=drain, args=("out", proc.stdout), daemon=True),
               threading.Thread(target=drain, args=("err", proc.stderr), daemon=True)]
    for t in threads:
        t.start()
    _, status, usage = os.wait4(proc.pid, 0)
    done.set()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    if status:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{streams['err'].decode()[-3000:]}")
    maxrss = usage.ru_maxrss * 1024
    return wall, maxrss, max(peak[0], maxrss), streams["out"].decode()


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


class Server:
    """`codeagent serve` over stdio with a minimal JSON-RPC line client."""

    def __init__(self, repo: Path, cwd: Path, python: str = sys.executable) -> None:
        self.proc = subprocess.Popen([python, "-m", "codeagent", "serve", "--repo", str(repo)],
                                     cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=ENV)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench-scale", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            msg = json.loads(line)
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise SystemExit(f"{method} failed: {msg['error']}")
                return msg["result"]
        raise SystemExit(f"the server closed its output during {method}")

    def call(self, tool: str, args: dict) -> dict:
        return self.request("tools/call", {"name": tool, "arguments": args})

    def memory(self) -> tuple[int, int]:
        """(RSS, PSS) in bytes."""
        fields = {}
        with open(f"/proc/{self.proc.pid}/smaps_rollup") as fh:
            for line in fh:
                parts = line.split()
                if parts[0] in ("Rss:", "Pss:"):
                    fields[parts[0]] = int(parts[1]) * 1024
        return fields["Rss:"], fields["Pss:"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def mixed_calls(n: int) -> list[tuple[str, dict]]:
    kinds = [("lookup_symbol", lambda i: {"qualified_name": f"c00.{LOOKUPS[i % len(LOOKUPS)]}"}),
             ("search_code", lambda i: {"query": QUERIES[i % len(QUERIES)]}),
             ("search_symbols", lambda i: {"query": LOOKUPS[i % len(LOOKUPS)].rsplit(".", 1)[1]}),
             ("get_callers", lambda i: {"symbol_id": f"c00.{LOOKUPS[i % len(LOOKUPS)]}"}),
             ("get_file_outline", lambda i: {"path": "c00/json/decoder.py"})]
    return [(kinds[i % len(kinds)][0], kinds[i % len(kinds)][1](i)) for i in range(n)]


def serve_figures(repo: Path, cwd: Path, queries: int, python: str = sys.executable) -> dict[str, float]:
    spawned = time.perf_counter()
    first = Server(repo, cwd, python)
    try:
        after_start = first.memory()[0]
        started = time.perf_counter()
        found = first.call("lookup_symbol", {"qualified_name": f"c00.{LOOKUPS[0]}"})
        answered = time.perf_counter()
        if not found.get("structuredContent", {}).get("results"):
            raise SystemExit(f"the first look-up found nothing: {json.dumps(found)[:500]}")
        after_lookup = first.memory()[0]
        for tool, args in mixed_calls(queries):
            first.call(tool, args)
        busy = first.memory()[0]
        time.sleep(AT_REST)
        after_mixed, pss_mixed = first.memory()
        second = Server(repo, cwd, python)
        try:
            for tool, args in mixed_calls(queries):
                second.call(tool, args)
            time.sleep(AT_REST)
            (rss1, pss1), (rss2, pss2) = first.memory(), second.memory()
        finally:
            second.close()
    finally:
        first.close()
    return {"rss_start": after_start, "rss_first_lookup": after_lookup, "rss_mixed": after_mixed,
            "rss_mixed_busy": busy,
            "pss_mixed": pss_mixed, "first_query_s": answered - started,
            "start_to_answer_s": answered - spawned, "two_rss": rss1 + rss2, "two_pss": pss1 + pss2}


def build_figures(repo: Path, cwd: Path, python: str, build_args: list[str]) -> dict[str, float]:
    """A cold build of `repo` with `python`'s codeagent: wall, CPU seconds (the build and the
    workers it waited for: what the load average does not inflate), peak RSS, store bytes."""
    shutil.rmtree(repo / ".codeagent", ignore_errors=True)
    cmd = [python, "-m", "codeagent", "build", str(repo), "--json", *build_args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, maxrss, tree, _ = measured_run(cmd, cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"wall": wall, "cpu": cpu, "maxrss": maxrss, "tree": tree, "store": dir_bytes(repo / ".codeagent")}


def _mib(v: float) -> str:
    return f"{v / MIB:.0f}"


SERVE_ROWS = [  # (label, figure keys, format)
    ("serve RSS: start / first lookup / after queries", ("rss_start", "rss_first_lookup", "rss_mixed"), _mib),
    ("serve RSS at the last query's answer", ("rss_mixed_busy",), _mib),
    ("serve PSS after queries", ("pss_mixed",), _mib),
    ("two servers: RSS sum / PSS sum", ("two_rss", "two_pss"), _mib),
    ("first query after initialize", ("first_query_s",), lambda v: f"{v * 1000:.0f} ms"),
    ("start to first answer", ("start_to_answer_s",), lambda v: f"{v * 1000:.0f} ms"),
]


def scale_rows(k: int, corpus: str, builds: list[dict], serves: list[list[dict]],
               base_wall: float | None, base_cpu: float | None) -> list[list[str]]:
    """Table rows of one scale: one column per code measured (baseline first)."""
    serve_target = "<= 250 MiB" if k == 1 else "<= 400 MiB" if k == 10 else ""
    rows = [[f"x{k}", "corpus", corpus] + [""] * max(len(builds), len(serves))]
    if builds:
        rows.append(["", "cold build wall", *(f"{b['wall']:.1f} s ({b['wall'] / (base_wall * k):.2f}x linear)"
                                              for b in builds), "<= 1.1x linear"])
        rows.append(["", "cold build CPU", *(f"{b['cpu']:.0f} s ({b['cpu'] / (base_cpu * k):.2f}x linear)"
                                             for b in builds), ""])
        rows.append(["", "build peak RSS (largest process / tree)",
                     *(f"{_mib(b['maxrss'])} / {_mib(b['tree'])} MiB" for b in builds),
                     "<= 1.5 GiB" if k == 10 else ""])
        rows.append(["", "store size", *(f"{b['store'] / 1e6:.0f} MB" for b in builds), ""])
    targets = {"serve RSS: start / first lookup / after queries": serve_target,
               "first query after initialize": "<= 300 ms"}
    for label, keys, fmt_ in SERVE_ROWS if serves else ():
        cells = [" / ".join(fmt_(statistics.median(r[key] for r in runs)) for key in keys)
                 + (" MiB" if fmt_ is _mib else "") for runs in serves]
        rows.append(["", label, *cells, targets.get(label, "")])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", default="1,3,10", help="comma-separated copies of the stdlib")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--build-arg", action="append", default=[], help="passed to `codeagent build`")
    ap.add_argument("--no-serve", action="store_true", help="build figures only")
    ap.add_argument("--serve-only", action="store_true",
                    help="serve figures only, on the index already built in --corpus-dir (no cold build)")
    ap.add_argument("--baseline", metavar="PYTHON", help="also measure the code this interpreter imports")
    ap.add_argument("--rounds", type=int, default=2, help="servers of each code per scale (medians)")
    ap.add_argument("--corpus-dir", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--touch", action="store_true", help="every file's mtime set to now before the servers start")
    args = ap.parse_args()
    scales = sorted(int(s) for s in args.scales.split(","))
    codes = ([("previous", args.baseline)] if args.baseline else []) + [("this", sys.executable)]
    outside = Path(tempfile.mkdtemp(prefix="codeagent-bench-cwd-"))  # not inside the copied stdlib
    rows, base_wall, base_cpu = [], None, None
    for k in scales:
        repo = scaled_repo(args.corpus_dir / f"codeagent-bench-scale-{k}", k)
        listed = subprocess.check_output(["git", "-C", str(repo), "ls-files"], text=True).splitlines()
        size = sum((repo / p).stat().st_size for p in listed)
        builds = [] if args.serve_only else [build_figures(repo, outside, python, args.build_arg)
                                             for _, python in codes]  # this code's last
        base_wall = base_wall or (builds[-1]["wall"] / k if builds else None)
        base_cpu = base_cpu or (builds[-1]["cpu"] / k if builds else None)
        serves: list[list[dict]] = [[] for _ in codes]
        for path in listed if args.touch else ():
            os.utime(repo / path)
        for r in range(0 if args.no_serve else args.rounds):
            for i in (range(len(codes)) if r % 2 == 0 else reversed(range(len(codes)))):
                serves[i].append(serve_figures(repo, outside, args.queries, codes[i][1]))
        for (name, _), b, runs in zip(codes, builds or [None] * len(codes), serves):
            built = "" if b is None else (f"build {b['wall']:.1f} s ({b['cpu']:.0f} s CPU), peak RSS {_mib(b['maxrss'])} MiB (tree "
                                          f"{_mib(b['tree'])} MiB), store {b['store'] / 1e6:.0f} MB; ")
            print(f"x{k} {name}: {built}serve runs: "
                  + "; ".join(", ".join(f"{n} {v * 1000:.0f} ms" if n.endswith("_s") else f"{n} {_mib(v)} MiB"
                                        for n, v in f.items()) for f in runs), flush=True)
        print(f"x{k}: load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        rows += scale_rows(k, f"{len(listed)} files, {size / 1e6:.1f} MB", builds, serves if not args.no_serve else [],
                          base_wall, base_cpu)
    shutil.rmtree(outside, ignore_errors=True)
    print(f"scales {args.scales}; {args.queries} mixed queries per server, {args.rounds} servers per code; "
          f"build args {args.build_arg or 'none'}{'; every file touched before serving' if args.touch else ''}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print_table(["scale", "measure", *(f"{name} ({python})" for name, python in codes), "target"], rows)


if __name__ == "__main__":
    main()
