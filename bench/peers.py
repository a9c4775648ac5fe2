"""codeagent beside the peers that are installed, on the same corpus, round by round.

    python bench/peers.py [--rounds N] [--repo PATH] [--peer-python PYTHON ...]

Runs `codeagent build` (a fresh process each time, imports included, no daemon) and whatever
of these is installed -- nothing is installed at run time:

  ctags          universal-ctags on PATH: `ctags -R` (no incremental mode: every run is whole)
  code-index-mcp its deep (SQLite) index, built through the package's own index manager as
                 its `build_deep_index` tool does (it rebuilds the whole index on every build)
  aider          aider's repo map (`RepoMap.get_repo_map` over every tracked file, its tags
                 cache on disk as the `aider` command keeps it; tokens counted as chars / 4,
                 since aider's tokenizer would be downloaded)

code-index-mcp and aider are looked for in the interpreter of their console script on PATH
(`code-index-mcp`, `aider`) and in each --peer-python; a missing one is reported
"not installed". Each tool works in its own clone of the corpus (the standard-library corpus
of bench/corpus.py, or --repo PATH, a git repository: its HEAD commit), so no tool indexes
another's store. Each round runs every tool's cold build (empty store), a no-change rebuild
and a one-file edit (a comment appended to one file), the tools' order rotating round by
round so each meets the same load. CPU is user+sys of the tool's process tree (os.wait4 of
the child, which includes the children it waited for); peak RSS is wait4's ru_maxrss (the
largest process of that tree). Prints medians with ranges, the ratio table codeagent / peer,
and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ENV, median, print_table, stdlib_repo  # noqa: E402

EDIT_DEFAULT = "json/encoder.py"  # the stdlib corpus's edited file, as in bench/build.py
MEASURES = ("cold", "noop", "edit")

# Run by a peer's interpreter: one index build of argv[1] (code-index-mcp keeps its index
# under $TMPDIR/code_indexer/<hash>, which the bench points at the clone's store directory).
CIM_DRIVER = """
import sys
from code_index_mcp.indexing.deep_index_manager import DeepIndexManager
m = DeepIndexManager()
sys.exit(0 if m.set_project_path(sys.argv[1]) and m.build_index() else 1)
"""
# aider keeps its tags cache in <root>/.aider.tags.cache.v4 (mtime-checked per file).
AIDER_DRIVER = """
import os, subprocess, sys
from aider.io import InputOutput
from aider.repomap import RepoMap
class Model:  # aider's model counts tokens with a tokenizer it downloads; chars / 4 here
    def token_count(self, text): return len(text) // 4
root = os.path.abspath(sys.argv[1])
files = [os.path.join(root, p) for p in
         subprocess.check_output(["git", "-C", root, "ls-files"], text=True).splitlines()]
rm = RepoMap(map_tokens=1024, root=root, main_model=Model(),
             io=InputOutput(pretty=False, yes=True, fancy_input=False), refresh="always")
sys.exit(0 if rm.get_repo_map([], files) else 1)
"""


@dataclass
class Run:
    wall: float
    cpu: float
    rss_kib: int


@dataclass
class Tool:
    """A tool's build command, "{repo}" and "{store}" standing for its clone and its store."""

    name: str
    version: str
    command: list[str]
    store: str  # "{repo}/..." inside the clone, "{work}/..." beside it
    env: dict = field(default_factory=dict)
    runs: dict = field(default_factory=dict)  # measure -> [Run]
    store_bytes: list = field(default_factory=list)

    def fill(self, text: str, repo: Path, work: Path) -> str:
        return text.replace("{store}", self.store).replace("{repo}", str(repo)).replace("{work}", str(work))


