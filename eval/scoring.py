"""Scoring one answer against one case: hits -> file and symbol rankings -> metrics (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from .cases import EvalCase, GoldSymbol
from .metrics import file_metrics, symbol_metrics
from .retrievers import Hit


def file_ranking(hits: Sequence[Hit]) -> list[tuple[str, float | None]]:
    """Files in the order of their first hit, scored by it."""
    return [(h.path, h.score) for h in hits]


def matches(hit: Hit, gold: GoldSymbol) -> bool:
    """Same file, same name, and (when the gold line is known) a span that contains it."""
    if hit.path != gold.path or not hit.name or hit.name.rsplit(".", 1)[-1] != gold.name:
        return False
    return gold.line is None or hit.line_start <= gold.line <= max(hit.line_end, hit.line_start)


def symbol_ranking(hits: Sequence[Hit], gold: Sequence[GoldSymbol]) -> list[tuple[object, float | None]]:
    """Hits keyed by the gold symbol they match (its index) or by their own position."""
    out: list[tuple[object, float | None]] = []
    for n, hit in enumerate(hits):
        key: object = ("other", n)
        for i, g in enumerate(gold):
            if matches(hit, g):
                key = i
                break
        out.append((key, hit.score))
    return out


def score_case(case: EvalCase, hits: Sequence[Hit], returns_symbols: bool) -> dict[str, float]:
    """File metrics always; symbol metrics when the case names symbols and the mode returns them."""
    scores = file_metrics(file_ranking(hits), set(case.gold_files))
    if case.gold_symbols and returns_symbols:
        scores.update(symbol_metrics(symbol_ranking(hits, case.gold_symbols), set(range(len(case.gold_symbols)))))
    return scores
