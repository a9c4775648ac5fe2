"""`codeagent impact` and the MCP tool get_impact: what a change touches, and the tests to run.

Built from what the index already has: the symbol diff of two manifests (query/diff.py, made
precise in impact_changes.py), the symbol graph of both sides (impact_graph.py: the head's
for what still exists, the base's for what was removed, renamed or re-signed), file roles
(which files are tests) and the history of co-changes (cochange.py), ranked in
impact_tests.py. Forms of the range:

    A..B        index A (base) to index B (head); each a ref, git revision or manifest id
    A           index A to the work-tree index
    (nothing)   the work tree against its base: the index built at the work tree's commit,
                else the full assembly the work-tree overlay sits on
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import refs as refnames
from ..errors import AssemblyVanished, CodeagentError, IndexMissing, InvalidParameter
from ..roles import TEST

from .cochange import MAX_COMMITS, CommitRecord, cochange_scores, git_commit_records
from .ranking.history import stored_records
from ..format.manifest import Manifest, load_manifest
from .impact_changes import Changed, changed_entries, symbol_diff
from .impact_graph import Reached, path_back, walk_dependents
from .impact_tests import rank_tests, risk_summary
from .index import IndexView, open_store

DEFAULT_DEPTH = 2
MAX_DEPTH = 6
TEST_DEPTH = 4  # tests are looked for this deep at least: a test reaches code through helpers
WALK_NODES = 3000  # nodes one walk may visit (dependents and tests together)
_HISTORY: dict[tuple[str, str, int], list[CommitRecord]] = {}  # commits are immutable: kept
_COMMITS: dict[str, str | None] = {}  # manifest id -> its commit: a manifest id names immutable bytes


@dataclass(frozen=True)
class ImpactOptions:
    depth: int = DEFAULT_DEPTH
    max_dependents: int = 500
    max_tests: int = 20
    history: int = MAX_COMMITS  # commits of history co-change reads (0: none)


def manifest(view: IndexView) -> Manifest:
    """The manifest `view` answers from (memoised: a manifest id names immutable bytes)."""
    key = f"manifest:{view.manifest_id}"
    if key not in view.cache:
        view.cache[key] = load_manifest(view.store, view.manifest_id)
    return view.cache[key]


def _side(view: IndexView) -> dict:
    return {"ref": view.ref, "manifest_id": view.manifest_id, "commit": view.commit}


def history_of(repo: Path | None, commit: str | None, n: int, store_root: Path | None = None) -> list[CommitRecord]:
    """The commit records co-change reads: the last `n` reachable from `commit`, from the
    history view the build stored (query/ranking/history.py), else from git (memoised)."""
    if not commit or n <= 0:
        return []
    key = (str(repo), commit, n)
    if key not in _HISTORY:
        if len(_HISTORY) >= 8:
            _HISTORY.pop(next(iter(_HISTORY)))
        stored = stored_records(store_root, commit, n) if store_root is not None else None
        _HISTORY[key] = [CommitRecord(*r) for r in stored] if stored is not None else (
            git_commit_records(repo, commit, max_commits=n) if repo is not None else [])
    return _HISTORY[key]


def _memo(view: IndexView, key: str, make):
    """`make()` once per view: what it reads of a manifest's index never changes."""
    if key not in view.cache:
        view.cache[key] = make()
    return view.cache[key]


def _test_paths(view: IndexView) -> set[str]:
    return _memo(view, "impact:tests", lambda: {r[0] for r in view.sql("SELECT path FROM files WHERE role = ?", [TEST])})


def _modules(view: IndexView, paths: set[str]) -> dict[str, str]:
    if not paths or not view.has_table("modules"):
        return {}
    every = _memo(view, "impact:modules", lambda: dict(view.sql("SELECT path, module FROM modules WHERE module <> ''")))
    return {p: every[p] for p in paths if p in every}


def _seeds(changed: Sequence[Changed]) -> tuple[dict, dict, dict, dict]:
    """(head symbol seeds, base symbol seeds, head file seeds, base file seeds): id -> key."""
    head, base, head_files, base_files = {}, {}, {}, {}
    for c in changed:
        if c.kind == "file":
            (base_files if c.change == "removed" else head_files)[c.path] = c.key
            continue
        if c.symbol_id:
            head[c.symbol_id] = c.key
        if c.old_symbol_id and (c.breaking or not c.symbol_id):
            base[c.old_symbol_id] = c.key
    return head, base, head_files, base_files


