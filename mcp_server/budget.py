"""Answers sized for an agent: every response fits a character budget, and list results page
with an opaque cursor that is valid only for the manifest and the arguments that produced it.

A tool computes its answer as usual; `fit` then drops the already-sent items (the cursor's
offset), keeps as many of the rest as the budget allows, and says where the next page starts.
Tools that pass `limit` to the engine ask it for `limit + skipped()` rows so the page after
the cursor is as long as the first.
"""

from __future__ import annotations

import base64
import contextvars
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import ArgumentError

CHARS_PER_TOKEN = 4
# An agent's first answer: about 1,500 tokens (text block and structured content together);
# `max_tokens` asks for more.
DEFAULT_TOKENS = 1500
MIN_TOKENS, MAX_TOKENS = 256, 100_000
# The list each paged answer is made of, by the name of its first field that holds one.
PAGED_FIELDS = ("results", "entries", "files", "matches", "symbols", "nodes", "spans", "hops", "dependents")
CUT_MARK = "…[cut]"
LONG_TEXT = 400  # characters a nested text keeps when an answer is cut (a doc, a long snippet)
CURSOR_ROOM = 220  # characters kept free in a cut list for `next_cursor`, `omitted` and the flags

_skipped: contextvars.ContextVar[int] = contextvars.ContextVar("codeagent_mcp_skipped", default=0)
_current: contextvars.ContextVar["Page | None"] = contextvars.ContextVar("codeagent_mcp_page",
                                                                        default=None)


def skipped() -> int:
    """Items the current request's cursor says were sent already."""
    return _skipped.get()


def budget_chars() -> int:
    """The current request's whole budget in characters (text block and structured content)."""
    page = _current.get()
    return page.max_chars if page is not None else DEFAULT_TOKENS * CHARS_PER_TOKEN


def cursor_at(offset: int, manifest_id: str | None) -> str | None:
    """A next_cursor of the current request that resumes at `offset` (a tool's own unit:
    read_file's lines or bytes)."""
    page = _current.get()
    return page.cursor(offset, manifest_id) if page is not None else None


def compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Page:
    """What one call asked for: its budget in characters and where its cursor starts."""

    tool: str
    digest: str
    offset: int = 0
    manifest_id: str | None = None
    max_chars: int = DEFAULT_TOKENS * CHARS_PER_TOKEN

    @classmethod
    def take(cls, tool: str, arguments: dict[str, Any]) -> "Page":
        """Removes `cursor` and `max_tokens` from `arguments` and checks them strictly."""
        cursor = arguments.pop("cursor", None)
        tokens = arguments.pop("max_tokens", DEFAULT_TOKENS)
        if type(tokens) is not int or not MIN_TOKENS <= tokens <= MAX_TOKENS:
            raise ArgumentError("max_tokens", f"an integer from {MIN_TOKENS} to {MAX_TOKENS}")
        digest = _digest(tool, arguments)
        page = cls(tool, digest, max_chars=tokens * CHARS_PER_TOKEN)
        if cursor is None:
            return page
        if not isinstance(cursor, str):
            raise ArgumentError("cursor", "the next_cursor string of an earlier answer")
        try:
            body = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii") + b"=="))
            offset, manifest, digest_in = int(body["o"]), body["m"], body["d"]
        except (ValueError, KeyError, TypeError, UnicodeEncodeError):
            raise ArgumentError("cursor", "the next_cursor string of an earlier answer") from None
        if digest_in != digest or offset < 0:
            raise ArgumentError("cursor", "a next_cursor from this tool called with the same "
                                          "arguments (only max_tokens may change)")
        return cls(tool, digest, offset, manifest, page.max_chars)

    def cursor(self, offset: int, manifest_id: str | None) -> str:
        raw = compact({"o": offset, "m": (manifest_id or "")[:16], "d": self.digest}).encode()
        return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")

    @contextmanager
    def active(self) -> Iterator[None]:
        """Within: `skipped()` is this page's offset."""
        token, current = _skipped.set(self.offset), _current.set(self)
        try:
            yield
        finally:
            _skipped.reset(token)
            _current.reset(current)

    def within(self, max_chars: int) -> "Page":
        """This page with a smaller budget (the structured part of an answer)."""
        return Page(self.tool, self.digest, self.offset, self.manifest_id, max_chars)


