"""Are impact's depth-1 dependents real? Checked against SCIP, the precise-reference truth
bench/graph_truth.py already uses (scip-python, scip-typescript from npm).

For each repository (a checkout of its mirror at HEAD, SCIP-indexed by graph_truth's code):
`--commits` synthetic commits on HEAD (git plumbing, no checkout), each changing the body of
`--symbols` functions, methods or classes in distinct non-test files picked at random (a
comment appended to the symbol's last line: every reference stays on its line, so the SCIP
index of HEAD is the truth for both sides). `codeagent impact HEAD..SYNTHETIC --depth 1 --json`
lists the dependents; each is judged against its changed symbol (its `changed` field):

- by the line of the use (the dependent's `at`), as bench/graph_truth.py judges a call edge:
  judged where SCIP has an occurrence of the changed symbol's name on that line (a class and
  its constructor count as one), right when that occurrence is the changed symbol, or when
  what is defined on that line has a SCIP relationship (implementation, reference) to it;
  an override is judged where SCIP defines something on its line, and right by such a
  relationship or by a use inside it (a subclass constructor's `super(...)`). Lines where SCIP resolved
  nothing of that name (an import SCIP could not follow, dynamic code) are unjudged, as are
  changed symbols SCIP has no definition of (a variable, a module's lines);
- by the span, a looser second figure: right when SCIP has an occurrence of the changed
  symbol anywhere in the dependent's lines (in its file for a file-level use).

Recall: every SCIP occurrence of a changed symbol in a non-test file, outside its own span,
mapped to the innermost indexed symbol around it (or the file): found when impact lists that
symbol (or file) at depth 1. Precision is printed for exact edges and for all (exact + by name).

    python bench/impact_precision.py [--mirrors /work/.mirror] [--work /tmp/impact-precision]
        [--only attrs,express] [--commits 2] [--symbols 20] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

# bench/ itself off the path: its mcp.py would shadow the MCP SDK; graph_truth loaded by path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def _load(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bench_{name}", Path(__file__).with_name(f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # graph_truth imports corpus, lexer_defs
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.pop(0)
    return mod


gt = _load("graph_truth")
REPOS = {"attrs": ("python-attrs+attrs", "python"), "rich": ("Textualize+rich", "python"),
         "black": ("psf+black", "python"), "express": ("expressjs+express", "typescript"),
         "axios": ("axios+axios", "typescript"), "got": ("sindresorhus+got", "typescript")}
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "CODEAGENT_DAEMON": "0"}
KINDS = ("function", "method", "class", "constructor")
PER_FILE = 3
COMMENT = {"python": "  # impact-precision", "typescript": "  // impact-precision"}


def git(repo: Path, *args: str, env: dict | None = None, stdin: bytes | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env,
                          input=stdin).stdout.decode()


def codeagent(repo: Path, *args: str) -> str:
    cmd = ["nice", "-n", "5", sys.executable, "-m", "codeagent", *args]
    return subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True, env=ENV).stdout


# --- SCIP: occurrences and relationships ------------------------------------------------------

def scip_facts(scip: Path) -> dict:
    """defs: symbol -> (path, line); uses: symbol -> {(path, line)} of non-definition
    occurrences; at: (path, line) -> {symbols occurring there, not defined}; defined_at:
    (path, line) -> {symbols}; related: symbol -> {symbols it
    implements or refers to by a relationship}; paths: documents' paths."""
    defs, uses, defined_at, related, at = {}, defaultdict(set), defaultdict(set), defaultdict(set), defaultdict(set)
    docs = gt.read_scip(scip)
    for rel, occs in docs:
        for line, _, _, sym, roles in occs:
            if roles & 1:
                defs.setdefault(sym, (rel, line + 1))
                defined_at[(rel, line + 1)].add(sym)
            else:
                uses[sym].add((rel, line + 1))
                at[(rel, line + 1)].add(sym)
    for num, _, v in gt._fields(scip.read_bytes()):
        if num != 2:
            continue
        for dn, _, dv in gt._fields(v):
            if dn != 3:
                continue
            sym, rels = "", []
            for sn, _, sv in gt._fields(dv):
                if sn == 1:
                    sym = sv.decode()
                elif sn == 4:
                    target = next((rv.decode() for rn, _, rv in gt._fields(sv) if rn == 1), "")
                    if target:
                        rels.append(target)
            related[sym].update(rels)
    return {"defs": defs, "uses": uses, "defined_at": defined_at, "related": related, "at": at,
            "paths": {rel for rel, _ in docs}}