def _walk(a: IndexView, b: IndexView, changed: Sequence[Changed], depth: int,
          tests: frozenset[str]) -> tuple[dict[str, Reached], bool]:
    """The walk on the head's graph from what still exists, on the base's from what was
    removed, renamed or re-signed; `depth` named, tests looked for to TEST_DEPTH at least."""
    head, base, head_files, base_files = _seeds(changed)
    skip = frozenset(c.symbol_id or c.old_symbol_id for c in changed if c.symbol_id or c.old_symbol_id)
    kw = {"depth": max(depth, TEST_DEPTH), "max_nodes": WALK_NODES, "skip": skip, "named_depth": depth,
          "leaves": tests}
    walk_b = walk_dependents(b, head, seed_files=head_files, **kw)
    nodes, truncated = dict(walk_b.nodes), walk_b.truncated
    if base or base_files:
        walk_a = walk_dependents(a, base, seed_files=base_files, **kw)
        truncated = truncated or walk_a.truncated
        for k, n in walk_a.nodes.items():
            if k in nodes:
                nodes[k].roots |= n.roots
            else:
                nodes[k] = n
    return nodes, truncated


def _names(changed: Sequence[Changed]) -> dict[str, str]:
    """Every handle of a changed symbol (its key, its ids on both sides) -> its name."""
    out = {}
    for c in changed:
        for k in (c.old_symbol_id, c.symbol_id, c.key):
            if k:
                out[k] = c.name
    return out


def _dependent(n: Reached, nodes: dict[str, Reached], by_key: dict[str, Changed], names: dict[str, str]) -> dict:
    root = by_key.get(n.root)
    return {"name": n.name, "kind": n.kind, "path": n.path, "line": n.line, "symbol_id": n.symbol_id,
            "depth": n.depth, "edge": n.edge, "at": n.at, "confidence": n.confidence,
            "changed": root.name if root else n.root,
            "flag": root.change if root and root.breaking else None,
            "path_back": path_back(nodes, n.key, names)}


def compute_impact(a: IndexView, b: IndexView, *, options: ImpactOptions = ImpactOptions(),
                   history: Sequence[CommitRecord] = ()) -> dict:
    """The impact of the change from index `a` to index `b` (both open), `history` the commit
    records co-change reads (newest first, none past `a`'s commit)."""
    if not 1 <= options.depth <= MAX_DEPTH:
        raise InvalidParameter(f"depth must be between 1 and {MAX_DEPTH}")
    diff, olds, news = symbol_diff(a, b, manifest(a), manifest(b))
    paths = {f.path for f in diff.files} | {f.old_path for f in diff.files if f.old_path}
    modules = {**_modules(a, paths), **_modules(b, paths)}
    changed = changed_entries(a, b, diff, olds, news, modules)
    tests_b = _test_paths(b)
    nodes, truncated = _walk(a, b, changed, options.depth, frozenset(tests_b))
    by_key = {c.key: c for c in changed}
    shown = [n for n in nodes.values() if n.depth <= options.depth and n.path not in tests_b and not n.loose]
    shown.sort(key=lambda n: (n.depth, not (by_key.get(n.root) and by_key[n.root].breaking),
                              n.confidence != "exact", n.path, n.line))
    source_paths = sorted({c.path for c in changed if c.path not in tests_b}
                          | {c.old_path for c in changed if c.old_path and c.old_path not in tests_b})
    co = cochange_scores(history, source_paths, max_commits=options.history) if history else []
    tests, with_signal = rank_tests(changed, nodes.values(), tests_b, co, modules, options.max_tests)
    names = _names(changed)
    reached = set().union(*(n.roots for n in nodes.values() if n.path in tests_b)) if nodes else set()
    return {
        "base": _side(a), "head": _side(b),
        "summary": {"changed": len(changed), "breaking": sum(c.breaking for c in changed),
                    "dependents": len(shown), "tests": with_signal,
                    "files": {k: sum(f.change == k for f in diff.files) for k in ("added", "removed", "modified", "moved")},
                    "truncated": truncated or len(shown) > options.max_dependents},
        "risk": risk_summary(changed, shown, reached, tests_b),
        "changed": [{k: v for k, v in asdict(c).items() if v is not None} for c in changed],
        "tests": [asdict(t) for t in tests],
        "dependents": [_dependent(n, nodes, by_key, names) for n in shown[:options.max_dependents]],
    }