def _digest(tool: str, arguments: dict[str, Any]) -> str:
    key = {k: v for k, v in arguments.items() if k != "limit"}
    raw = compact([tool, key]).encode("utf-8", "surrogatepass")  # lone surrogates are refused later
    return hashlib.blake2b(raw, digest_size=6).hexdigest()


def fit(body: dict[str, Any], page: Page) -> dict[str, Any]:
    """`body` from the cursor's offset on, cut to the page's budget, with `truncated` and
    `next_cursor` saying whether and where it goes on."""
    manifest = (body.get("metadata") or {}).get("manifest_id")
    if page.offset and page.manifest_id != (manifest or "")[:16]:
        raise ArgumentError("cursor", "a cursor of the index version that is served now",
                            "the index changed since this cursor was made; "
                            "call again without `cursor`")
    field = next((f for f in PAGED_FIELDS if isinstance(body.get(f), list)), None)
    if field is None:
        out = _shrink(body, page.max_chars)
        if _cut_text(out):  # a file's content: its next page starts after its last line
            out["next_cursor"] = page.cursor(out["line_end"], manifest)
        return out
    items = body[field][page.offset:]
    more = _has_more(body, field, page.offset + len(items))
    body = {**body, field: items}
    if len(compact(body)) > page.max_chars:
        room = page.max_chars - CURSOR_ROOM
        kept = _most_that_fit(body, field, room)
        body = _shrink(_page(body, field, max(kept, 1)), room)
        more = more or len(body[field]) < len(items)
    if more and body[field]:
        body["truncated"] = True
        body["next_cursor"] = page.cursor(page.offset + len(body[field]), manifest)
        body["omitted"] = _left_out(body, field, page.offset + len(body[field]))
        _mark_truncated(body)
    return body


def _cut_text(body: dict) -> bool:
    first, last = body.get("line_start") or 1, body.get("line_end")
    return (isinstance(body.get("content"), str) and body.get("encoding") == "utf-8"
            and bool(body.get("truncated")) and isinstance(last, int) and last >= first)


def _left_out(body: dict, field: str, shown: int) -> str:
    """One line: how many items the cut left for later, and how to get them."""
    total = body.get("total_count", body.get("total_matches"))
    count = f"{total - shown} more {field}" if isinstance(total, int) and total > shown \
        else f"more {field}"
    return f"{count} after these {shown}: pass next_cursor as `cursor`, or raise max_tokens"


def _has_more(body: dict, field: str, shown: int) -> bool:
    """Are there items past the first `shown`? Counted answers say so by their total; a graph
    or file list says so by `truncated` when its limit (not a hard cap) cut it."""
    total = body.get("total_count", body.get("total_matches"))
    if isinstance(total, int) and field in ("results", "files", "matches"):
        return total > shown
    return field == "nodes" and bool(body.get("truncated")) and len(body[field]) > 0


def _most_that_fit(body: dict, field: str, max_chars: int) -> int:
    items = body[field]
    lo, hi = 0, len(items)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(compact(_page(body, field, mid))) <= max_chars:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _page(body: dict, field: str, count: int) -> dict:
    """`body` with the first `count` items of `field`; a graph keeps the edges of those nodes."""
    kept = body[field][:count]
    out = {**body, field: kept}
    if field == "nodes" and isinstance(body.get("edges"), list) and count < len(body[field]):
        ids = {n.get("symbol_id") for n in kept} - {None}
        names = {n.get("qualified_name") for n in kept} | {n.get("name") for n in kept}
        out["edges"] = [e for e in body["edges"]
                        if e.get("src_id") in ids or e.get("dst_id") in ids
                        or (e.get("dst_id") is None and e.get("target") in names)]
    return out


