"""Symbols and call graph measured against indexers no one here wrote.

    python bench/graph_truth.py --mirrors DIR [--tools DIR] [--workdir DIR] [--only NAME,...]

DIR holds bare mirrors of the development set as OWNER+NAME/repo (as for bench/real.py);
this repository is measured too. Each is cloned (`git clone --no-checkout`, then checked out:
the SCIP indexers read a work tree) and built with codeagent at HEAD.

- TypeScript/JavaScript and Python: the SCIP indexers from npm, `@sourcegraph/scip-typescript`
  and `@sourcegraph/scip-python`, installed by this script into `--tools` with `npm install`
  (codeagent never downloads them). Definition recall: SCIP definitions of functions, methods
  and types (classes, interfaces...) found by a codeagent symbol on the same path and line.
  Call edges: a SCIP reference to an in-repository function, method or type followed by `(`
  is a call site (path, line, target definition). `exact` precision is judged on the exact
  edges SCIP has an occurrence of the target's name for on that line; recall of exact edges
  and of all edges (exact + name) is over every call site.
- Every other full language: universal-ctags (Debian `universal-ctags`) definitions, found
  by a codeagent symbol of the same name within a line of ctags' line.
- Swift and Scala, which Debian's universal-ctags (5.9) cannot parse and no SCIP indexer here
  covers: Pygments' lexers (not parsers of ours), read as a definition source: a name they
  tag after `func`/`def`, or after `class`/`struct`/`enum`/`protocol`/`actor` (Swift) or
  `class`/`object`/`trait`/`enum` (Scala), that no function body encloses (local functions
  are left out, as ctags leaves out locals), found the same way as a ctags definition. They
  read no `init`, operator, `extension`, `given` or type alias.

Prints one row per repository and one per language (summed). Targets (issue 23): definition
recall >= 0.98, exact precision >= 0.95, exact recall >= 0.70, all-edge recall >= 0.85.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import print_table  # noqa: E402
from lexer_defs import LEXER_DEFS  # noqa: E402

SCIP_PACKAGES = ["@sourcegraph/scip-typescript@0.4.0", "@sourcegraph/scip-python@0.6.6"]
SELF = "this repository"
# (mirror name, indexer); SELF is the repository this script is in
SCIP_REPOS = [("sindresorhus+got", "typescript"), ("axios+axios", "typescript"),
              ("expressjs+express", "typescript"), ("python-attrs+attrs", "python"),
              ("Textualize+rich", "python"), ("psf+black", "python"), (SELF, "python")]
CTAGS_REPOS = [("go-chi+chi", "go"), ("spf13+cobra", "go"), ("clap-rs+clap", "rust"),
               ("hyperium+hyper", "rust"), ("FasterXML+jackson-core", "java"),
               ("square+retrofit", "java"), ("square+okhttp", "kotlin"), ("square+kotlinpoet", "kotlin"), ("jqlang+jq", "c"),
               ("serilog+serilog", "csharp"), ("AutoMapper+AutoMapper", "csharp"),
               ("sinatra+sinatra", "ruby"), ("guzzle+guzzle", "php"), ("slimphp+Slim", "php"),
               ("fmtlib+fmt", "cpp"), ("google+leveldb", "cpp"), ("Alamofire+Alamofire", "swift"),
               ("SwiftyJSON+SwiftyJSON", "swift"), ("com-lihaoyi+os-lib", "scala"), ("com-lihaoyi+upickle", "scala")]
# ctags kinds that are not definitions codeagent means to index (locals, parameters, imports...)
CTAGS_SKIP = {"local", "parameter", "label", "import", "include", "package", "packageName",
              "namespace", "alias", "externvar", "prototype", "header", "macroparam", "module",
              "anonMember", "enumerator", "member", "field", "variable", "constant", "property",
              "unknown", "using", "heredoc", "accessor"}
CTAGS_LANGS = {"go": "Go", "rust": "Rust", "java": "Java", "kotlin": "Kotlin", "c": "C",
               "csharp": "C#", "ruby": "Ruby", "php": "PHP", "cpp": "C++", "swift": "Swift",
               "scala": "Scala"}
TSCONFIG = {"compilerOptions": {"allowJs": True, "checkJs": False, "noEmit": True, "skipLibCheck": True,
                                "module": "nodenext", "moduleResolution": "nodenext", "target": "es2022"},
            "include": ["**/*"], "exclude": ["node_modules", "dist", ".codeagent"]}
_PHP_ANONYMOUS = re.compile(r"AnonymousClass[0-9a-f]{8,}")  # ctags' name for `new class {...}`
_CALL_AFTER = re.compile(rb"\s*(<[^()]*?>)?\s*\(")
_SCIP_NAME = re.compile(r"(`[^`]*`|[^/#.()\[\]`!:\s]+)(\([^)]*\))?([#.!]|\(\)\.)?$")


# --- SCIP: a minimal protobuf reader for the fields we need ---------------------------------

def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def _fields(buf: bytes):
    """(field number, wire type, value) of one message: ints for varints, bytes otherwise."""
    i, n = 0, len(buf)
    while i < n:
        tag, i = _varint(buf, i)
        num, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 2:
            ln, i = _varint(buf, i)
            v, i = buf[i:i + ln], i + ln
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wt}")
        yield num, wt, v


def _packed(v) -> list[int]:
    if isinstance(v, int):
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def read_scip(path: Path) -> list[tuple[str, list[tuple[int, int, int, str, int]]]]:
    """[(relative path, [(line, start col, end col, symbol, roles)])] of every document."""
    docs = []
    for num, _, v in _fields(path.read_bytes()):
        if num != 2:
            continue
        rel, occs = "", []
        for dn, _, dv in _fields(v):
            if dn == 1:
                rel = dv.decode()
            elif dn == 2:
                rng, sym, roles = [], "", 0
                for on, _, ov in _fields(dv):
                    if on == 1:
                        rng += _packed(ov)
                    elif on == 2:
                        sym = ov.decode()
                    elif on == 3:
                        roles = ov
                if len(rng) >= 3 and sym and not sym.startswith("local "):
                    end_col = rng[2] if len(rng) == 3 else (rng[3] if rng[2] == rng[0] else 10 ** 6)
                    occs.append((rng[0], rng[1], end_col, sym, roles))
        docs.append((rel, occs))
    return docs


def scip_kind(symbol: str) -> str:
    """callable, type, term or other (namespaces, parameters, type parameters, macros)."""
    if symbol.endswith(")."):
        return "callable"
    if symbol.endswith("#"):
        return "type"
    if symbol.endswith(".") and not symbol.endswith(")."):
        return "term"
    return "other"


def scip_name(symbol: str) -> str:
    m = _SCIP_NAME.search(symbol)
    return m.group(1).strip("`") if m else ""


# --- codeagent's side ------------------------------------------------------------------------

def our_graph(repo: Path) -> tuple[list[tuple], list[tuple]]:
    """(symbols [(path, name, kind, name_line, language)], call edges [(src_path, src_line,
    dst_path, dst_name_line, dst_name, confidence)]) of a fresh build of HEAD."""
    import duckdb

    from codeagent import format as fmt
    from codeagent.indexer.build import BuildOptions, build
    from codeagent.store import Store

    with tempfile.TemporaryDirectory() as store:  # fresh: an assembly is keyed by its manifest only
        result = build(BuildOptions(repo=repo, rev="HEAD", store_dir=Path(store)))
        db = Store(Path(store)).assembled_dir(result.manifest_id) / fmt.DUCKDB_FILE
        con = duckdb.connect(str(db), read_only=True)
        try:
            symbols = con.execute("SELECT path, name, kind, name_line, language FROM symbols").fetchall()
            edges = con.execute("""SELECT e.src_path, e.src_line, d.path, d.name_line, d.name, e.confidence
                FROM edges e JOIN symbols d ON d.symbol_id = e.dst_id WHERE e.kind = 'calls'""").fetchall()
        finally:
            con.close()
    return symbols, edges


# --- measuring ---------------------------------------------------------------------------------

def _member_header(text: bytes, col: int) -> bool:
    """`request() {` in an object literal or class: a definition SCIP links to the interface
    member it implements, not a call."""
    before = text[:col].decode("utf-8", "replace").split()
    return all(w in ("async", "get", "set", "static", "public", "private", "protected", "override", "*")
               for w in before) and text.rstrip().endswith(b"{")


_ASSIGNED = re.compile(rb"\s*(:[^=\n]*)?=(?!=)")


def _redefinition(text: bytes, col: int, end: int) -> bool:
    """The occurrence at col..end is a name defined or bound again in the same scope (`def f`,
    `f = ...`, `with ... as f`: scip-python gives it as a read of the first definition),
    not a use."""
    before = text[:col].rstrip()
    return before.endswith((b"def", b"class", b"function", b" as")) or (
        not before and end < 10 ** 6 and _ASSIGNED.match(text, end) is not None)


def _lines(repo: Path, rel: str) -> list[bytes]:
    try:
        return (repo / rel).read_bytes().split(b"\n")
    except OSError:
        return []


def scip_truth(repo: Path, docs, language: str) -> dict:
    """Definitions and call sites of a SCIP index. A symbol defined or assigned more than once
    (`def f` again, `f = ...` in the same scope: one symbol for SCIP) has each of those
    places as its location: `also` maps the first to all of them, and a use of the symbol
    is right at any of them."""
    defs: dict[str, tuple[str, int]] = {}
    texts = {rel: _lines(repo, rel) for rel, _ in docs}
    for rel, occs in docs:
        for line, _, _, sym, roles in occs:
            if roles & 1:
                defs.setdefault(sym, (rel, line + 1))
    also: dict[tuple[str, int], set[tuple[str, int]]] = defaultdict(set)
    for rel, occs in docs:
        for line, col, end, sym, roles in occs:
            text = texts[rel][line] if line < len(texts[rel]) else b""
            if sym in defs and (roles & 1 or _redefinition(text, col, end)):
                also[defs[sym]].add((rel, line + 1))
    wanted_defs = {loc for sym, loc in defs.items() if scip_kind(sym) in ("callable", "type")}
    calls, uses, names_at = set(), set(), defaultdict(set)
    for rel, occs in docs:
        lines = texts[rel]
        if not lines:
            continue
        for line, col, end, sym, roles in occs:
            text = lines[line] if line < len(lines) else b""
            if roles & 1 or roles & 2 or _redefinition(text, col, end):
                continue  # definitions, imports, assignments

            names_at[(rel, line + 1)].add(scip_name(sym))
            target = defs.get(sym)
            if target is None or scip_kind(sym) == "other":
                continue
            uses.update((rel, line + 1, *loc) for loc in also.get(target, {target}))
            if ("<constructor>" in sym or sym.endswith("__init__().")) and "#" in sym:
                owner = defs.get(sym[:sym.rindex("#") + 1])  # `new C()`, `C()`: the class
                if owner:
                    target = owner
                    uses.update((rel, line + 1, *loc) for loc in also.get(target, {target}))
            if scip_kind(sym) == "type" and language != "python" and not text[:col].rstrip().endswith(b"new"):
                continue  # `Foo<T>(` in TypeScript is a type argument, `new Foo(` a call
            if end < 10 ** 6 and _CALL_AFTER.match(text, end) and not _member_header(text, col):
                calls.add((rel, line + 1, *target))
    return {"defs": wanted_defs, "calls": calls, "uses": uses, "names_at": names_at, "also": also}


def measure_scip(truth: dict, symbols: list[tuple], edges: list[tuple]) -> dict:
    ours_at = {(p, ln) for p, _, _, ln, _ in symbols}
    found = sum(1 for d in truth["defs"] if d in ours_at)
    exact = {(sp, sl, dp, dl) for sp, sl, dp, dl, _, c in edges if c == "exact"}
    every = {(sp, sl, dp, dl) for sp, sl, dp, dl, _, _ in edges}
    judged = [(sp, sl, dp, dl) for sp, sl, dp, dl, name, c in edges
              if c == "exact" and name in truth["names_at"].get((sp, sl), ())]
    right = sum(1 for e in set(judged) if e in truth["uses"])
    calls, also = truth["calls"], truth["also"]

    def hits(ours: set[tuple]) -> int:
        return sum(1 for sp, sl, dp, dl in calls
                   if any((sp, sl, *loc) in ours for loc in also.get((dp, dl), {(dp, dl)})))

    return {"defs": len(truth["defs"]), "def_found": found, "judged": len(set(judged)), "right": right,
            "calls": len(calls), "exact_hit": hits(exact), "all_hit": hits(every),
            "exact_edges": len(exact), "name_edges": len(every - exact)}


def ctags_defs(repo: Path, language: str) -> set[tuple[str, str, int]]:
    proc = subprocess.run(["ctags", "-R", "--output-format=json", "--fields=+nK", f"--languages={CTAGS_LANGS[language]}",
                           "-f", "-", "."], cwd=repo, capture_output=True, text=True)
    out = set()
    for line in proc.stdout.splitlines():
        try:
            tag = json.loads(line)
        except ValueError:
            continue
        if tag.get("_type") != "tag" or tag.get("kind") in CTAGS_SKIP or "line" not in tag \
                or tag["name"].startswith(("<", "__anon")) or _PHP_ANONYMOUS.fullmatch(tag["name"]):  # lambdas, anonymous types
            continue
        if any(part in ("vendor", "node_modules") for part in tag["path"].split("/")) \
                or (repo / tag["path"]).is_symlink():  # ctags follows links; an index stores them as links
            continue
        if language == "kotlin" and tag.get("kind") == "method" and "fun" not in tag.get("pattern", "fun"):
            continue  # ctags' Kotlin parser also reports loop variables and lambda parameters
        if not tag["name"].isprintable() or not any(c.isalnum() or c == "_" for c in tag["name"]):
            continue  # ctags 5.9's Kotlin parser sometimes names a tag with bytes of memory ('\x05t>`')
        out.add((tag["path"].removeprefix("./"), tag["name"], tag["line"]))
    return out




def ctags_languages() -> set[str]:
    """The languages this universal-ctags parses (Debian bookworm's 5.9 has no Swift)."""
    proc = subprocess.run(["ctags", "--list-languages"], capture_output=True, text=True)
    return {line.split()[0] for line in proc.stdout.splitlines() if line.strip() and "[disabled]" not in line}


def _spaceless(name: str) -> str:
    """`operator ==` (ctags) and `operator==` (as written) are one name."""
    return "".join(name.split())


def edge_counts(edges: list[tuple]) -> dict:
    """Call edges by confidence: what a language without a precise indexer here can show."""
    exact = {(sp, sl, dp, dl) for sp, sl, dp, dl, _, c in edges if c == "exact"}
    return {"exact_edges": len(exact), "name_edges": len({(sp, sl, dp, dl) for sp, sl, dp, dl, _, _ in edges} - exact)}


def measure_ctags(defs: set[tuple[str, str, int]], symbols: list[tuple]) -> tuple[dict, list]:
    ours = {(p, _spaceless(n), ln) for p, n, _, ln, _ in symbols}
    missed = [d for d in defs if not any((d[0], _spaceless(d[1]), d[2] + k) in ours for k in (-1, 0, 1))]
    return {"defs": len(defs), "def_found": len(defs) - len(missed)}, missed


# --- running ------------------------------------------------------------------------------------

def install_tools(tools: Path) -> Path:
    """The SCIP indexers' bin directory, installed with npm into `tools` when absent."""
    bin_dir = tools / "node_modules" / ".bin"
    if not (bin_dir / "scip-typescript").exists() or not (bin_dir / "scip-python").exists():
        tools.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(tools),
                               *SCIP_PACKAGES], capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"npm install {' '.join(SCIP_PACKAGES)} failed (exit {proc.returncode}):\n"
                     f"{proc.stderr[-2000:]}")
    return bin_dir