def resolve_spec(store, root: Path | None, spec: str) -> tuple[str | None, str]:
    """(ref, manifest id) of any spelling of an index (codeagent.refs.resolve)."""
    return refnames.resolve(store, spec, root)


def _commit_of(store, manifest_id: str) -> str | None:
    if manifest_id not in _COMMITS:
        if len(_COMMITS) >= 256:
            _COMMITS.clear()
        _COMMITS[manifest_id] = load_manifest(store, manifest_id).commit
    return _COMMITS[manifest_id]


def _ref_at(store, commit: str, not_id: str) -> tuple[str, str] | None:
    """The store ref (branches first, then tags...) whose index is of `commit`, other than
    `not_id`: refs.resolve's answer for a full sha, without asking git."""
    refs = store.list_refs()
    if refs.get(f"commits/{commit}") not in (None, not_id):  # `build --ref SHA` wrote it
        return f"commits/{commit}", refs[f"commits/{commit}"]
    for prefix in ("heads/", "tags/", "remotes/", "commits/"):
        for ref in sorted(r for r in refs if r.startswith(prefix)):
            try:
                if refs[ref] != not_id and _commit_of(store, refs[ref]) == commit:
                    return ref, refs[ref]
            except CodeagentError:
                continue
    return None


def worktree_base(store, root: Path | None, head: IndexView) -> tuple[str | None, str]:
    """The index the work tree is compared with: the one built at its commit (a branch, tag
    or `build --ref`), else the full assembly its overlay sits on."""
    if head.commit and (found := _ref_at(store, head.commit, head.manifest_id)) is not None:
        return found
    if head.commit:
        try:
            ref, mid = refnames.resolve(store, head.commit, root)
            if mid != head.manifest_id:
                return ref, mid
        except CodeagentError:
            pass
    if head.base_id:
        return None, head.base_id
    raise IndexMissing("no base index to compare the work tree with",
                       hint="build the committed tree too: `codeagent build --ref HEAD`")


def split_range(spec: str | None, worktree: bool) -> tuple[str | None, str | None]:
    """(base spec, head spec) of `A..B`, `A` (head: the work tree) or nothing (both None)."""
    if spec is None or worktree:
        if spec is not None:
            raise InvalidParameter("give either a range or --worktree, not both")
        return None, None
    if ".." in spec:
        a, _, b = spec.partition("..")
        if not a or not b or b.startswith("."):
            raise InvalidParameter(f"range {spec!r} must be BASE..HEAD")
        return a, b
    return spec, refnames.WORKTREE_REF


def open_pair(repo: Path | None, store_dir: Path | None, spec: str | None,
              worktree: bool = False) -> tuple[IndexView, IndexView]:
    """(base view, head view) for a range as `split_range` reads it; close both when done."""
    store, root = open_store(repo, store_dir)
    a_spec, b_spec = split_range(spec, worktree)
    b_ref, b_id = refnames.resolve(store, b_spec or refnames.WORKTREE_REF, root)
    head = open_view(store, root, b_ref, b_id)
    try:
        a_ref, a_id = (refnames.resolve(store, a_spec, root) if a_spec else worktree_base(store, root, head))
        return open_view(store, root, a_ref, a_id), head
    except BaseException:
        head.close()
        raise


def open_view(store, root: Path | None, ref: str | None, manifest_id: str) -> IndexView:
    try:
        return IndexView(store, root, ref, manifest_id)
    except AssemblyVanished:
        raise IndexMissing(f"index {ref or manifest_id[:12]} is not assembled",
                           hint=refnames.build_hint(root, ref)) from None


def impact(repo: Path | None, store_dir: Path | None, spec: str | None, *, worktree: bool = False,
           options: ImpactOptions = ImpactOptions()) -> dict:
    """The CLI's entry: open both indexes of the range, read the history, compute."""
    a, b = open_pair(repo, store_dir, spec, worktree)
    try:
        history = history_of(a.repo, a.commit, options.history, a.store.root)
        return compute_impact(a, b, options=options, history=history)
    finally:
        a.close()
        b.close()