def same_symbols(sym: str, defs: dict) -> set[str]:
    """A class and its constructor are one thing to a caller: `C()` / `new C()`."""
    out = {sym}
    if sym.endswith("#"):
        out |= {s for s in (sym + "__init__().", sym + "`<constructor>`().", sym + "<constructor>().") if s in defs}
    elif ("__init__()" in sym or "<constructor>" in sym) and "#" in sym:
        out.add(sym[:sym.rindex("#") + 1])
    return out


def scip_of(change: dict, facts: dict) -> set[str]:
    """The SCIP symbols of a changed entry: the first definition of its name in its lines."""
    short = change["name"].rsplit(".", 1)[-1].rsplit(":", 1)[-1]
    found = sorted((line, sym) for (path, line), syms in facts["defined_at"].items()
                   if path == change["path"] and change["line_start"] <= line <= change["line_end"]
                   for sym in syms if gt.scip_kind(sym) in ("callable", "type")
                   and gt.scip_name(sym) in (short, "constructor", "<constructor>"))
    if not found:
        return set()
    return same_symbols(found[0][1], facts["defs"])


# --- codeagent's side --------------------------------------------------------------------------

def index_rows(repo: Path, manifest_id: str) -> tuple[dict, dict, dict]:
    """(symbol_id -> (path, start, end, kind, name_line), path -> [(start, end, symbol_id)],
    path -> role) of an assembled index."""
    import duckdb

    from codeagent import format as fmt
    from codeagent.store import Store

    db = Store(repo / ".codeagent").assembled_dir(manifest_id) / fmt.DUCKDB_FILE
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT symbol_id, path, start_line, end_line, kind, name_line FROM symbols").fetchall()
        roles = dict(con.execute("SELECT path, role FROM files").fetchall())
    finally:
        con.close()
    by_id = {r[0]: r[1:] for r in rows}
    by_path: dict[str, list] = defaultdict(list)
    for sid, path, start, end, kind, _ in rows:
        if kind in KINDS or kind in ("interface", "struct", "enum", "trait", "module", "namespace"):
            by_path[path].append((start, end, sid))
    return by_id, by_path, roles


def pick(repo: Path, by_id: dict, roles: dict, facts: dict, n: int, rng: random.Random,
         taken: set[str]) -> list[tuple]:
    """`n` symbols with a SCIP definition in non-test files, none picked before, at most
    PER_FILE in one file (so a commit spreads over files, and a small repository still fills
    several commits)."""
    cands = [(sid, *row) for sid, row in by_id.items()
             if row[3] in KINDS and roles.get(row[0]) == "source" and row[0] in facts["paths"] and sid not in taken
             and any(gt.scip_kind(s) in ("callable", "type") for s in facts["defined_at"].get((row[0], row[4]), ()))]
    rng.shuffle(cands)
    out, per_file, ends = [], defaultdict(int), set()
    for sid, path, start, end, kind, name_line in cands:
        if per_file[path] >= PER_FILE or (path, end) in ends:
            continue
        lines = (repo / path).read_text(encoding="utf-8", errors="replace").split("\n")
        last = lines[end - 1] if 0 < end <= len(lines) else ""
        if not last.strip() or last.rstrip().endswith("\\") or any(q in last for q in ('"""', "'''", "`")):
            continue
        per_file[path] += 1
        ends.add((path, end))  # a method ending its class's last line: one comment, once
        taken.add(sid)
        out.append((sid, path, end))
        if len(out) == n:
            break
    return out


def synthetic(repo: Path, picks: list[tuple], comment: str) -> str:
    """A commit on HEAD with a comment appended to each picked symbol's last line."""
    env = {**os.environ, "GIT_INDEX_FILE": str(repo / ".git" / "impact-precision-index")}
    git(repo, "read-tree", "HEAD", env=env)
    ends: dict[str, list[int]] = defaultdict(list)
    for _, path, end in picks:
        ends[path].append(end)
    for path, lines_at in ends.items():
        lines = (repo / path).read_bytes().split(b"\n")
        for end in lines_at:
            lines[end - 1] += comment.encode()
        blob = git(repo, "hash-object", "-w", "--stdin", stdin=b"\n".join(lines)).strip()
        mode = git(repo, "ls-tree", "HEAD", "--", path).split()[0]
        git(repo, "update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", env=env)
    tree = git(repo, "write-tree", env=env).strip()
    return git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit-tree", tree,
               "-p", "HEAD", "-m", "impact-precision").strip()


