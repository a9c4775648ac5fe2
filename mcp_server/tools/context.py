"""The `get_context` tool: a task's context within a token budget (query/context.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...query.context import MAX_BUDGET, MIN_BUDGET, build_context
from ..schemas import Model, Response
from ..state import ServerState, metadata_of

QUERY_TIMEOUT = 30.0


class ContextFile(Model):
    path: str
    detail: Literal["file", "spans", "outline", "path"] = Field(
        description="file: the whole file; spans: its relevant spans in full; outline: its "
                    "signatures and docstrings; path: only the path and why")
    reason: str = Field(description="Why it is in the pack, in one line")
    score: float
    tokens: int
    lines: list[list[int]] = Field(description="[start, end] line ranges shown in full")
    text: str


class ContextPack(Response):
    task: str
    budget: int
    tokens: int = Field(description="Tokens the pack's text uses (under `budget`)")
    tokenizer: str = Field(description="o200k_base, or an estimate when no tokenizer is installed")
    candidates: int
    files: list[ContextFile]


class ContextTools:
    def __init__(self, state: ServerState) -> None:
        self.state = state

    def get_context(
        self, task: Annotated[str, Field(min_length=1, max_length=20_000,
                                         description="The task in words")],
        budget: Annotated[int, Field(ge=MIN_BUDGET, le=MAX_BUDGET,
                                     description="Tokens the pack may use")] = 6000,
    ) -> ContextPack:
        """A task's files and symbols, best first, each at the detail a token budget allows,
        with why. Use it first for a task in words; keep `budget` under max_tokens."""
        with self.state.view() as view, view.deadline(QUERY_TIMEOUT):
            pack = build_context(view, task, budget)
            body = pack.to_dict()  # `fit` pages `files` (a cursor skips the ones sent)
            body["files"] = [ContextFile.model_validate(f) for f in body["files"]]
            body["metadata"] = metadata_of(view)
            return ContextPack.model_validate(body)
