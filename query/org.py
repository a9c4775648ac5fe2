"""Search across a fleet store (format/fleet.py): each repository's first ref, searched on
its own, the answers fused into one ranking whose hits name their repository.

Each repository ranks with its own corpus statistics, so its scores do not compare with
another's. Fusions (measured in bench/org.py, docs/org.md): `global` (the default) weighs each
repository's hits, in its own order, by a fleet-wide BM25 of its best file (document
frequencies summed over the fleet): the right repository on top for 95% of the bench's
tasks. `score` merges the raw scores (31%); `rank` by reciprocal rank, 1/(K+rank), ties by
score (31%: every repository's best hit weighs the same).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ..errors import CodeagentError, IndexMissing, InvalidParameter
from ..format.fleet import fleet_ref, read_listing
from ..model import SearchHit
from ..store import Store
from .ranking.bm25 import bm25_term, idf
from .ranking.fuse import RRF_K
from .index import IndexView, open_store
from .search import SearchRequest, search
from .terms import chunk_terms

FUSIONS = ("global", "score", "rank")


@dataclass
class OrgHit:
    repo: str
    ref: str
    hit: SearchHit
    fused: float

    def to_dict(self) -> dict:
        return {"repo": self.repo, "ref": self.ref, **self.hit.to_dict(), "fused_score": round(self.fused, 6)}


@dataclass
class OrgResponse:
    results: list[OrgHit]
    repos: list[dict]  # {repo, ref, manifest_id, total_count, query_intent}
    fusion: str
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"results": [h.to_dict() for h in self.results], "repos": self.repos,
                "fusion": self.fusion, "notes": self.notes}


class FleetView:
    """Open read-only views of every repository of a fleet store (each one's first ref)."""

    def __init__(self, store: Store, repos: list[str] | None = None) -> None:
        self.store = store
        listing = read_listing(store.root)
        if not listing:
            raise IndexMissing(f"{store.root} holds no fleet",
                               hint="run `codeagent org build FLEET.toml --store DIR` first")
        unknown = sorted(set(repos or ()) - set(listing))
        if unknown:
            raise InvalidParameter(f"no repository {', '.join(unknown)} in the fleet",
                                   hint=f"its repositories: {', '.join(listing)}")
        self.only = list(repos or ())
        self.views: dict[str, IndexView] = {}
        self._lock = threading.Lock()
        try:
            self.refresh(listing)
        except BaseException:
            self.close()
            raise

    def refresh(self, listing: dict[str, list[str]] | None = None) -> None:
        """Follow new builds: a repository whose ref names another manifest is reopened on it,
        one added to the fleet is opened, one dropped is closed (a few file reads when nothing
        changed)."""
        listing = read_listing(self.store.root) if listing is None else listing
        with self._lock:
            for name in [n for n in self.views if n not in listing]:
                self.views.pop(name).close()
            for name, refs in listing.items():
                if self.only and name not in self.only:
                    continue
                manifest_id = self.store.read_ref(fleet_ref(name, refs[0]))
                old = self.views.get(name)
                if manifest_id is None or (old is not None and old.manifest_id == manifest_id):
                    continue  # unchanged, or listed and not built yet (an interrupted build)
                self.views[name] = IndexView(self.store, None, refs[0], manifest_id)
                if old is not None:
                    old.close()

    def view(self, repo: str) -> IndexView:
        if repo not in self.views:
            raise InvalidParameter(f"no repository {repo!r} served",
                                   hint=f"its repositories: {', '.join(self.views)}")
        return self.views[repo]

    def close(self) -> None:
        for view in self.views.values():
            view.close()
        self.views = {}

    def __enter__(self) -> "FleetView":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_fleet(store_dir, repos: list[str] | None = None) -> FleetView:
    store, _ = open_store(None, store_dir)
    return FleetView(store, repos)


def org_search(fleet: FleetView, request: SearchRequest, repos: list[str] | None = None,
               fusion: str = "global") -> OrgResponse:
    """Search every served repository (or `repos`) and fuse the answers (module doc)."""
    if fusion not in FUSIONS:
        raise InvalidParameter(f"unknown fusion {fusion!r}; choose one of {', '.join(FUSIONS)}")
    names = [n for n in fleet.views if not repos or n in repos]
    if repos:
        for name in repos:
            fleet.view(name)
    lists: dict[str, list[SearchHit]] = {}
    about: list[dict] = []
    notes: list[str] = []
    failure: CodeagentError | None = None
    for name in names:
        view = fleet.views[name]
        try:
            resp = search(view, request)
        except InvalidParameter as exc:  # a language or kind one repository lacks
            failure = failure or exc
            notes.append(f"{name}: {exc.message}")
            continue
        lists[name] = resp.results
        about.append({"repo": name, "ref": view.ref, "manifest_id": view.manifest_id,
                      "total_count": resp.total_count, "query_intent": resp.query_intent})
    if failure is not None and not lists:
        raise failure
    strengths = (repo_strengths({n: fleet.views[n] for n in lists}, lists, request.query)
                 if fusion == "global" else None)
    return OrgResponse(fuse(lists, {n: fleet.views[n].ref or "" for n in lists}, request.limit, fusion, strengths),
                       about, fusion, notes)


def repo_strengths(views: dict[str, IndexView], lists: dict[str, list[SearchHit]], query: str) -> dict[str, float]:
    """Each repository's best file among its hits, scored by BM25 with the fleet's statistics
    (document frequencies summed over every repository, lengths against the fleet's average
    file): unlike the repositories' own scores, comparable across them."""
    terms = chunk_terms(query)
    if not terms:
        return dict.fromkeys(views, 1.0)
    marks = ", ".join("?" * len(terms))
    df = {t: 0 for t in terms}
    files = lengths = 0.0
    for view in views.values():
        for term, n in view.sql(f"SELECT term, count(DISTINCT path) FROM term_postings WHERE term IN ({marks}) "
                                "GROUP BY term", terms):
            df[term] += n
        n_files, mean = _corpus(view)
        files, lengths = files + n_files, lengths + n_files * mean
    average = lengths / max(files, 1.0)
    idfs = {t: idf(files, n) for t, n in df.items()}
    return {name: _best_file(view, list(dict.fromkeys(h.path for h in lists.get(name, []))), terms, idfs, average)
            for name, view in views.items()}


def _corpus(view: IndexView) -> tuple[int, float]:
    """(indexed files, mean file length in terms) of one repository (memoised on the view)."""
    if "org:corpus" not in view.cache:
        mean = view.sql("SELECT coalesce(sum(length)::DOUBLE / greatest(count(DISTINCT path), 1), 0) FROM docs")[0][0]
        view.cache["org:corpus"] = (view.count_where("files", "status = 'indexed'"), float(mean))
    return view.cache["org:corpus"]


def _best_file(view: IndexView, paths: list[str], terms: list[str], idf: dict[str, float], average: float) -> float:
    if not paths:
        return 0.0
    marks, pmarks = ", ".join("?" * len(terms)), ", ".join("?" * len(paths))
    lengths = dict(view.sql(f"SELECT path, sum(length) FROM docs WHERE path IN ({pmarks}) GROUP BY path", paths))
    scores: dict[str, float] = {}
    for path, term, tf in view.sql(f"SELECT path, term, sum(tf) FROM term_postings WHERE term IN ({marks}) "
                                   f"AND path IN ({pmarks}) GROUP BY path, term", [*terms, *paths]):
        scores[path] = scores.get(path, 0.0) + bm25_term(tf, lengths.get(path) or average, max(average, 1.0), idf[term])
    return max(scores.values(), default=0.0)


def fuse(lists: dict[str, list[SearchHit]], refs: dict[str, str], limit: int, fusion: str,
         strengths: dict[str, float] | None = None) -> list[OrgHit]:
    """One ranking of several repositories' ranked hits (module doc); stable for equal keys.
    `global`: a hit's score over its repository's best, times the repository's strength
    (`repo_strengths`) over the strongest's."""
    scored: list[tuple[float, float, int, OrgHit]] = []
    strongest = max((strengths or {}).values(), default=0.0) or 1.0
    for order, (name, hits) in enumerate(lists.items()):
        best = max((h.score for h in hits), default=0.0) or 1.0
        weight = (strengths or {}).get(name, 0.0) / strongest
        for rank, hit in enumerate(hits, 1):
            if fusion == "global":
                fused = hit.score / best * weight
            else:
                fused = hit.score if fusion == "score" else 1.0 / (RRF_K + rank)
            scored.append((-fused, -hit.score, order * 100000 + rank, OrgHit(name, refs[name], hit, fused)))
    scored.sort(key=lambda t: t[:3])
    return [t[3] for t in scored[:limit]]
