"""Query latency on the standard-library corpus, per query kind, next to ripgrep.

    python bench/query.py [--dest DIR] [--rounds N] [--baseline PYTHON] [--daemon]

Builds (or reuses) the stdlib corpus index, opens it the way the server does (warm: name
index and in-memory text loaded once, timed separately), then times each query kind over
a fixed, deterministic query set. `rg` runs the same literal and regex patterns over the
same files in the same invocation, each pattern right after ours (full output read back
through a pipe, as our grep returns every match under a 10k cap; rg also reads the few
files that are not UTF-8, which the index skips).
Targets (2 cores): symbol p95 <= 5 ms, BM25 and auto natural-language p95 <= 50 ms, auto on
report-length queries (2,000-25,000 characters, tracebacks included) p95 <= 300 ms, regex <=
2x rg; with --daemon, `codeagent search` through the daemon p50 < 100 ms.

--baseline PYTHON runs this same script under another interpreter (one with the previous
code installed) on its own copy of the corpus first, and prints its medians and the ratio
beside ours: the previous code measured in the same run, under the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import median, percentile, print_table, stdlib_repo  # noqa: E402

NL_QUERIES = ["parse http response headers", "read configuration file sections",
              "compress data with zlib", "thread pool executor shutdown", "format date time string",
              "open a socket connection with timeout", "decode json object", "temporary directory cleanup"]
TERM_QUERIES = ["ordered dict", "socket timeout", "zipfile extract", "unicode decode error",
                "email header", "tar archive member", "async queue", "pickle protocol"]
LITERALS = ["OrderedDict", "def __init__(self, *args", "TimeoutError", "import threading"]
REGEXES = [r"def \w+_handler\(", r"class \w+Error\(", r"^\s*raise \w+Error\(", r"[A-Z]{3,}_[A-Z]+ = \d+"]


def report_queries(repo: Path, n: int = 8, seed: int = 7) -> list[str]:
    """Bug-report-like texts of 2,000-25,000 characters (deterministic): a story in words, a
    traceback through real files of the corpus, and pasted code."""
    rng = random.Random(seed)
    files = sorted(p for p in repo.rglob("*.py") if ".git" not in p.parts)
    out = []
    for i in range(n):
        target = 2_000 + (23_000 * i) // max(n - 1, 1)
        parts = [f"Calling the API with a large payload fails intermittently (report {i}).",
                 "Steps: open a connection, send the request, read the response headers, retry.",
                 "Traceback (most recent call last):"]
        while sum(map(len, parts)) < target:
            f = rng.choice(files)
            lines = f.read_text(encoding="utf-8", errors="replace").splitlines() or [""]
            at = rng.randrange(len(lines))
            parts.append(f'  File "/usr/lib/python3/{f.relative_to(repo)}", line {at + 1}, in handler')
            parts.append("    " + lines[at].strip())
            if rng.random() < 0.3:
                parts += lines[at:at + 12]
        parts.append("ValueError: invalid literal for int() with base 10: 'missing'")
        out.append("\n".join(parts)[:target])
    return out


def _timed(fn, queries, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        for q in queries:
            t = time.perf_counter()
            fn(q)
            out.append((time.perf_counter() - t) * 1000)
    return out


def _symbol_queries(view, n: int = 20) -> dict[str, list[str]]:
    rows = view.sql("""SELECT s.name, coalesce(n.fq_name, s.qualified_name) FROM symbols s
        LEFT JOIN symbol_names n USING (symbol_id) WHERE length(s.name) >= 6
        AND s.name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY hash(s.symbol_id) LIMIT ?""", [n])
    names = [r[0] for r in rows]
    typo = [nm[:2] + nm[3] + nm[2] + nm[4:] for nm in names]  # one transposition
    return {"exact": names, "qualified": [r[1] for r in rows], "prefix": [nm[:4] for nm in names],
            "fuzzy": typo}


def _rg(args: list[str], cwd: Path) -> None:
    subprocess.run(["rg", "-n", "--no-heading", "--color=never", *args, "."], cwd=cwd,
                   capture_output=True, check=False)


def _kinds(view, repo: Path) -> list[tuple]:
    """(name, query function, queries, target) per query kind."""
    from codeagent.query import SearchRequest, callers, file_outline, find_symbols, search, search_text

    sq = _symbol_queries(view)

    def symbols(match: str, refs: bool = False):
        return lambda q: find_symbols(view, q, match=match, include_references=refs)

    return [
        ("symbol exact", symbols("exact"), sq["exact"], "p95<=5"),
        ("symbol qualified", symbols("exact"), sq["qualified"], "p95<=5"),
        ("symbol prefix", symbols("prefix"), sq["prefix"], "p95<=5"),
        ("symbol fuzzy", symbols("fuzzy"), sq["fuzzy"], "p95<=5"),
        ("symbol + references", symbols("exact", refs=True), sq["exact"], ""),
        ("bm25 2 terms", lambda q: search_text(view, q), TERM_QUERIES, "p95<=50"),
        ("bm25 natural language", lambda q: search_text(view, q), NL_QUERIES, "p95<=50"),
        ("auto (fused)", lambda q: search(view, SearchRequest(q)), sq["exact"][:8] + NL_QUERIES, ""),
        ("auto natural language", lambda q: search(view, SearchRequest(q)), NL_QUERIES, "p95<=50"),
        ("auto report-length", lambda q: search(view, SearchRequest(q)), report_queries(repo), "p95<=300"),
        ("callers", lambda q: callers(view, q), sq["qualified"][:10], ""),
        ("outline", lambda q: file_outline(view, q), ["json/decoder.py", "asyncio/base_events.py"], ""),
    ]


def _grep_rows(view, repo: Path, rounds: int, per_pattern: bool = False) -> list[list]:
    """Our grep and rg on the same patterns, alternating pattern by pattern (same load)."""
    from codeagent.query import grep

    rows = []
    have_rg = shutil.which("rg") is not None
    for name, patterns, regex, rg_args in (("literal", LITERALS, False, ["-F"]), ("regex", REGEXES, True, [])):
        ours, theirs = [], []
        for p in patterns:
            mine = _timed(lambda q: grep(view, q, regex=regex, context=0, max_results=10_000), [p], rounds)
            rg = _timed(lambda q: _rg([*rg_args, q], repo), [p], rounds) if have_rg else []
            ours += mine
            theirs += rg
            if per_pattern and rg:
                rows.append([f"  {p}", len(mine), f"{median(mine):.2f}", f"{median(rg):.2f} (rg)", "",
                             f"{median(mine) / median(rg):.2f}x"])
        line = [f"grep {name}", len(ours), f"{median(ours):.2f}", f"{percentile(ours, 95):.2f}", "<=2x rg"]
        if not have_rg:
            rows.append(line + ["rg missing"])
            continue
        rows.append(line + [f"{median(ours) / median(theirs):.2f}x"])
        rows.append([f"rg {name}", len(theirs), f"{median(theirs):.2f}", f"{percentile(theirs, 95):.2f}", "", ""])
    return rows


def _warm_reader(exe: list[str], env: dict, repo: Path, timeout: float = 120.0) -> None:
    """The first search through the daemon starts the repository's warm reader (runtime/warm.py);
    wait until it answers, as it does for every later search of a session."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = subprocess.run([*exe, "search", "warm up", "--repo", str(repo), "--ref", "main"],
                             env={**env, "CODEAGENT_DAEMON_DEBUG": "1"}, capture_output=True, text=True)
        if "answered by the warm reader" in got.stderr:
            return
        time.sleep(0.5)
    print("warning: the daemon's warm reader did not answer; timing cold searches")


