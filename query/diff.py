"""`codeagent diff A B`: what changed between two manifests, files and symbols.

Pure core: `diff_manifests(a, b, symbols_a, symbols_b)` needs only the two manifests and the
symbols of the files whose entries differ (`paths_to_load` says which); `load_symbols` reads
those from the content-addressed shards, so a diff never re-parses anything.

Files: added | removed | modified (same path, other bytes) | moved (same bytes, the old path
gone). Symbols, matched by stable id (language + in-file qualified name + kind):
  modified  same stable id in the same or the corresponding file, other body hash
  moved     same stable id and body, other path
  renamed   other stable id, same kind and body hash, in the corresponding file
  added / removed  the rest
Corresponding files: the same path, a moved file, or a removed/added pair sharing a moved symbol.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from ..format.manifest import FileEntry, Manifest, load_manifest

FILE_CHANGES = ("added", "removed", "modified", "moved")
SYMBOL_CHANGES = ("added", "removed", "modified", "moved", "renamed")


@dataclass(frozen=True)
class SymbolFacts:
    """What a diff needs of one symbol (a row of a shard's `symbols` list plus its path)."""

    path: str
    stable_id: str
    kind: str
    name: str
    qualified_name: str
    body_hash: str
    start_line: int


@dataclass(frozen=True)
class FileChange:
    change: str
    path: str
    old_path: str | None = None
    language: str = ""


@dataclass(frozen=True)
class SymbolChange:
    change: str
    kind: str
    path: str | None
    qualified_name: str | None
    line: int | None
    stable_id: str | None
    old_path: str | None = None
    old_qualified_name: str | None = None
    old_line: int | None = None
    old_stable_id: str | None = None


@dataclass
class Diff:
    a: dict
    b: dict
    files: list[FileChange] = field(default_factory=list)
    symbols: list[SymbolChange] = field(default_factory=list)

    def counts(self) -> dict:
        return {"files": {c: sum(f.change == c for f in self.files) for c in FILE_CHANGES},
                "symbols": {c: sum(s.change == c for s in self.symbols) for c in SYMBOL_CHANGES}}

    def to_dict(self) -> dict:
        files = {c: [] for c in FILE_CHANGES}
        for f in self.files:
            d = asdict(f)
            files[d.pop("change")].append(d)
        symbols = {c: [] for c in SYMBOL_CHANGES}
        for s in self.symbols:
            d = asdict(s)
            symbols[d.pop("change")].append(d)
        return {"a": self.a, "b": self.b, "counts": self.counts(), "files": files, "symbols": symbols}


def _side(m: Manifest, manifest_id: str | None) -> dict:
    return {"manifest_id": manifest_id or m.id, "ref": m.ref, "commit": m.commit}


def diff_files(a: Manifest, b: Manifest) -> list[FileChange]:
    """File-level changes; a removed and an added path with the same bytes are a move."""
    old = {f.path: f for f in a.files}
    new = {f.path: f for f in b.files}
    out = [FileChange("modified", p, None, new[p].language)
           for p in sorted(old.keys() & new.keys()) if old[p].blob != new[p].blob]
    gone_by_blob: dict[str, list[str]] = defaultdict(list)
    for p in sorted(old.keys() - new.keys()):
        gone_by_blob[old[p].blob].append(p)
    added = []
    for p in sorted(new.keys() - old.keys()):
        same = gone_by_blob.get(new[p].blob) if new[p].blob else None
        if same:
            out.append(FileChange("moved", p, same.pop(0), new[p].language))
        else:
            added.append(FileChange("added", p, None, new[p].language))
    removed = [FileChange("removed", p, None, old[p].language)
               for ps in gone_by_blob.values() for p in ps]
    return sorted(out + added + removed, key=lambda f: (FILE_CHANGES.index(f.change), f.path))


def paths_to_load(files: Sequence[FileChange]) -> tuple[set[str], set[str]]:
    """(paths of A, paths of B) whose symbols the diff needs."""
    a = {f.old_path or f.path for f in files if f.change in ("removed", "modified", "moved")}
    b = {f.path for f in files if f.change in ("added", "modified", "moved")}
    return a, b


def _change(change: str, old: SymbolFacts | None, new: SymbolFacts | None) -> SymbolChange:
    ref = new or old
    assert ref is not None
    return SymbolChange(
        change, ref.kind,
        new.path if new else None, new.qualified_name if new else None,
        new.start_line if new else None, new.stable_id if new else None,
        old.path if old else None, old.qualified_name if old else None,
        old.start_line if old else None, old.stable_id if old else None)


def _pair(olds: list[SymbolFacts], news: list[SymbolFacts], key, change: str,
          out: list[SymbolChange], allowed=lambda o, n: True) -> None:
    """Pair old and new symbols with equal `key` (in line order); remove them from the lists."""
    by_key: dict[tuple, list[SymbolFacts]] = defaultdict(list)
    for o in olds:
        by_key[key(o)].append(o)
    used_old: set[int] = set()
    kept_new = []
    for n in news:
        cands = by_key.get(key(n), [])
        match = next((o for o in cands if id(o) not in used_old and allowed(o, n)), None)
        if match is None:
            kept_new.append(n)
            continue
        used_old.add(id(match))
        out.append(_change(change, match, n))
    olds[:] = [o for o in olds if id(o) not in used_old]
    news[:] = kept_new


def diff_symbols(files: Sequence[FileChange], symbols_a: Mapping[str, Sequence[SymbolFacts]],
                 symbols_b: Mapping[str, Sequence[SymbolFacts]]) -> list[SymbolChange]:
    out: list[SymbolChange] = []
    olds: list[SymbolFacts] = []
    news: list[SymbolFacts] = []
    pairs: set[tuple[str, str]] = set()
    for f in files:
        old_path = f.old_path or f.path
        if f.change in ("removed", "modified", "moved"):
            olds.extend(symbols_a.get(old_path, ()))
        if f.change in ("added", "modified", "moved"):
            news.extend(symbols_b.get(f.path, ()))
        if f.change in ("modified", "moved"):
            pairs.add((old_path, f.path))
    olds.sort(key=lambda s: (s.path, s.start_line))
    news.sort(key=lambda s: (s.path, s.start_line))
    unchanged: list[SymbolChange] = []
    _pair(olds, news, lambda s: (s.path, s.stable_id, s.body_hash), "unchanged", unchanged)
    _pair(olds, news, lambda s: (s.stable_id, s.body_hash), "moved", out)
    pairs.update((c.old_path, c.path) for c in out if c.old_path and c.path)
    def corresponding(o: SymbolFacts, n: SymbolFacts) -> bool:
        return (o.path, n.path) in pairs or o.path == n.path
    _pair(olds, news, lambda s: s.stable_id, "modified", out, corresponding)
    _pair(olds, news, lambda s: (s.kind, s.body_hash), "renamed", out, corresponding)
    out.extend(_change("removed", o, None) for o in olds)
    out.extend(_change("added", None, n) for n in news)
    order = {c: i for i, c in enumerate(SYMBOL_CHANGES)}
    return sorted(out, key=lambda c: (order[c.change], c.path or c.old_path or "",
                                      c.line or c.old_line or 0, c.qualified_name or c.old_qualified_name or ""))


def diff_manifests(a: Manifest, b: Manifest, symbols_a: Mapping[str, Sequence[SymbolFacts]],
                   symbols_b: Mapping[str, Sequence[SymbolFacts]], *, a_id: str | None = None,
                   b_id: str | None = None) -> Diff:
    """Files and symbols that differ from manifest `a` to manifest `b` (pure)."""
    files = diff_files(a, b)
    return Diff(_side(a, a_id), _side(b, b_id), files, diff_symbols(files, symbols_a, symbols_b))


def load_symbols(store, manifest: Manifest, paths: Iterable[str]) -> dict[str, list[SymbolFacts]]:
    """Symbols of `paths` read from their shards (each shard re-hashed on read, read once)."""
    from ..format.shard import decode_table, read_shard  # pyarrow, +120-150 ms: `codeagent status` needs none

    wanted = set(paths)
    by_shard: dict[str, list[FileEntry]] = defaultdict(list)
    for f in manifest.files:
        if f.path in wanted and f.indexed and f.shard:
            by_shard[f.shard].append(f)
    out: dict[str, list[SymbolFacts]] = {}
    for shard, entries in sorted(by_shard.items()):
        rows = decode_table(read_shard(store.get(shard), ["symbols"]))["symbols"]
        for e in entries:
            out[e.path] = [SymbolFacts(e.path, r["stable_id"], r["kind"], r["name"],
                                       r["qualified_name"], r["body_hash"], r["start_line"])
                           for r in rows]
    return out


def diff_ids(store, a_id: str, b_id: str) -> Diff:
    """Load two manifests and the symbols their differing files need, then diff them."""
    a, b = load_manifest(store, a_id), load_manifest(store, b_id)
    files = diff_files(a, b)
    paths_a, paths_b = paths_to_load(files)
    return diff_manifests(a, b, load_symbols(store, a, paths_a), load_symbols(store, b, paths_b),
                          a_id=a_id, b_id=b_id)

