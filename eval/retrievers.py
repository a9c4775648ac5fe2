"""The modes an eval scores over one built manifest: the query engine's modes and the baseline.

Engine modes go through `codeagent.query.search` exactly as the CLI and the MCP server do.
The baseline reads the assembled DuckDB's `files` table directly, so it keeps working (and
keeps meaning the same thing) whatever the query engine does. It is the strong whole-file
BM25: source-code files only (docs, configs and data left out, as a reader would skip them).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

from .. import format as fmt
from ..errors import CodeagentError, IndexMissing, ModeUnavailable
from ..format.shard import shard_text_pairs
from ..roles import is_code_path
from ..store import Store
from .baseline import TermCountCache, WholeFileBM25
from .cases import EvalCase, GoldSymbol

BASELINE = "bm25-file"
NO_HISTORY = "auto-no-history"  # auto without the history field: the ablation, on the same builds
FUNCTIONS = "functions"  # auto grouped by symbol: the functions to look at (scored on gold functions)
ENGINE_MODES = ("symbol", "text", "semantic", "hybrid", "auto", NO_HISTORY, FUNCTIONS)
ALL_MODES = ENGINE_MODES + (BASELINE,)
DEPTH = 50  # hits asked of every mode: enough distinct files for Acc@10 when hits are symbols
_EDGES_AMONG = """
SELECT src_path, dst_path, kind, confidence = 'exact', count(*) FROM edges
WHERE src_path IN (SELECT unnest(?::VARCHAR[])) AND dst_path IN (SELECT unnest(?::VARCHAR[]))
  AND src_path <> dst_path GROUP BY ALL
"""


@dataclass(frozen=True)
class Hit:
    path: str
    score: float | None
    name: str = ""
    line_start: int = 0
    line_end: int = 0


@dataclass(frozen=True)
class Answer:
    hits: list[Hit]
    seconds: float


class IndexedRef:
    """One manifest of the eval store, searchable by every mode; close it when done."""

    def __init__(self, store_dir: Path, repo: Path, ref_name: str, cache: TermCountCache) -> None:
        self.store = Store(store_dir)
        self.repo = repo
        self.ref_name = ref_name
        self.manifest_id = self.store.read_ref(ref_name) or ""
        if not self.manifest_id:
            raise IndexMissing(f"the eval store has no index for {ref_name}")
        self._cache = cache
        self._baseline: WholeFileBM25 | None = None
        self._view = None
        self._engine_error: str | None = None

    def _baseline_index(self) -> WholeFileBM25:
        if self._baseline is None:
            import duckdb

            db = self.store.assembled_dir(self.manifest_id) / fmt.DUCKDB_FILE
            con = duckdb.connect(str(db), read_only=True)
            try:
                files = [r for r in con.execute("SELECT path, blob, shard FROM files WHERE status = 'indexed' "
                                                "ORDER BY path").fetchall() if is_code_path(r[0])]
            finally:
                con.close()
            blobs = dict((p, b) for p, b, _ in files)
            rows = [(p, blobs[p], t) for p, t in shard_text_pairs([(p, s) for p, _, s in files], self.store.get)]
            self._baseline = WholeFileBM25.from_files(rows, self._cache)
        return self._baseline

    def _engine_view(self):
        if self._view is None and self._engine_error is None:
            try:
                from ..query import open_index  # the baseline mode runs without the query engine
            except ImportError as exc:
                self._engine_error = f"query engine not importable: {exc}"
                raise ModeUnavailable(self._engine_error) from None
            self._view = open_index(self.repo, self.store.root, self.ref_name)
        if self._view is None:
            raise ModeUnavailable(self._engine_error or "query engine unavailable")
        return self._view

    def prepare(self, mode: str) -> None:
        """Load what a mode needs before timing starts (the baseline's in-memory index)."""
        if mode == BASELINE:
            self._baseline_index()
        else:
            self._engine_view()

    def search(self, mode: str, query: str, depth: int = DEPTH) -> Answer:
        if mode == BASELINE:
            index = self._baseline_index()
            started = time.perf_counter()
            ranked = index.search(query, depth)
            return Answer([Hit(p, s) for p, s in ranked], time.perf_counter() - started)
        from ..query import SearchRequest, search  # the baseline mode runs without the query engine

        view = self._engine_view()
        started = time.perf_counter()
        try:
            response = search(view, SearchRequest(query, mode="auto" if mode in (NO_HISTORY, FUNCTIONS) else mode,
                                                  limit=depth, history=mode != NO_HISTORY,
                                                  group_by="symbol" if mode == FUNCTIONS else None))
        except IndexMissing as exc:
            raise ModeUnavailable(exc.message) from None
        except CodeagentError as exc:
            if mode == "semantic" and exc.code in ("index_missing", "index_incompatible"):
                raise ModeUnavailable(exc.message) from None
            raise
        seconds = time.perf_counter() - started
        hits = [Hit(h.path, h.score, h.name, h.line_start, h.line_end) for h in response.results]
        return Answer(hits, seconds)

    def gold_functions(self, case: EvalCase) -> EvalCase:
        """`case` with its gold functions: those of this index whose lines hold a changed line."""
        if case.gold_symbols or not case.gold_lines:
            return case
        from ..query.ranking.functions import FUNCTION_KINDS  # the baseline mode runs without the query engine
        from ..query.index import sql_literals

        rows = self._engine_view().sql(
            f"SELECT path, name, start_line, end_line FROM symbols WHERE path IN ({sql_literals(case.gold_files)}) "
            f"AND kind IN ({sql_literals(FUNCTION_KINDS)})")
        gold = {}
        for path, first, last in case.gold_lines:
            for p, name, a, b in rows:
                if p == path and a <= last and first <= b:
                    gold.setdefault((p, name, a), GoldSymbol(p, name.rsplit(".", 1)[-1], max(a, first)))
        return replace(case, gold_symbols=tuple(gold.values()))

    def features(self, query: str, depth: int = DEPTH) -> list:
        """The file model's candidates for `query` (query.search.file_evidence)."""
        from ..query import SearchRequest  # the baseline mode runs without the query engine
        from ..query.search import file_evidence

        return file_evidence(self._engine_view(), SearchRequest(query, limit=depth))

    def candidate_edges(self, paths: list[str]) -> list[list]:
        """[from, to, kind, exact, count] for the symbol-graph edges between two of `paths` (by
        their index): what graph-neighbourhood features are tried from (eval/try_features)."""
        view = self._engine_view()
        if not view.has_table("edges"):
            return []
        at = {p: i for i, p in enumerate(paths)}
        return [[at[s], at[d], kind, int(bool(exact)), int(n)]
                for s, d, kind, exact, n in view.sql(_EDGES_AMONG, [paths, paths])]

    def close(self) -> None:
        if self._view is not None:
            self._view.close()
            self._view = None
