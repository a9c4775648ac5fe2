"""`context`: what to read for a task, packed into a token budget.

The candidates are the search's own file ranking (`search(..., group_by="file")`: the files a
task in words points at, each with its best spans), widened by the call graph (what the top
hits call and what calls them). No second ranker: the pack only decides how much of each
candidate it can afford, in rank order:

0. the top three candidates whole, when the file fits three quarters of what is left; when
   the best one is not whole, its spans, and if they no longer fit, the lesser whole files
   give way to them (the last first);
1. the relevant spans in full (each hit's lines; a long symbol cut to its best window of
   24-80 lines, fewer on a small budget; the last spans dropped when all do not fit),
   while half the budget is unspent, else just the path and why (on at most 15% of it);
2. then whole files, best first, where the whole file fits what is left;
3. then more candidates' spans, then signatures and docstrings (the file's outline) for the
   ones still given as a path.

Every item carries a one-line reason (named in the task, defines a name the task uses, the
terms it matched, calls or is called by a top hit). Tokens are counted with a real tokenizer
when one is installed (tokencount.py); the pack's rendered text is counted whole at the end
and trimmed from the bottom until it fits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import CodeagentError, InvalidParameter
from ..model import Metadata
from ..tokenize import tokenize
from . import tokencount
from .graph import callees, callers
from .index import IndexView
from .navigate import file_outline
from .ranking.files import names_file
from .retrieval import SearchRequest
from .search import search
from .sourcetext import best_window, file_lines
from .terms import chunk_terms, query_terms

FILE, SPANS, OUTLINE, PATH = "file", "spans", "outline", "path"
DETAILS = (FILE, SPANS, OUTLINE, PATH)
MIN_BUDGET, MAX_BUDGET = 200, 200_000
MAX_FILES = 40  # candidates taken from the file ranking
SPAN_LINES = 80  # a longer hit is cut to its best window of this many lines,
MIN_SPAN_LINES = 24  # or fewer on a small budget: one line for each TOKENS_PER_SPAN_LINE
TOKENS_PER_SPAN_LINE = 40
FIRST_PASS_SHARE = 0.5  # spans in rank order until this share of the budget is spent
WHOLE_FIRST = 3  # the top candidates given whole when the file fits WHOLE_SHARE of what is left
WHOLE_SHARE = 0.75
PATH_SHARE = 0.15  # at most this share of the budget on candidates given only as a path
GRAPH_SEEDS = 3  # top hits whose callers and callees join the candidates
GRAPH_FANOUT = 4
GRAPH_DISCOUNT = 0.5  # a graph neighbour's score, of the hit it came from
OUTLINE_SYMBOLS = 40
MAX_TERMS_SHOWN = 4
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


@dataclass
class ContextItem:
    path: str
    reason: str
    score: float
    detail: str = PATH
    text: str = ""
    tokens: int = 0
    lines: list[tuple[int, int]] = field(default_factory=list)  # the file lines shown in full

    def to_dict(self) -> dict:
        return {"path": self.path, "detail": self.detail, "reason": self.reason,
                "score": round(self.score, 6), "tokens": self.tokens,
                "lines": [list(r) for r in self.lines], "text": self.text}


@dataclass
class ContextPack:
    task: str
    budget: int
    tokens: int
    tokenizer: str
    items: list[ContextItem]
    candidates: int
    metadata: Metadata

    def render(self) -> str:
        return "\n\n".join(i.text for i in self.items)

    def to_dict(self) -> dict:
        return {"task": self.task, "budget": self.budget, "tokens": self.tokens,
                "tokenizer": self.tokenizer, "candidates": self.candidates,
                "files": [i.to_dict() for i in self.items], "metadata": self.metadata.to_dict()}


@dataclass
class _Candidate:
    path: str
    score: float
    language: str = ""
    spans: list[tuple[int, int, str]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def build_context(view: IndexView, task: str, budget: int) -> ContextPack:
    """The pack for `task` within `budget` tokens (see the module's docstring)."""
    if not task.strip():
        raise InvalidParameter("empty task")
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise InvalidParameter(f"budget must be {MIN_BUDGET} to {MAX_BUDGET} tokens")
    name, count = tokencount.counter()
    cands = gather(view, task)
    lines = file_lines(view, [c.path for c in cands])
    terms = set(chunk_terms(task))
    items = _fill(view, cands, lines, terms, budget, count)
    while items and count("\n\n".join(i.text for i in items)) > budget:
        items.pop()  # token merges across items: the whole must fit too
    total = count("\n\n".join(i.text for i in items)) if items else 0
    return ContextPack(task, budget, total, name, items, len(cands), view.metadata())


def gather(view: IndexView, task: str) -> list[_Candidate]:
    """The ranked candidates: the file ranking's files with their spans and reasons, then
    the call-graph neighbours of the top hits."""
    resp = search(view, SearchRequest(task, limit=MAX_FILES, group_by="file"))
    qt = query_terms(task)
    idents = set(_IDENT.findall(task))
    found: dict[str, _Candidate] = {}
    for f in resp.files or []:
        c = found.setdefault(f.path, _Candidate(f.path, f.score, f.language))
        if names_file(f.path, qt.mentions):
            c.reasons.append("named in the task")
        named = [h.name for h in f.spans if h.name and h.name in idents]
        if named:
            c.reasons.append("defines " + ", ".join(f"`{n}`" for n in dict.fromkeys(named)) +
                             " named in the task")
        c.spans += [(h.line_start, h.line_end, _label(h)) for h in f.spans]
    _add_neighbours(view, resp.files or [], found)
    _add_matched_terms(view, list(found.values()), task, qt.weights)
    return sorted(found.values(), key=lambda c: -c.score)


def _label(hit) -> str:
    return f"{hit.kind} {hit.qualified_name or hit.name}".strip() if hit.name else hit.result_type


def _add_neighbours(view: IndexView, files, found: dict[str, _Candidate]) -> None:
    seeds = [(f, h) for f in files[:GRAPH_SEEDS]
             for h in [next((h for h in f.spans if h.symbol_id), None)] if h is not None]
    for f, hit in seeds:
        for how, walk in (("calls", callers), ("called by", callees)):
            try:
                nodes = walk(view, hit.symbol_id, limit=GRAPH_FANOUT, include_tests=False).nodes
            except CodeagentError:
                continue
            for node in nodes[:GRAPH_FANOUT]:
                if node.path == f.path or not node.path:
                    continue
                c = found.get(node.path)
                if c is None:
                    c = found[node.path] = _Candidate(node.path, f.score * GRAPH_DISCOUNT)
                c.reasons.append(f"{how} `{hit.name}` (a top hit)")
                if node.line_start and not any(s <= node.line_start <= e for s, e, _ in c.spans):
                    c.spans.append((node.line_start, node.line_end, f"{node.kind} {node.name}"))


def _add_matched_terms(view: IndexView, cands: list[_Candidate], task: str,
                       weights: dict[str, float]) -> None:
    texts = file_lines(view, [c.path for c in cands])
    asked = {t for t in tokenize(task) if t in weights}  # the task's own words, not variants
    for c in cands:
        lines = texts.get(c.path, [])
        seen = " ".join([c.path, *(l for s, e, _ in c.spans for l in lines[s - 1:e])]).lower()
        matched = sorted((t for t in asked if t in seen), key=lambda t: (-weights[t], t))  # ties by term: the same in every process
        if matched:
            c.reasons.append("matches " + ", ".join(matched[:MAX_TERMS_SHOWN]))
        if not c.reasons:
            c.reasons.append("ranked by the file search")


def _fill(view: IndexView, cands: list[_Candidate], lines: dict[str, list[str]], terms: set[str],
          budget: int, count) -> list[ContextItem]:
    """Assign each candidate a detail, in the passes the module's docstring describes."""
    items = [ContextItem(c.path, "; ".join(dict.fromkeys(c.reasons)), c.score) for c in cands]
    used = 0

    def paths() -> int:
        return sum(i.tokens for i in items if i.detail == PATH)

    width = max(MIN_SPAN_LINES, min(SPAN_LINES, budget // TOKENS_PER_SPAN_LINE))

    def take(i: int, detail: str, cap: float | None = None) -> bool:
        """Give item i this detail if it fits the budget (and costs at most `cap` more);
        spans that do not all fit are tried without the last ones."""
        nonlocal used
        item = items[i]
        for keep in range(len(cands[i].spans) if detail == SPANS else 1, 0, -1):
            text, shown = render(view, cands[i], detail, item.reason, lines.get(item.path, []),
                                 terms, keep, width)
            cost = count(text) + 1  # the blank line between items
            if text and used - item.tokens + cost <= budget and (
                    cap is None or cost - item.tokens <= cap):
                used += cost - item.tokens
                item.detail, item.text, item.tokens, item.lines = detail, text, cost, shown
                return True
        return False

    def release(i: int) -> None:
        nonlocal used
        used -= items[i].tokens
        items[i].detail, items[i].text, items[i].tokens, items[i].lines = PATH, "", 0, []

    for i in range(min(WHOLE_FIRST, len(items))):
        take(i, FILE, (budget - used) * WHOLE_SHARE)
    if items and not items[0].text and not take(0, SPANS):
        for j in range(min(WHOLE_FIRST, len(items)) - 1, 0, -1):  # lesser whole files give way
            if items[j].detail == FILE:
                release(j)
                if take(0, SPANS):
                    break
    for i in range(len(items)):
        if items[i].text:
            continue
        if not (used < budget * FIRST_PASS_SHARE and take(i, SPANS)):
            take(i, PATH, budget * PATH_SHARE - paths())
    for i in range(len(items)):
        take(i, FILE)
    for detail in (SPANS, OUTLINE):
        for i in range(len(items)):
            if items[i].detail == PATH:
                take(i, detail)
    return [i for i in items if i.text]


def render(view: IndexView, c: _Candidate, detail: str, reason: str, lines: list[str],
           terms: set[str], keep: int = 0, width: int = SPAN_LINES) -> tuple[str, list[tuple[int, int]]]:
    """(text, lines shown in full) of a candidate at one detail ("" when it has none); spans:
    its first `keep` (all when 0), each at most `width` lines."""
    if detail == PATH:
        return f"- {c.path} — {reason}", []
    head = f"## {c.path} — {reason}"
    if detail == FILE:
        if not lines:
            return "", []
        return f"{head}\n```{c.language}\n" + "\n".join(lines) + "\n```", [(1, len(lines))]
    if detail == OUTLINE:
        return _outline(view, c.path, head)
    shown = _spans(c.spans[:keep or None], lines, terms, width)
    if not shown:
        return "", []
    body = "\n".join(f"L{s}-{e} {label}\n```{c.language}\n" + "\n".join(lines[s - 1:e]) + "\n```"
                     for s, e, label in shown)
    return f"{head}\n{body}", [(s, e) for s, e, _ in shown]


def _spans(spans: list[tuple[int, int, str]], lines: list[str], terms: set[str],
           width: int) -> list[tuple[int, int, str]]:
    """The spans, each cut to `width` lines, in line order, without overlaps."""
    out: list[tuple[int, int, str]] = []
    for s, e, label in spans:
        e = min(e, len(lines))
        if s < 1 or e < s:
            continue
        if e - s + 1 > width:
            s, e = best_window(lines, s, e, terms, width)
        out.append((s, min(e, len(lines)), label))
    merged: list[tuple[int, int, str]] = []
    for s, e, label in sorted(out):
        if merged and s <= merged[-1][1] + 1:
            ps, pe, pl = merged[-1]
            merged[-1] = (ps, max(pe, e), pl)
        else:
            merged.append((s, e, label))
    return merged


def _outline(view: IndexView, path: str, head: str) -> tuple[str, list[tuple[int, int]]]:
    try:
        symbols = file_outline(view, path).symbols
    except CodeagentError:
        return "", []
    if not symbols:
        return "", []
    rows, shown = [], []
    for s in symbols[:OUTLINE_SYMBOLS]:
        doc = (s.doc or "").strip().splitlines()
        sig = (s.signature or f"{s.kind} {s.name}").strip().splitlines()[0]
        rows.append(f"  L{s.line_start} {sig}" + (f"  — {doc[0][:120]}" if doc else ""))
        shown.append((s.line_start, s.line_start))
    return head + "\n" + "\n".join(rows), shown