def _shrink(body: dict, max_chars: int) -> dict:
    """`body` cut until it fits: its biggest nested lists lose items from the end, then its
    longest strings (a file's content, a long snippet) are cut."""
    if len(compact(body)) <= max_chars:
        return body
    body = json.loads(compact(body))
    dropped = cut = 0
    cut += _cut_long_texts(body, LONG_TEXT)  # a docstring gives way before a list's items
    while (over := len(compact(body)) - max_chars) > 0:
        items, size = _biggest_list(body)
        if items is not None and size > over and len(items) > 1:
            keep = max(1, min(len(items) - 1, int(len(items) * (1 - over / size)) - 1))
            dropped += len(items) - keep
            del items[keep:]
            continue
        holder, key, text = _longest_string(body)
        if holder is None or len(text) <= len(CUT_MARK) + 16:
            if items is not None and len(items) > 0:
                dropped += len(items)
                items.clear()
                continue
            break
        cut += 1
        keep = max(0, len(text) - over - len(CUT_MARK) - 64)
        if holder is body and key == "content":
            keep = _content_cut(body, text, keep)
        holder[key] = text[:keep] + ("" if holder is body and key == "content" else CUT_MARK)
    body["truncated"] = True
    if not body.get("omitted"):
        parts = [f"{dropped} nested items" if dropped else "", f"{cut} long texts cut" if cut else ""]
        body["omitted"] = (" and ".join(p for p in parts if p) or "part of the answer") + \
            " left out to fit max_tokens: raise max_tokens for all of it"
    _mark_truncated(body)
    return body


def _cut_long_texts(node: Any, limit: int) -> int:
    """Cut every nested string over `limit` characters (a file's content aside); how many."""
    count, stack = 0, [node]
    while stack:
        cur = stack.pop()
        pairs = cur.items() if isinstance(cur, dict) else enumerate(cur)
        for k, v in pairs:
            if isinstance(v, str) and len(v) > limit and k not in ("content", "next_cursor", "omitted"):
                cur[k] = v[:limit - len(CUT_MARK)] + CUT_MARK
                count += 1
            elif isinstance(v, (dict, list)):
                stack.append(v)
    return count


def _biggest_list(node: Any) -> tuple[list | None, int]:
    """The nested list whose JSON is longest, and that length."""
    best: tuple[list | None, int] = (None, 0)
    stack = [node]
    while stack:
        cur = stack.pop()
        for v in (cur.values() if isinstance(cur, dict) else cur):
            if isinstance(v, list) and v:
                size = len(compact(v))
                if size > best[1]:
                    best = (v, size)
            if isinstance(v, (dict, list)):
                stack.append(v)
    return best


def _content_cut(body: dict, text: str, keep: int) -> int:
    """Where to cut a file's content: after a whole line (the answer's line_end says which),
    or at a whole base64 quantum."""
    if body.get("encoding") == "base64":
        return keep - keep % 4
    keep = text.rfind("\n", 0, keep) + 1
    if isinstance(body.get("line_start"), int):
        body["line_end"] = body["line_start"] + text[:keep].count("\n") - 1
    return keep


def _longest_string(node: Any) -> tuple[Any, Any, str]:
    best: tuple[Any, Any, str] = (None, None, "")
    stack = [node]
    while stack:
        cur = stack.pop()
        pairs = cur.items() if isinstance(cur, dict) else enumerate(cur)
        for k, v in pairs:
            if isinstance(v, str) and len(v) > len(best[2]) and k not in ("next_cursor", "omitted"):
                best = (cur, k, v)
            elif isinstance(v, (dict, list)):
                stack.append(v)
    return best


def _mark_truncated(body: dict) -> None:
    if isinstance(body.get("metadata"), dict):
        body["metadata"]["completeness"] = "truncated"
