"""Real-repository sweep: does every answer hold up on the development set?

    nice -n 5 python bench/sweep.py [NAME ...] [--tags] [--sample 200] [--callers 20]
                                    [--seed 0] [--mirrors DIR] [--workdir DIR] [--verbose]

For each repository (NAME: the part after `+` of a mirror, e.g. `serilog`; default: the
development set's 19 under /work/.mirror), clone the bare mirror (`--no-checkout`), build its
default branch (and with --tags two old tags: those a quarter and half way through its tags
by date) with the real `codeagent build`, then on each index:
  - qualified names: for a random sample of definitions, `show FQ_NAME` answers with that
    symbol (or, a name defined more than once, lists it among the candidates);
  - parents: for each sampled definition universal-ctags tags at the same name and line with
    a scope (not a package, not an anonymous function), the symbol's outline parent (or, for
    a method defined away from its type, its qualified name's owner) is named as the scope's
    last segment;
  - callers: for sampled functions and methods whose name the repository defines once,
    the call sites `git grep -n 'name('` finds in files of the same language (definitions,
    comment lines and other-language files left out) that `callers` lists (recall);
  - search: for sampled definitions whose name at most 5 definitions share, `search NAME`
    (auto mode) lists that definition in its top 10, and ranks first a definition of NAME
    that is public, documented and in a source file when the name has one (issue 45);
  - every command's exit code is a documented one (README "Exit codes", errors.py), and no
    traceback anywhere (build stderr, every query's stderr).
Queries run in this process through the CLI's own entry point (click, standalone off: the
same command code, no 0.4 s start-up per call); builds run as child processes.
Prints one table row per repository and ref. Nothing from the repositories is kept.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import re
import subprocess
import sys
import tempfile
import time
import traceback
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ENV  # noqa: E402

from codeagent import errors  # noqa: E402
from codeagent import format as fmt  # noqa: E402
from codeagent.store import Store  # noqa: E402

MIRRORS = Path("/work/.mirror")
DEV_SET = ("attrs", "rich", "black", "cobra", "chi", "echo", "clap", "hyper", "express", "axios", "got",
           "retrofit", "jackson-core", "AutoMapper", "serilog", "Alamofire", "okhttp", "sinatra", "jq")
TRACEBACK = "Traceback (most recent call last)"
_COMMENT = re.compile(r"^\s*(#|//|/\*|\*|--|;)")
_SCOPE_SPLIT = re.compile(r"::|\.|/|\\")
_ANONYMOUS = re.compile(r"AnonymousFunction|__anon")


def documented_exits() -> set[int]:
    """0, click's usage error (2) and every exit code errors.py gives a CodeagentError subclass
    (1 is the base class's: an unexpected error, never documented as an answer)."""
    codes = {0, 2}
    stack = list(errors.CodeagentError.__subclasses__())
    while stack:
        cls = stack.pop()
        codes.add(cls.exit_code)
        stack.extend(cls.__subclasses__())
    return codes - {1} if errors.CodeagentError.exit_code == 1 else codes


@dataclass
class Row:
    repo: str
    ref: str
    files: int = 0
    symbols: int = 0
    sampled: int = 0
    found: int = 0
    parent_checked: int = 0
    parent_ok: int = 0
    searched: int = 0
    search_found: int = 0
    best_checked: int = 0
    best_first: int = 0
    functions: int = 0
    sites: int = 0
    sites_found: int = 0
    commands: int = 0
    tracebacks: int = 0
    bad_exits: list[int] = field(default_factory=list)
    build_s: float = 0.0
    notes: list[str] = field(default_factory=list)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          errors="replace").stdout


def run_cli(row: Row, *args: str) -> tuple[int, str, str]:
    """Run one codeagent command in this process; (exit code, stdout, stderr)."""
    from codeagent.cli import main  # the CLI after the builds' child processes need none

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main.main(args=list(args), prog_name="codeagent", standalone_mode=False)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception as exc:  # noqa: BLE001 - what the sweep is looking for
            import click  # only to tell a usage error from a crash, once one happened

            if isinstance(exc, click.ClickException):
                exc.show()
                code = exc.exit_code
            else:
                traceback.print_exc()
                code = 1
    row.commands += 1
    row.tracebacks += err.getvalue().count(TRACEBACK)
    if code not in DOCUMENTED:
        row.bad_exits.append(code)
    return code, out.getvalue(), err.getvalue()


