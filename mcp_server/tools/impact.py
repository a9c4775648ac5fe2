"""get_impact (alias detect_changes): an adapter over `codeagent.query.impact`.

The head of the range is usually the served index (the work tree's), answered from the
server's warm view; the base index is opened once and kept while it stays the base, so a
repeated call pays only for the diff, the walk and the ranking.
"""

from __future__ import annotations

import threading
from typing import Annotated, Any

from pydantic import Field

from ...query import IndexView
from ...query.impact import (DEFAULT_DEPTH, MAX_DEPTH, ImpactOptions, compute_impact, history_of,
                             open_view, resolve_spec, split_range, worktree_base)
from ..schemas import Response
from ..state import ServerState, metadata_of
from .search import QUERY_TIMEOUT

Range = Annotated[str | None, Field(max_length=512, description=(
    "BASE..HEAD (refs, git revisions or manifest ids), BASE alone (against the work tree), "
    "or omitted: the work tree against the index of its commit"))]
KEPT_BASES = 2  # base views kept open (the work tree's base, and one other range's)


class ImpactOut(Response):
    summary: dict[str, Any] = Field(description="Counts: changed, breaking, dependents, tests, files; truncated")
    risk: dict[str, Any] = Field(description="level, public API touched, fan-in, changed code no test reaches")
    changed: list[dict[str, Any]] = Field(description="Changed symbols (kind file: lines outside any symbol)")
    tests: list[dict[str, Any]] = Field(description="Test files to run, best first: path, score, reason, functions")
    dependents: list[dict[str, Any]] = Field(description="What depends on the change: edge, confidence, "
                                                         "depth, path_back, flag (a breaking change)")
    base: dict[str, Any]
    head: dict[str, Any]


class ImpactTools:
    def __init__(self, state: ServerState) -> None:
        self.state = state
        self._bases: dict[str, IndexView] = {}
        self._lock = threading.Lock()

    def _base(self, store, root, ref: str | None, manifest_id: str) -> IndexView:
        with self._lock:
            view = self._bases.pop(manifest_id, None)
            if view is None:
                view = open_view(store, root, ref, manifest_id)
                view.keep_text_in_memory = True  # kept across calls: a long-lived reader's mapped arrays
            self._bases[manifest_id] = view  # most recently used last
            while len(self._bases) > KEPT_BASES:
                self._bases.pop(next(iter(self._bases))).close()
            return view

    def get_impact(self, range: Range = None,
                   depth: Annotated[int, Field(ge=1, le=MAX_DEPTH, description="Hops of dependents")] = DEFAULT_DEPTH,
                   max_tests: Annotated[int, Field(ge=1, le=200, description="Test files listed")] = 10) -> ImpactOut:
        """What a change touches: changed symbols, their dependents (breaking changes
        flagged), the tests to run, each with its reason, and a risk summary. Use it after an
        edit to run a few tests, not the suite."""
        a_spec, b_spec = split_range(range, False)
        self.state.wait_for_graph(None)
        with self.state.view(None) as served:
            store, root = served.store, served.repo
            head, own = served, False
            if b_spec is not None:
                b_ref, b_id = resolve_spec(store, root, b_spec)
                if b_id != served.manifest_id:
                    head, own = open_view(store, root, b_ref, b_id), True
            try:
                a_ref, a_id = resolve_spec(store, root, a_spec) if a_spec else worktree_base(store, root, head)
                base = self._base(store, root, a_ref, a_id)
                with head.deadline(QUERY_TIMEOUT):
                    data = compute_impact(base, head, options=ImpactOptions(depth=depth, max_tests=max_tests),
                                          history=history_of(root, base.commit, ImpactOptions.history, store.root))
                return ImpactOut(**data, metadata=metadata_of(head))
            finally:
                if own:
                    head.close()

    def close(self) -> None:
        with self._lock:
            for view in self._bases.values():
                view.close()
            self._bases.clear()
