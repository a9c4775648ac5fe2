"""One-file edits to a complete index (graph included) on the stdlib corpus: this code beside
the previous code's and ctags -R, alternated round by round, in one run.

    python bench/edit.py --against /path/to/previous/.venv/bin/python [--rounds 5] [--corpus DIR] [--daemon]
        [--kinds comment,repocall]

Each round edits json/encoder.py four ways, one after the other, and after each edit runs a
fresh `codeagent build --json` process (imports included) of each code (with --daemon: the
same command sent to a `codeagent daemon` of that code started for the run, which forks a
warm process per command), in alternating order,
each into its own store (copies of one cold build: the same base), then one `ctags -R` of the
corpus. The edits, each changing only its own aspect of the file:
  comment  the trailing comment changes (bench/build.py's edit: no line moves)
  lines    1-3 comment lines inserted near the top (every line below moves)
  call     a module-level call of a builtin added or removed (`len(...)`: a reference no
           symbol is named after, inert for the graph: overlay_lines.py carries the graph)
  repocall a module-level call of a function the file defines added or removed
           (`py_encode_basestring(...)`: a resolved reference changes; overlay_refs.py
           resolves the file's references again in place, the previous code ran the graph step)
Prints, per edit kind and code, the median and range of CPU seconds (user+sys, children
included) and wall seconds, the ratio of the median CPU to ctags' median CPU, this code's CPU
over the previous code's, in how many of the builds a graph step ran (`phases.graph` > 0),
and /proc/loadavg before and after. CPU is the measure to read on a
loaded machine; the wall target (<= 0.5 s) is for a quiet one. Target (issue 41): one-file
edit CPU <= 0.4x one ctags -R run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build import run_with_rss, started_daemon  # noqa: E402
from corpus import git, median, print_table, stdlib_repo  # noqa: E402

TARGET = "json/encoder.py"
KINDS = ("comment", "lines", "call", "repocall")
PIN = Path("/work/wt/pin-edit-base/.venv/bin/python")


def content(original: str, state: dict) -> str:
    """The target file in `state`: `lines` comment lines after its first, a module-level call
    of a builtin when `call`, of the file's own function when `repocall`, and the trailing
    comment `tag`."""
    head, rest = original.split("\n", 1)
    body = head + "\n" + "# moved\n" * state["lines"] + rest
    if state["call"]:
        body += "\nlen('edit probe')\n"
    if state.get("repocall"):
        body += "\npy_encode_basestring('edit probe')\n"
    return body + f"\n# edit {state['tag']}\n"


def next_state(state: dict, kind: str, round_no: int) -> dict:
    """The state after an edit of `kind`: only that aspect changes."""
    if kind == "comment":
        return {**state, "tag": f"{round_no}-{state['tag']}"[:40]}
    if kind == "lines":
        return {**state, "lines": state["lines"] % 3 + 1}
    if kind == "repocall":
        return {**state, "repocall": not state.get("repocall")}
    return {**state, "call": not state["call"]}


def ensure_stores(repo: Path, stores: Path, codes: dict[str, str]) -> dict[str, Path]:
    """A store per code, both copies of one cold build of the corpus (REPO/.codeagent when
    there is one, else built now by this code)."""
    stores.mkdir(parents=True, exist_ok=True)
    first = stores / "current"
    if not (first / "refs").exists():
        shutil.rmtree(first, ignore_errors=True)
        if (repo / ".codeagent" / "refs").exists():
            shutil.copytree(repo / ".codeagent", first, symlinks=True)
        else:
            print("cold build of the corpus (once) ...", flush=True)
            run_with_rss([sys.executable, "-m", "codeagent", "build", str(repo), "--json", "--store", str(first)],
                         Path(tempfile.gettempdir()))
    out = {}
    for name in codes:
        store = stores / name
        if not (store / "refs").exists():
            shutil.rmtree(store, ignore_errors=True)
            shutil.copytree(first, store, symlinks=True)
        out[name] = store
    return out


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", "--baseline", dest="baseline", default=str(PIN) if PIN.exists() else None,
                    help=f"python of the previous code's environment (default {PIN})")
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help=f"the edits of each round, comma-separated, in this order (default {','.join(KINDS)})")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--corpus", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-edit")
    ap.add_argument("--stores", type=Path, help="default: CORPUS-stores")
    ap.add_argument("--daemon", action="store_true",
                    help="send each build to a `codeagent daemon` of its code started for the run (CPU: the "
                         "client's plus the daemon's forked command's) instead of a fresh process")
    args = ap.parse_args()
    if not args.baseline:
        raise SystemExit("--against PYTHON is required (the previous code's environment)")
    kinds = tuple(k for k in args.kinds.split(",") if k)
    if not kinds or set(kinds) - set(KINDS):
        raise SystemExit(f"--kinds: a comma-separated choice of {', '.join(KINDS)}")
    repo = stdlib_repo(args.corpus)
    codes = {"current": sys.executable, "baseline": args.baseline}
    stores = ensure_stores(repo, args.stores or args.corpus.with_name(args.corpus.name + "-stores"), codes)
    outside = Path(tempfile.mkdtemp(prefix="codeagent-bench-cwd-"))  # not inside the corpus: see build.py
    target = repo / TARGET
    original = git(repo, "show", f"HEAD:{TARGET}")
    times = {(k, c): {"cpu": [], "wall": [], "graph": 0} for k in kinds for c in codes}
    ctags: list[float] = []
    loads = [loadavg()]
    state = {"lines": 0, "call": False, "repocall": False, "tag": "start"}
    daemons = contextlib.ExitStack()
    routes = {name: daemons.enter_context(started_daemon(codes[name])) if args.daemon else (None, lambda: 0.0)
              for name in codes}

    def run(name: str, settle: bool = False) -> tuple[float, float, bool]:
        cmd = [codes[name], "-m", "codeagent", "build", str(repo), "--json", "--store", str(stores[name])]
        env, reaped = routes[name]
        before = reaped()
        wall, _, out, cpu = run_with_rss(cmd, outside, env)
        assert settle or json.loads(out)["files_parsed"] <= 1, out
        return wall, cpu + reaped() - before, json.loads(out)["phases"].get("graph", 0) > 0

    try:
        target.write_text(content(original, state))
        for name in codes:  # settle: each store's index is of this state, graph complete (a code
            run(name, settle=True)  # of another shard or assembly version rebuilds its copy here)
            run(name, settle=True)
        for r in range(args.rounds):
            for k, kind in enumerate(kinds):
                state = next_state(state, kind, r)
                target.write_text(content(original, state))
                order = list(codes) if (r + k) % 2 == 0 else list(codes)[::-1]
                for name in order:
                    wall, cpu, graph = run(name)
                    times[(kind, name)]["graph"] += graph
                    times[(kind, name)]["wall"].append(wall)
                    times[(kind, name)]["cpu"].append(cpu)
            with tempfile.TemporaryDirectory() as tmp:
                ctags.append(run_with_rss(["ctags", "-R", "--exclude=.codeagent", "-f", str(Path(tmp) / "tags"), "."],
                                          repo)[3])
            loads.append(loadavg())
    finally:
        target.write_text(original)
        daemons.close()
        shutil.rmtree(outside, ignore_errors=True)
    report(args, repo, times, ctags, loads, kinds)


def report(args, repo: Path, times: dict, ctags: list[float], loads: list[str], kinds: tuple[str, ...]) -> None:
    """The table: per edit kind and code, CPU and wall medians and ranges, the ratios, the graph steps run."""
    ct = median(ctags)
    codes = ("current", "baseline")
    rows = []
    for kind in kinds:
        for name in codes:
            cpu, wall = times[(kind, name)]["cpu"], times[(kind, name)]["wall"]
            rows.append([kind, name, f"{median(cpu):.3f} ({min(cpu):.2f}-{max(cpu):.2f})",
                         f"{median(wall):.3f} ({min(wall):.2f}-{max(wall):.2f})", f"{median(cpu) / ct:.2f}x",
                         f"{median(cpu) / median(times[(kind, 'baseline')]['cpu']):.2f}" if name == "current" else "",
                         f"{times[(kind, name)]['graph']}/{len(cpu)}"])
    rows.append(["ctags -R", "", f"{ct:.3f} ({min(ctags):.2f}-{max(ctags):.2f})", "", "1.00x", "", ""])
    print(f"corpus: {repo}; {args.rounds} rounds, codes alternating; baseline: {args.baseline}"
          + ("; each build sent to a daemon of its code" if args.daemon else "; a fresh process per build"))
    print_table(["edit", "code", "CPU s median (range)", "wall s median (range)", "CPU / ctags CPU",
                 "current / baseline CPU",
                 "graph step ran"], rows)
    print("load average (1, 5, 15 min) before, then after each round: " + " | ".join(loads))


if __name__ == "__main__":
    main()