def checkout(name: str, mirrors: Path, workdir: Path) -> Path:
    if name == SELF:
        src = Path(__file__).resolve().parent.parent
        dest = workdir / "self"
        if not dest.exists():
            subprocess.run(["git", "clone", "-q", "--no-checkout", str(src), str(dest)], check=True)
            subprocess.run(["git", "-C", str(dest), "checkout", "-q", "HEAD"], check=True)
        return dest
    dest = workdir / name
    if not dest.exists():
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(mirrors / name / "repo"), str(dest)],
                       check=True)
        subprocess.run(["git", "-C", str(dest), "checkout", "-q", "HEAD"], check=True)
    return dest


def run_scip(bin_dir: Path, repo: Path, indexer: str) -> Path:
    out = repo.parent / f"{repo.name}.scip"
    if out.exists():
        return out
    if indexer == "typescript":
        # the project's own tsconfig may extend a package that is not installed (got's does):
        # one that covers every file, in the throwaway checkout, stands in for it
        (repo / "tsconfig.json").write_text(json.dumps(TSCONFIG))
        cmd = [str(bin_dir / "scip-typescript"), "index", "--cwd", str(repo), "--output", str(out),
               "--no-progress-bar"]
    else:
        env_file = repo.parent / "scip-python-env.json"
        env_file.write_text("[]")
        cmd = [str(bin_dir / "scip-python"), "index", "--cwd", str(repo), "--output", str(out),
               "--project-name", repo.name, "--quiet", "--environment", str(env_file)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"{cmd[0]} failed on {repo.name}: {proc.stderr[-800:]}")
    return out


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "-"