def _daemon_rows(repo: Path, rounds: int) -> list[list]:
    """`codeagent search` as a user runs it, handed to a running daemon."""
    exe = [sys.executable, "-m", "codeagent"]
    env = {**os.environ, "CODEAGENT_DAEMON": "1"}
    subprocess.run([*exe, "daemon", "start"], env=env, capture_output=True, check=False)
    try:
        _warm_reader(exe, env, repo)
        ms = []
        for _ in range(rounds):
            for q in NL_QUERIES:
                t = time.perf_counter()
                subprocess.run([*exe, "search", q, "--repo", str(repo), "--ref", "main"], env=env,
                               capture_output=True, check=False)
                ms.append((time.perf_counter() - t) * 1000)
    finally:
        subprocess.run([*exe, "daemon", "stop"], env=env, capture_output=True, check=False)
    return [["cli search (daemon)", len(ms), f"{median(ms):.2f}", f"{percentile(ms, 95):.2f}", "p50<100", ""]]


def run(dest: Path, rounds: int, per_pattern: bool = False, daemon: bool = False) -> list[list]:
    from codeagent.indexer.build import BuildOptions, build
    from codeagent.query import IndexFollower, search_text
    try:  # the previous code (--baseline) copied every text into memory for grep
        from codeagent.query.memtext import text_cursor as warm_texts
    except ImportError:
        from codeagent.query.textscan import segments as warm_texts
    from codeagent.query.symbol_table import SymbolTable

    repo = stdlib_repo(dest)
    t = time.perf_counter()
    result = build(BuildOptions(repo=repo, rev="main"))
    print(f"build: {result.files_total} files, {time.perf_counter() - t:.1f}s "
          f"({'reused' if not result.changed else 'built'}); load average {os.getloadavg()[0]:.1f}")
    follower = IndexFollower(repo, ref="main")
    rows = []
    with follower.view() as view:
        warm_ups = (("name index", lambda: SymbolTable.load(view).names), ("grep texts", lambda: warm_texts(view)),
                    ("first bm25 query (chunk table)", lambda: search_text(view, "warm up")))
        for label, warm in warm_ups:
            t = time.perf_counter()
            warm()
            print(f"warm-up {label}: {(time.perf_counter() - t) * 1000:.0f} ms")
        for name, fn, queries, target in _kinds(view, repo):
            for q in queries[:2]:
                _safe(fn, q)
            ms = _timed(lambda q, fn=fn: _safe(fn, q), queries, rounds)
            rows.append([name, len(ms), f"{median(ms):.2f}", f"{percentile(ms, 95):.2f}", target, ""])
        rows += _grep_rows(view, repo, rounds, per_pattern)
    follower.close()
    if daemon:
        rows += _daemon_rows(repo, rounds)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return rows


