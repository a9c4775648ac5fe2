"""Search across a fleet store (format/fleet.py): each repository's first ref, searched on
its own, the answers fused into one ranking whose hits name their repository.

Fusion (measured in bench/org.py, docs/org.md): `score` merges the repositories' hits by
their own scores (each repository's corpus statistics), `rank` by reciprocal rank (1/(K+rank),
ties by score). Rank fusion gives every repository's best hit the same weight, so which
repository answers first is left to the tie-break; scores carry how well each repository
matched, which is what picks the right repository.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

from ..errors import CodeagentError, IndexMissing, InvalidParameter
from ..format.fleet import fleet_ref, read_listing
from ..model import SearchHit
from ..store import Store
from .filerank import chunk_terms
from .index import IndexView, open_store
from .search import SearchRequest, search

FUSIONS = ("repo", "score", "rank")
RRF_K = 60  # the usual reciprocal-rank constant
# CORI's constants (Callan, Lu and Croft 1995; the values its evaluations settled on): the
# default belief of a term, the df damping, and the weight of the collection in the merge.
CORI_B, CORI_DF_BASE, CORI_DF_LEN, CORI_MERGE = 0.4, 50.0, 150.0, 0.4


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
               fusion: str = "repo") -> OrgResponse:
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
    beliefs = repo_beliefs({n: fleet.views[n] for n in lists}, request.query) if fusion == "repo" else None
    return OrgResponse(fuse(lists, {n: fleet.views[n].ref or "" for n in lists}, request.limit, fusion, beliefs),
                       about, fusion, notes)


def repo_beliefs(views: dict[str, IndexView], query: str) -> dict[str, float]:
    """How much each repository is about the query (CORI resource selection, from each
    repository's document frequencies of the query's terms): a term found in few of the
    repositories, and in many of one's files, says that one is meant."""
    terms = chunk_terms(query)
    if not terms or not views:
        return dict.fromkeys(views, 1.0)
    marks = ", ".join("?" * len(terms))
    df: dict[str, dict[str, int]] = {}
    files: dict[str, int] = {}
    for name, view in views.items():
        df[name] = dict(view.sql(f"SELECT term, count(DISTINCT path) FROM term_postings WHERE term IN ({marks}) "
                                 "GROUP BY term", terms))
        files[name] = max(view.count_where("files", "status = 'indexed'"), 1)
    average = sum(files.values()) / len(files)
    spread = {t: sum(1 for name in views if df[name].get(t)) for t in terms}
    total = len(views)
    beliefs = {}
    for name in views:
        belief = 0.0
        for t in terms:
            d = df[name].get(t, 0)
            tf_part = d / (d + CORI_DF_BASE + CORI_DF_LEN * files[name] / average)
            idf_part = math.log((total + 0.5) / max(spread[t], 1)) / math.log(total + 1.0)
            belief += CORI_B + (1 - CORI_B) * tf_part * idf_part
        beliefs[name] = belief / len(terms)
    return beliefs


def fuse(lists: dict[str, list[SearchHit]], refs: dict[str, str], limit: int, fusion: str,
         beliefs: dict[str, float] | None = None) -> list[OrgHit]:
    """One ranking of several repositories' ranked hits (module doc); stable for equal keys.
    `repo` fusion: CORI's merge, a hit's score over its repository's best times the
    repository's belief (min-max over the repositories)."""
    scored: list[tuple[float, float, int, OrgHit]] = []
    low, high = min((beliefs or {0: 0}).values()), max((beliefs or {0: 0}).values())
    for order, (name, hits) in enumerate(lists.items()):
        best = max((h.score for h in hits), default=0.0) or 1.0
        weight = ((beliefs or {}).get(name, 0.0) - low) / (high - low) if high > low else 1.0
        for rank, hit in enumerate(hits, 1):
            if fusion == "repo":
                fused = hit.score / best * (1 + CORI_MERGE * weight) / (1 + CORI_MERGE)
            else:
                fused = hit.score if fusion == "score" else 1.0 / (RRF_K + rank)
            scored.append((-fused, -hit.score, order * 100000 + rank, OrgHit(name, refs[name], hit, fused)))
    scored.sort(key=lambda t: t[:3])
    return [t[3] for t in scored[:limit]]