def _row(label: str, lang: str, m: dict) -> list[object]:
    return [label, lang, m.get("defs", "-"), _ratio(m["def_found"], m["defs"]) if "defs" in m else "-",
            f"{_ratio(m['right'], m['judged'])} ({m['judged']})" if "judged" in m else "-",
            _ratio(m["exact_hit"], m["calls"]) if "calls" in m else "-",
            _ratio(m["all_hit"], m["calls"]) if "calls" in m else "-",
            f"{m['exact_edges']}/{m['name_edges']}" if "exact_edges" in m else "-"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", type=Path, required=True)
    ap.add_argument("--tools", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-scip-tools")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-graph-truth")
    ap.add_argument("--only", default="", help="comma-separated repository names (OWNER+NAME)")
    ap.add_argument("--misses", type=int, default=0, help="print this many missed definitions per repo")
    args = ap.parse_args()
    only = {s for s in args.only.split(",") if s}
    args.workdir.mkdir(parents=True, exist_ok=True)
    wanted = [(n, i) for n, i in SCIP_REPOS + CTAGS_REPOS if not only or n in only]
    bin_dir = install_tools(args.tools) if any(r in SCIP_REPOS for r in wanted) else None
    parsed = ctags_languages()
    rows, per_lang = [], defaultdict(lambda: defaultdict(int))
    for name, indexer in wanted:
        if name != SELF and not (args.mirrors / name / "repo").exists():
            print(f"skip {name}: no mirror", file=sys.stderr)
            continue
        repo = checkout(name, args.mirrors, args.workdir)
        symbols, edges = our_graph(repo)
        if (name, indexer) in CTAGS_REPOS and CTAGS_LANGS[indexer] not in parsed and indexer not in LEXER_DEFS:
            print(f"{name}: this universal-ctags has no {CTAGS_LANGS[indexer]} parser, so no definition "
                  "source: call edge counts only", file=sys.stderr)
            rows.append(_row(name, indexer, edge_counts(edges)))
            continue
        if indexer in LEXER_DEFS and CTAGS_LANGS[indexer] not in parsed:
            m, missed = measure_ctags(LEXER_DEFS[indexer](repo), symbols)
            m.update(edge_counts(edges))
            lang, missed = f"{indexer} (lexer)", sorted(missed)
        elif (name, indexer) in SCIP_REPOS:
            docs = read_scip(run_scip(bin_dir, repo, indexer))
            truth = scip_truth(repo, docs, indexer)
            m = measure_scip(truth, symbols, edges)
            lang = "ts/js" if indexer == "typescript" else "python"
            missed = sorted(d for d in truth["defs"] if d not in {(p, ln) for p, _, _, ln, _ in symbols})
        else:
            defs = ctags_defs(repo, indexer)
            m, missed = measure_ctags(defs, symbols)
            m.update(edge_counts(edges))
            lang = indexer
            missed = sorted(missed)
        rows.append(_row(name, lang, m))
        for k, v in m.items():
            per_lang[lang][k] += v
        for d in missed[:args.misses]:
            print(f"  missed {name}: {d}", file=sys.stderr)
        print(f"done {name}", file=sys.stderr, flush=True)
    rows += [_row("(all)", lang, m) for lang, m in sorted(per_lang.items())]
    print_table(["repository", "language", "defs", "def recall", "exact precision (judged)",
                 "exact recall", "all recall", "exact/name edges"], rows)


if __name__ == "__main__":
    main()
