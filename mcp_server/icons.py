"""Tool icons (MCP 2025-11-25): one small SVG per tool group, as data: URIs so a client shows
them offline. Kept tiny: every icon is part of tools/list."""

from __future__ import annotations

from urllib.parse import quote

from mcp_types import Icon

_SVG = "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16' fill='none' stroke='gray'>{}</svg>"


def _icon(body: str) -> list[Icon]:
    """A percent-encoded SVG data: URI (a third shorter than base64); the URI names the type."""
    return [Icon(src="data:image/svg+xml," + quote(_SVG.format(body.replace('"', "'")),
                                                     safe="/:='."))]


FILES = _icon('<path d="M3 1h7l3 3v11H3z"/>')
SEARCH = _icon('<circle cx="6.5" cy="6.5" r="4.5"/><path d="M10 10l5 5"/>')
SYMBOLS = _icon('<path d="M5 2L1 8l4 6M11 2l4 6-4 6"/>')
GRAPH = _icon('<circle cx="3" cy="8" r="2"/><circle cx="13" cy="3" r="2"/>'
              '<circle cx="13" cy="13" r="2"/><path d="M5 7l6-3M5 9l6 3"/>')
INDEX = _icon('<ellipse cx="8" cy="3" rx="6" ry="2"/><path d="M2 3v10c0 2.7 12 2.7 12 0V3"/>')
SERVER = SEARCH