def build(row: Row, clone: Path, ref: str) -> str | None:
    """Build `ref` with the real CLI; the manifest id, or None."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "codeagent", "build", str(clone), "--ref", ref, "--json"],
                          capture_output=True, text=True, env=ENV)
    row.build_s += time.monotonic() - started
    row.commands += 1
    row.tracebacks += proc.stderr.count(TRACEBACK)
    if proc.returncode not in DOCUMENTED:
        row.bad_exits.append(proc.returncode)
    if proc.returncode != 0:
        row.notes.append(f"build exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}")
        return None
    return json.loads(proc.stdout)["manifest_id"]


def check_names(row: Row, clone: Path, mid: str, sample: list[tuple], shared: set[str]) -> None:
    """`show FQ_NAME` answers with the symbol, or (a name `shared` by several definitions:
    overloads, platform variants, a namespace declared in many files) exits 2 listing them."""
    for symbol_id, fq_name, *_ in sample:
        code, out, err = run_cli(row, "show", fq_name, "--repo", str(clone), "--ref", mid, "--json", "--no-source")
        row.sampled += 1
        if (code == 0 and json.loads(out).get("symbol_id") == symbol_id) or (
                code == 2 and (symbol_id in out + err or fq_name in shared)):
            row.found += 1
        elif VERBOSE:
            print(f"  show {row.repo} {fq_name}: exit {code} {err.strip()[:200]}", file=sys.stderr)


def check_search(row: Row, clone: Path, mid: str, sample: list[tuple], con) -> None:
    """`search NAME` lists the sampled definition in its top 10 (names with at most 5
    definitions), and first a public, documented source-file definition of NAME if any."""
    from codeagent.roles import SOURCE, file_role  # the CLI's own role rule, as in run_cli

    for symbol_id, _fq, _path, name, *_ in sample:
        defs = con.execute("SELECT symbol_id, path, visibility IN ('public', 'open') AND doc <> '' "
                           "FROM symbols WHERE name = ?", [name]).fetchall()
        if len(name) < 3 or len(defs) > 5:
            continue
        code, out, _ = run_cli(row, "search", name, "--repo", str(clone), "--ref", mid, "--json")
        ids = [h.get("symbol_id") for h in json.loads(out)["results"]] if code == 0 else []
        row.searched += 1
        row.search_found += symbol_id in ids
        best = {sid for sid, path, good in defs if good and file_role(path) == SOURCE}
        if best and len(defs) > 1:
            row.best_checked += 1
            row.best_first += bool(ids) and ids[0] in best
        if VERBOSE and symbol_id not in ids:
            print(f"  search {row.repo} {name}: {symbol_id} not in the top 10", file=sys.stderr)


def ctags_scopes(clone: Path, ref: str, paths: set[str]) -> dict[tuple[str, str, int], tuple[str, str]]:
    """(path, name, line) -> (scope, scope kind) of every tag universal-ctags gives a scope in
    `paths` at `ref`."""
    out: dict[tuple[str, str, int], tuple[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for p in paths:
            dest = Path(tmp) / p
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(subprocess.run(["git", "-C", str(clone), "show", f"{ref}:{p}"],
                                            capture_output=True).stdout)
        proc = subprocess.run(["ctags", "-f", "-", "--output-format=json", "--fields=+nKZ", *sorted(paths)],
                              cwd=tmp, capture_output=True, text=True, errors="replace")
    for line in proc.stdout.splitlines():
        try:
            tag = json.loads(line)
        except ValueError:
            continue
        if tag.get("scope") and "line" in tag:
            out[(tag["path"], tag["name"], tag["line"])] = (tag["scope"], tag.get("scopeKind", ""))
    return out


def check_parents(row: Row, clone: Path, ref: str, sample: list[tuple], parent_name: dict[str, str]) -> None:
    scopes = ctags_scopes(clone, ref, {s[2] for s in sample})
    for _sid, _fq, path, name, name_line, parent_id, qualified_name in sample:
        scope, scope_kind = scopes.get((path, name, name_line), ("", ""))
        want = _SCOPE_SPLIT.split(scope)[-1]
        if not scope or scope_kind == "package" or _ANONYMOUS.match(want):
            continue   # a file's package is its module, not an outline parent; ctags names
            # anonymous scopes (`AnonymousFunction1a2b`, `__anon1a2b`) no outline has
        ours = _SCOPE_SPLIT.split(parent_name.get(parent_id or "", ""))[-1]
        if not ours and _SCOPE_SPLIT.split(qualified_name)[-2:-1] == [want]:
            ours = want   # a method defined away from its type (Go receiver, C++ `A::f`) names it
        row.parent_checked += 1
        if ours == want:
            row.parent_ok += 1
        elif VERBOSE:
            print(f"  parent {row.repo} {path}:{name_line} {name}: ours {ours!r}, ctags {scope!r}", file=sys.stderr)


def grep_sites(clone: Path, ref: str, name: str, language: str, languages: dict[str, str],
               definitions: set[tuple[str, int]]) -> set[tuple[str, int]]:
    pattern = rf"(^|[^A-Za-z0-9_$]){re.escape(name)}[[:space:]]*\("
    sites = set()
    for hit in git(clone, "grep", "-n", "-E", "-I", pattern, ref).splitlines():
        parts = hit.split(":", 3)
        if len(parts) < 4 or not parts[2].isdigit():
            continue
        path, line, text = parts[1], int(parts[2]), parts[3]
        if languages.get(path) != language or (path, line) in definitions or _COMMENT.match(text):
            continue
        sites.add((path, line))
    return sites


def check_callers(row: Row, clone: Path, ref: str, mid: str, con, rng: random.Random, count: int) -> None:
    languages = dict(con.execute("SELECT path, language FROM files WHERE status = 'indexed'").fetchall())
    functions = con.execute("""
        SELECT s.symbol_id, s.name, s.language FROM symbols s JOIN (
            SELECT name FROM symbols GROUP BY name HAVING count(*) = 1) u USING (name)
        WHERE s.kind IN ('function', 'method') AND length(s.name) >= 4 ORDER BY s.symbol_id""").fetchall()
    rng.shuffle(functions)
    for symbol_id, name, language in functions[:count]:
        definitions = {(p, ln) for p, ln in con.execute(
            "SELECT path, unnest([start_line, name_line]) FROM symbols WHERE name = ?", [name]).fetchall()}
        sites = grep_sites(clone, ref, name, language, languages, definitions)
        code, out, _ = run_cli(row, "callers", symbol_id, "--repo", str(clone), "--ref", mid, "--json",
                               "--limit", "10000")
        edges = {(e["path"], e["line"]) for e in json.loads(out)["edges"]} if code == 0 else set()
        row.functions += 1
        row.sites += len(sites)
        row.sites_found += len(sites & edges)
        if VERBOSE and sites - edges:
            print(f"  callers {row.repo} {name}: missed {sorted(sites - edges)[:5]}", file=sys.stderr)


def sweep_ref(row: Row, clone: Path, ref: str, sample_n: int, callers_n: int, seed: int) -> None:
    mid = build(row, clone, ref)
    if mid is None:
        return
    db = Store(clone / ".codeagent").assembled_dir(mid) / fmt.DUCKDB_FILE
    con = duckdb.connect(str(db), read_only=True)
    try:
        row.files = con.execute("SELECT count(*) FROM files WHERE status = 'indexed'").fetchone()[0]
        rows = con.execute("""SELECT s.symbol_id, n.fq_name, s.path, s.name, s.name_line, s.parent_id,
                                     s.qualified_name FROM symbols s JOIN symbol_names n USING (symbol_id)
                              WHERE s.name <> '' ORDER BY s.symbol_id""").fetchall()
        parent_name = dict(con.execute("SELECT symbol_id, name FROM symbols").fetchall())
        row.symbols = len(rows)
        rng = random.Random(f"{seed}:{row.repo}:{ref}")
        sample = rng.sample(rows, min(sample_n, len(rows)))
        shared = {n for (n,) in con.execute(
            "SELECT fq_name FROM symbol_names GROUP BY fq_name HAVING count(*) > 1").fetchall()}
        check_names(row, clone, mid, sample, shared)
        check_parents(row, clone, ref, sample, parent_name)
        check_search(row, clone, mid, sample, con)
        check_callers(row, clone, ref, mid, con, rng, callers_n)
    finally:
        con.close()


def old_tags(clone: Path) -> list[str]:
    tags = git(clone, "tag", "--sort=creatordate").split()
    return list(dict.fromkeys(tags[len(tags) * k // 4] for k in (1, 2))) if tags else []


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:5.1f}% ({a}/{b})" if b else "    -"


def print_table(rows: list[Row]) -> None:
    head = (f"{'repo':14} {'ref':16} {'files':>6} {'symbols':>8} {'qualified-name found':>22} "
            f"{'parent = ctags scope':>22} {'search top 10':>20} {'public documented first':>24} "
            f"{'callers recall vs git grep':>28} {'tracebacks':>10} "
            f"{'undocumented exits':>18} {'build s':>8}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r.repo:14} {r.ref[:16]:16} {r.files:6} {r.symbols:8} {pct(r.found, r.sampled):>22} "
              f"{pct(r.parent_ok, r.parent_checked):>22} {pct(r.search_found, r.searched):>20} "
              f"{pct(r.best_first, r.best_checked):>24} {pct(r.sites_found, r.sites) + f' {r.functions}fn':>28} "
              f"{r.tracebacks:10} {len(r.bad_exits):18} {r.build_s:8.1f}")
        for note in r.notes:
            print(f"    {note}")


DOCUMENTED = documented_exits()
VERBOSE = False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="repositories by name (default: the development set)")
    ap.add_argument("--tags", action="store_true", help="also build and check two old tags")
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--callers", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mirrors", type=Path, default=MIRRORS)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--verbose", action="store_true", help="print each miss to stderr")
    args = ap.parse_args()
    global VERBOSE
    VERBOSE = args.verbose
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="codeagent-sweep-"))
    rows: list[Row] = []
    for name in args.names or DEV_SET:
        mirror = next(iter(sorted(args.mirrors.glob(f"*+{name}/repo"))), None)
        if mirror is None:
            print(f"{name}: no mirror under {args.mirrors}", file=sys.stderr)
            continue
        clone = workdir / name
        if not clone.exists():
            subprocess.run(["git", "clone", "-q", "--no-checkout", str(mirror), str(clone)], check=True)
        refs = ["HEAD"] + (old_tags(clone) if args.tags else [])
        for ref in refs:
            row = Row(name, ref)
            sweep_ref(row, clone, ref, args.sample, args.callers, args.seed)
            rows.append(row)
            print(f"done {name} {ref}: {time.strftime('%H:%M:%S')}", file=sys.stderr, flush=True)
    print_table(rows)


if __name__ == "__main__":
    main()