# --- judging -----------------------------------------------------------------------------------

def judge(data: dict, facts: dict, by_id: dict, by_path: dict, roles: dict) -> tuple[dict, list]:
    """(counts of one impact answer: judged / right per confidence and edge kind, by the line of
    the use and by the dependent's span, and recall's found / truth; the dependents judged wrong
    by the line)."""
    out: dict[str, int] = defaultdict(int)
    wrong = []
    by_name: dict[str, list[dict]] = defaultdict(list)
    for c in data["changed"]:
        by_name[c["name"]].append(c)
    scip = {c["key"]: scip_of(c, facts) for c in data["changed"] if c.get("kind") != "file"}
    depth1 = [d for d in data["dependents"] if d["depth"] == 1]
    for d in depth1:
        targets = set().union(*(scip.get(c["key"], set()) for c in by_name.get(d["changed"], [])))
        if not targets or d["path"] not in facts["paths"]:
            out[f"unjudged_{d['confidence']}"] += 1
            continue
        row = by_id.get(d["symbol_id"]) if d["symbol_id"] else None
        start, end = (row[1], row[2]) if row else (1, 10 ** 9)
        span_hit = any(p == d["path"] and start <= ln <= end for s in targets for p, ln in facts["uses"].get(s, ()))
        line_verdict = judge_line(d, targets, facts, span_hit)
        if line_verdict is None:
            out[f"unjudged_{d['confidence']}"] += 1
        else:
            for key in (d["confidence"], d["edge"]):
                out[f"judged_{key}"] += 1
                out[f"right_{key}"] += int(line_verdict)
            if not line_verdict:
                wrong.append([d["name"], d["path"], d.get("at"), d["edge"], d["confidence"], d["changed"]])
        out[f"span_judged_{d['confidence']}"] += 1
        out[f"span_right_{d['confidence']}"] += int(span_hit or bool(line_verdict))
    changed_ids = {c.get("symbol_id") for c in data["changed"]} - {None}
    ours = {(d["symbol_id"] or f"file:{d['path']}"): d["confidence"] for d in depth1}
    for c in data["changed"]:
        for key in truth_dependents(c, scip.get(c["key"], set()), facts, by_path, roles) - changed_ids:
            out["truth"] += 1
            out["found_all"] += int(key in ours)
            out["found_exact"] += int(ours.get(key) == "exact")
    return dict(out), wrong


def judge_line(d: dict, targets: set[str], facts: dict, span_hit: bool) -> bool | None:
    """Right, wrong, or None (unjudged) by the line of the use, as bench/graph_truth.py judges
    a call edge: judged where SCIP has an occurrence of the target's name on that line, right
    when that occurrence is the target. An override (or implementation) is judged by SCIP's
    relationships of what is defined on that line."""
    at = (d["path"], d.get("at") or d["line"])
    names = {gt.scip_name(s) for s in targets}
    here = facts["at"].get(at, set())
    if here & targets:
        return True
    defined = facts["defined_at"].get(at, set())
    if any(facts["related"].get(s, set()) & targets for s in defined):
        return True
    if d["edge"] in ("overrides", "implements") and defined:
        return span_hit  # a subclass's constructor: its `super(...)` call is the use
    return False if {gt.scip_name(s) for s in here} & names else None


def truth_dependents(c: dict, targets: set[str], facts: dict, by_path: dict, roles: dict) -> set[str]:
    """Where SCIP sees `targets` used outside the changed symbol and outside tests: the
    innermost indexed symbol around each use, else the file."""
    keys = set()
    for s in targets:
        for path, line in facts["uses"].get(s, ()):
            if roles.get(path) in (None, "test") or (path == c["path"] and c["line_start"] <= line <= c["line_end"]):
                continue
            around = [(end - start, sid) for start, end, sid in by_path.get(path, ()) if start <= line <= end]
            keys.add(min(around)[1] if around else f"file:{path}")
    return keys


