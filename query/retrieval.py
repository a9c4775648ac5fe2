"""What a retriever is asked (`SearchRequest`) and what it answers (`Candidates`).

A retriever is `fn(view, request) -> Candidates`; `search.RETRIEVERS` names each one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .filters import FileFilter, make_filter
from .index import IndexView
from ..model import COMPLETE, SearchHit


@dataclass(frozen=True)
class SearchRequest:
    query: str
    mode: str = "auto"
    language: str | None = None
    kind: str | None = None
    path: str | None = None  # glob
    extension: str | None = None  # "py" or ".py"; comma-separated for several
    limit: int = 10
    semantic_weight: float | None = None  # 0..1, hybrid/auto fusion
    case_sensitive: bool = False  # regex mode
    intent: str | None = None  # override classify_intent
    roles: tuple[str, ...] = ()  # only files of these roles (codeagent.roles)
    group_by: str | None = None  # "file": also answer ranked files with their best spans
    history: bool = True  # rank files by their commit history too (off: the ablation)

    def file_filter(self) -> FileFilter:
        return make_filter(self.language, self.path, self.extension, self.roles)

    def extensions(self) -> list[str]:
        if not self.extension:
            return []
        return [e.strip().lstrip(".").lower() for e in self.extension.split(",") if e.strip()]


@dataclass
class Candidates:
    """A retriever's answer: hits best first, how many matched in all, whether it is whole."""

    hits: list[SearchHit]
    total: int
    completeness: str = COMPLETE
    notes: list[str] = field(default_factory=list)


Retriever = Callable[[IndexView, SearchRequest], Candidates]