def _with_baseline(rows: list[list], old: list[list]) -> tuple[list[str], list[list]]:
    """Our rows with the previous code's p50/p95 and the ratio of the p50s beside them."""
    before = {r[0]: r for r in old}
    out = []
    for r in rows:
        b = before.get(r[0])
        ratio = f"{float(r[2]) / float(b[2]):.2f}x" if b and float(b[2]) > 0 else "—"
        out.append(r[:5] + [b[2] if b else "—", b[3] if b else "—", ratio] + r[5:])
    headers = ["query kind", "n", "p50 ms", "p95 ms", "target", "before p50", "before p95", "p50 vs before",
               "vs rg (p50)"]
    return headers, out


def _safe(fn, q):
    try:
        return fn(q)
    except Exception:  # an ambiguous or unknown name still costs a lookup; timing is what counts
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dest", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-stdlib")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-pattern", action="store_true",
                    help="Also print each grep pattern's median next to rg's.")
    ap.add_argument("--baseline", metavar="PYTHON",
                    help="An interpreter with the previous code installed: measured first, same corpus.")
    ap.add_argument("--daemon", action="store_true", help="Also time `codeagent search` through the daemon.")
    ap.add_argument("--json-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    old = None
    if args.baseline:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "rows.json"
            cmd = [args.baseline, __file__, "--dest", f"{args.dest}-baseline", "--rounds", str(args.rounds),
                   "--json-out", str(out)] + (["--daemon"] if args.daemon else [])
            print("previous code:", flush=True)
            subprocess.run(cmd, check=True)
            old = json.loads(out.read_text())
        print("this code:")
    rows = run(args.dest, args.rounds, args.per_pattern, args.daemon)
    if args.json_out:
        args.json_out.write_text(json.dumps(rows))
        return
    headers = ["query kind", "n", "p50 ms", "p95 ms", "target", "vs rg (p50)"]
    if old is not None:
        headers, rows = _with_baseline(rows, old)
    print_table(headers, rows)


if __name__ == "__main__":
    main()