def run_repo(name: str, args: argparse.Namespace, bin_dir: Path, shas: list[str] | None = None) -> list[dict]:
    """The repository's rows: new synthetic commits, or (`shas`) the ones of an earlier run
    judged again with the code as it is now."""
    mirror, indexer = REPOS[name]
    repo = gt.checkout(mirror, args.mirrors, args.work)
    facts = scip_facts(gt.run_scip(bin_dir, repo, indexer))
    head = json.loads(codeagent(repo, "build", "--ref", "HEAD", "--json"))["manifest_id"]
    by_id, by_path, roles = index_rows(repo, head)
    rng, taken, rows = random.Random(f"{name}-{args.seed}"), set(), []
    for i in range(len(shas) if shas is not None else args.commits):
        if shas is None:
            picks = pick(repo, by_id, roles, facts, args.symbols, rng, taken)
            if not picks:
                break
            sha = synthetic(repo, picks, COMMENT[indexer])
        else:
            sha = shas[i]
        codeagent(repo, "build", "--ref", sha, "--json")
        data = json.loads(codeagent(repo, "impact", f"HEAD..{sha}", "--depth", "1", "--json", "--history", "0"))
        counts, wrong = judge(data, facts, by_id, by_path, roles)
        rows.append({"commit": i, "sha": sha, "changed": len(data["changed"]), "counts": counts,
                     "wrong": wrong})
        print(f"{name} #{i}: {len(data['changed'])} changed, {counts}", file=sys.stderr, flush=True)
    return rows


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f} ({b})" if b else "-"


def table(results: dict) -> list[str]:
    groups: dict[str, dict[str, int]] = {}
    for name, rows in results.items():
        for key in (name, f"lang:{REPOS[name][1]}", "pooled"):
            g = groups.setdefault(key, defaultdict(int))
            for r in rows:
                for k, v in r["counts"].items():
                    g[k] += v
    head = (f"{'set':<18}{'exact precision':>18}{'all precision':>18}{'name precision':>18}"
            f"{'span: exact':>18}{'span: all':>18}{'unjudged':>10}{'recall exact':>14}{'recall all':>12}")
    lines = [head]
    for key, g in groups.items():
        all_j, all_r = g["judged_exact"] + g["judged_name"], g["right_exact"] + g["right_name"]
        lines.append(f"{key:<18}{_ratio(g['right_exact'], g['judged_exact']):>18}{_ratio(all_r, all_j):>18}"
                     f"{_ratio(g['right_name'], g['judged_name']):>18}"
                     f"{_ratio(g['span_right_exact'], g['span_judged_exact']):>18}"
                     f"{_ratio(g['span_right_exact'] + g['span_right_name'], g['span_judged_exact'] + g['span_judged_name']):>18}"
                     f"{g['unjudged_exact'] + g['unjudged_name']:>10}"
                     f"{(g['found_exact'] / g['truth'] if g['truth'] else 0):>14.3f}"
                     f"{(g['found_all'] / g['truth'] if g['truth'] else 0):>12.3f}")
    kinds = sorted({k[7:] for g in groups.values() for k in g if k.startswith("judged_")} - {"exact", "name"})
    pooled = groups.get("pooled", {})
    lines.append("pooled by edge kind: " + ", ".join(
        f"{k} {_ratio(pooled.get('right_' + k, 0), pooled.get('judged_' + k, 0))}" for k in kinds))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--tools", type=Path, default=Path("/tmp/codeagent-scip-tools"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/impact-precision"))
    ap.add_argument("--only", default=",".join(REPOS))
    ap.add_argument("--commits", type=int, default=2)
    ap.add_argument("--symbols", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("/tmp/impact-precision.json"))
    ap.add_argument("--table", action="store_true", help="Only print the table of --out.")
    ap.add_argument("--again", type=Path, default=None,
                    help="Judge the synthetic commits of this earlier --out again (the code as it is now).")
    args = ap.parse_args()
    if args.table:
        print("\n".join(table(json.loads(args.out.read_text()))))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    bin_dir = gt.install_tools(args.tools)
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    for name in args.only.split(","):
        if name in results:
            continue
        earlier = json.loads(args.again.read_text()).get(name, []) if args.again else None
        results[name] = run_repo(name, args, bin_dir, [r["sha"] for r in earlier] if earlier is not None else None)
        args.out.write_text(json.dumps(results, indent=1))
    print("\n".join(table({k: v for k, v in results.items() if k in args.only.split(",")})))
    print("load average:", Path("/proc/loadavg").read_text().strip())


if __name__ == "__main__":
    main()