def run_tree(cmd: list[str], cwd: Path, env: dict) -> Run:
    """Wall, CPU (user+sys of the child and the children it waited for) and peak RSS of one
    command; its output is discarded (a failure raises with the end of it)."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        if status:
            out.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed:\n{out.read().decode(errors='replace')[-2000:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)


def _script_python(script: str) -> str | None:
    """The interpreter of a console script on PATH (its #! line), if there is one."""
    path = shutil.which(script)
    if path is None:
        return None
    with open(path, "rb") as f:
        first = f.readline().decode(errors="replace").strip()
    return first[2:].split()[0] if first.startswith("#!") and "python" in first else None


def _version(python: str, module: str, dist: str) -> str | None:
    """`dist`'s version when `python` can import `module`, else None."""
    code = f"import {module}, importlib.metadata as m; print(m.version({dist!r}))"
    got = subprocess.run([python, "-c", code], capture_output=True, text=True, env=ENV,
                         cwd=tempfile.gettempdir())
    return got.stdout.strip() if got.returncode == 0 else None


def find_peer(script: str, module: str, dist: str, extra: list[str]) -> tuple[str, str] | None:
    """(python, version) of the first interpreter that has the peer installed."""
    for python in dict.fromkeys(p for p in [_script_python(script), *extra] if p):
        version = _version(python, module, dist)
        if version:
            return python, version
    return None


def detect(peer_pythons: list[str]) -> tuple[list[Tool], list[str]]:
    """The tools to run (codeagent first) and the names of the peers not installed."""
    import codeagent

    tools = [Tool("codeagent", codeagent.__version__,
                  [sys.executable, "-m", "codeagent", "build", "{repo}", "--json"], "{repo}/.codeagent")]
    missing = []
    ctags = shutil.which("ctags")
    banner = subprocess.run([ctags, "--version"], capture_output=True, text=True).stdout if ctags else ""
    if "Universal Ctags" in banner:
        tools.append(Tool("ctags -R", banner.split(",")[0].replace("Universal Ctags", "").strip(),
                          [ctags, "-R", "--exclude=.git", "-f", "{store}", "{repo}"], "{work}/ctags.tags"))
    else:
        missing.append("ctags (universal-ctags)")
    found = find_peer("code-index-mcp", "code_index_mcp", "code-index-mcp", peer_pythons)
    if found:
        tools.append(Tool("code-index-mcp", found[1], [found[0], "-c", CIM_DRIVER, "{repo}"],
                          "{work}/cim-tmp", env={"TMPDIR": "{store}"}))
    else:
        missing.append("code-index-mcp")
    found = find_peer("aider", "aider.repomap", "aider-chat", peer_pythons)
    if found:
        tools.append(Tool("aider repo map", found[1], [found[0], "-c", AIDER_DRIVER, "{repo}"],
                          "{repo}/.aider.tags.cache.v4"))
    else:
        missing.append("aider (aider-chat)")
    return tools, missing


def _head(repo: Path) -> str | None:
    got = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    return got.stdout.strip() if got.returncode == 0 else None


def clone_for(tool: Tool, corpus: Path, work: Path) -> Path:
    """The tool's own clone of the corpus at its HEAD (made again when that moved), tracked
    files as committed (an interrupted edit undone), its store kept out of git's view."""
    dest = work / tool.name.split()[0]
    if not (dest / ".git").exists() or _head(dest) != _head(corpus):
        shutil.rmtree(dest, ignore_errors=True)
        subprocess.run(["git", "clone", "-q", str(corpus), str(dest)], check=True)
        with open(dest / ".git" / "info" / "exclude", "a") as f:
            f.write("\n/.codeagent/\n/.aider.tags.cache.v4/\n")
    subprocess.run(["git", "-C", str(dest), "checkout", "-q", "--", "."], check=True)
    return dest


def size_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def one_round(tool: Tool, corpus: Path, work: Path, edit: str, n: int) -> None:
    """The tool's cold build, no-change rebuild and one-file edit, recorded on `tool`."""
    repo = clone_for(tool, corpus, work)
    store = Path(tool.fill("{store}", repo, work))
    cmd = [tool.fill(a, repo, work) for a in tool.command]
    env = {**ENV, **{k: tool.fill(v, repo, work) for k, v in tool.env.items()}}
    shutil.rmtree(store, ignore_errors=True) if store.is_dir() else store.unlink(missing_ok=True)
    if "TMPDIR" in tool.env:
        store.mkdir(parents=True)
    quiet = Path(tempfile.mkdtemp(prefix="peers-cwd-"))  # `python -c` puts cwd on sys.path
    try:
        tool.runs.setdefault("cold", []).append(run_tree(cmd, quiet, env))
        tool.store_bytes.append(size_of(store))
        tool.runs.setdefault("noop", []).append(run_tree(cmd, quiet, env))
        target = repo / edit
        original = target.read_bytes()
        try:
            target.write_bytes(original + f"\n# peers edit {n}\n".encode())
            tool.runs.setdefault("edit", []).append(run_tree(cmd, quiet, env))
        finally:
            target.write_bytes(original)
    finally:
        shutil.rmtree(quiet, ignore_errors=True)


def pick_edit(repo: Path, asked: str | None) -> str:
    """The file the one-file edit appends to: --edit, else the stdlib corpus's, else the tracked
    source file of median size."""
    if asked or (repo / EDIT_DEFAULT).is_file():
        return asked or EDIT_DEFAULT
    code = (".py", ".go", ".rs", ".js", ".ts", ".java", ".rb", ".c", ".cs", ".swift", ".kt", ".cpp")
    files = [p for p in subprocess.check_output(["git", "-C", str(repo), "ls-files"], text=True).splitlines()
             if p.endswith(code)]
    if not files:
        raise SystemExit(f"{repo} tracks no source file to edit; pass --edit FILE")
    return sorted(files, key=lambda p: ((repo / p).stat().st_size, p))[len(files) // 2]


def cell(values: list[float], fmt: str = "{:.2f}") -> str:
    """The median, with the range when there are several runs."""
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def stat(tool: Tool, measure: str, what: str) -> list[float]:
    if measure == "store":
        return [b / 1e6 for b in tool.store_bytes]
    return [getattr(r, what) / (1024 if what == "rss_kib" else 1) for r in tool.runs[measure]]


ROWS = [  # (label, measure, field, format) of the ratio table, as in issue 41
    ("cold build CPU s", "cold", "cpu", "{:.2f}"), ("cold build wall s", "cold", "wall", "{:.2f}"),
    ("one-file edit wall s", "edit", "wall", "{:.3f}"), ("one-file edit CPU s", "edit", "cpu", "{:.3f}"),
    ("no-change wall s", "noop", "wall", "{:.3f}"), ("no-change CPU s", "noop", "cpu", "{:.3f}"),
    ("cold peak RSS MiB", "cold", "rss_kib", "{:.0f}"), ("store MB", "store", "", "{:.1f}"),
]


def report(tools: list[Tool]) -> None:
    print_table(["measure"] + [f"{t.name} {t.version}" for t in tools],
                [[label] + [cell(stat(t, m, f), fmt) for t in tools] for label, m, f, fmt in ROWS])
    print("\nratio codeagent / peer (medians; < 1 means codeagent costs less)")
    ours = tools[0]
    rows = []
    for label, m, f, fmt in ROWS:
        mine = median(stat(ours, m, f))
        rows.append([label, fmt.format(mine)]
                    + [f"{mine / median(stat(t, m, f)):.3g}x" if median(stat(t, m, f)) else "-" for t in tools[1:]])
    print_table(["measure", "codeagent"] + [t.name for t in tools[1:]], rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repo", type=Path, help="a git repository (its HEAD) instead of the stdlib corpus")
    ap.add_argument("--edit", help="the file (relative to the repository) the one-file edit appends to")
    ap.add_argument("--peer-python", action="append", default=[], metavar="PYTHON",
                    help="an interpreter to look for code-index-mcp and aider in (repeatable)")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-peers",
                    help="where the corpus and each tool's clone live (kept for the next run)")
    args = ap.parse_args()
    if args.rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    if args.repo is not None and not (args.repo / ".git").exists():
        raise SystemExit(f"--repo {args.repo}: not a git repository (the tools index its HEAD commit)")
    corpus = args.repo.resolve() if args.repo else stdlib_repo(args.work / "stdlib")
    work = args.work / (corpus.name if args.repo else "stdlib-clones")
    work.mkdir(parents=True, exist_ok=True)
    tools, missing = detect(args.peer_python)
    edit = pick_edit(corpus, args.edit)
    tracked = subprocess.check_output(["git", "-C", str(corpus), "ls-files"], text=True).splitlines()
    size = sum((corpus / p).stat().st_size for p in tracked if (corpus / p).is_file())
    print(f"corpus {corpus}: {len(tracked)} files, {size / 1e6:.1f} MB; edit {edit}; {args.rounds} rounds")
    print("tools: " + ", ".join(f"{t.name} {t.version}" for t in tools)
          + "".join(f"; {name}: not installed" for name in missing))
    print(f"load average before: {Path('/proc/loadavg').read_text().strip()}", flush=True)
    for n in range(args.rounds):
        order = tools[n % len(tools):] + tools[:n % len(tools)]
        for tool in order:
            one_round(tool, corpus, work, edit, n)
        print(f"round {n + 1}: {' > '.join(t.name for t in order)}; load "
              f"{Path('/proc/loadavg').read_text().split()[0]}", flush=True)
    print(f"load average after: {Path('/proc/loadavg').read_text().strip()}\n")
    report(tools)


if __name__ == "__main__":
    main()
