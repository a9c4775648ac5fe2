"""The text block of a tool answer: a compact human-readable rendering of the structured
content (a few lines per hit, the handles kept), not a second copy of its JSON.

`format: "json"` asks for the compact JSON instead (what clients that parse the text read),
and for every field, defaults included; "human" (the default) and "toon" give this rendering. Every line a model may act on keeps the
handle to pass on (symbol_id, path:line), and the last lines say what was left out and how to
get the rest (`next_cursor`).
"""

from __future__ import annotations

import json
from typing import Any

FORMATS = ("human", "json", "toon")
SNIPPET_LINES = 2  # lines of a hit's snippet shown under it
SKIP = frozenset({"metadata", "truncated", "next_cursor", "omitted", "suggested_next_actions",
                  "edges", "query_intent", "mode", "latency_ms", "duration_ms"})


def compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def render(body: dict[str, Any], fmt: str = "human") -> str:
    """The text block for `body` in `fmt`."""
    if fmt == "json":
        return compact(body)
    lines = [_header(body)]
    if isinstance(body.get("content"), str):
        lines += _file_content(body)
    else:
        lines += _fields(body)
    lines += _footer(body)
    return "\n".join(line for line in lines if line is not None)


def _header(body: dict) -> str:
    meta = body.get("metadata") or {}
    parts = [f"ref {meta['ref']}" if meta.get("ref") else None,
             f"manifest {meta['manifest_id'][:12]}" if meta.get("manifest_id") else None,
             meta.get("freshness") if meta.get("freshness") not in (None, "fresh") else None,
             meta.get("completeness") if meta.get("completeness") not in (None, "complete") else None,
             "graph indexing" if meta.get("graph") == "indexing" else None,
             "ignored: " + ", ".join(meta["ignored_arguments"]) if meta.get("ignored_arguments") else None]
    return "[" + "; ".join(p for p in parts if p) + "]" if any(parts) else "[no index]"


def _footer(body: dict) -> list[str]:
    out = []
    if body.get("omitted"):
        out.append(f"… {body['omitted']}")
    if body.get("next_cursor"):
        out.append(f"next_cursor: {body['next_cursor']}")
    for action in body.get("suggested_next_actions") or []:
        out.append(f"next: {action.get('tool')} {compact(action.get('arguments', {}))}")
    return out


def _fields(body: dict) -> list[str]:
    out: list[str] = []
    edges = body.get("edges") if isinstance(body.get("edges"), list) else []
    for key, value in body.items():
        if key in SKIP or value is None or value == [] or value == {}:
            continue
        if isinstance(value, list) and value and isinstance(value[0], dict):
            out.append(f"{key} ({len(value)}):")
            out += _items(key, value, edges)
        elif isinstance(value, dict) and key in ("tree",):
            out += _tree(value)
        elif isinstance(value, dict) and ("qualified_name" in value or "path" in value):
            out.append(f"{key}: {_item_line(value)}")
            out += _detail(value)
        elif isinstance(value, (dict, list)):
            out.append(f"{key}: {_short(compact(value), 300)}")
        else:
            out.append(f"{key}: {_short(str(value), 300)}")
    return out


def _items(key: str, items: list[dict], edges: list[dict]) -> list[str]:
    out = []
    via = _edge_index(edges)
    depth_of = _depths(items) if key == "symbols" else {}
    for i, item in enumerate(items, 1):
        if key == "matches":
            out.append(f"{item.get('path')}:{item.get('line_number')}: {_short(item.get('line_content', ''), 200)}")
            continue
        if key == "hops":
            out.append(f"hop {item.get('hop')} ({item.get('description')}): "
                       f"{len(item.get('nodes') or [])} nodes")
            out += ["  " + _item_line(n) for n in item.get("nodes") or []]
            continue
        if not any(item.get(k) for k in ("path", "qualified_name", "name")):
            out.append(_short(compact(item), 200))
            continue
        indent = "  " * depth_of.get(item.get("symbol_id"), 0)
        prefix = f"{i}. " if key in ("results", "seeds", "files") and "score" in item else ""
        out.append(indent + prefix + _item_line(item) + via.get(item.get("symbol_id") or "", ""))
        out += [indent + line for line in _detail(item)]
    return out


def _item_line(item: dict) -> str:
    """`path:line-line kind qualified_name [symbol_id]` with the counts an item carries."""
    if item.get("type") in ("file", "directory", "symlink") and "line_start" not in item:
        size = f" ({item['size']} B)" if item.get("size") is not None else ""
        return item.get("path", item.get("name", "")) + ("/" if item["type"] == "directory" else size)
    where = item.get("path", "")
    if item.get("line_start"):
        end = item.get("line_end")
        where += f":{item['line_start']}" + (f"-{end}" if end and end != item["line_start"] else "")
    name = item.get("qualified_name") or item.get("name") or ""
    parts = [where, item.get("kind") or item.get("result_type") or "", name]
    handle = item.get("symbol_id")
    if handle:
        parts.append(f"[{handle}]")
    if isinstance(item.get("score"), (int, float)):
        parts.append(f"score {item['score']:.2f}")
    if item.get("more_in_file"):
        parts.append(f"(+{item['more_in_file']} more in file)")
    if item.get("collapsed"):
        counts = ", ".join(f"{n} {k}" for k, n in sorted(item["collapsed"].items()))
        parts.append(f"(members collapsed: {counts})")
    if item.get("hits") and item.get("spans") is not None:
        parts.append(f"({item['hits']} hits)")
    return " ".join(p for p in parts if p)


def _detail(item: dict) -> list[str]:
    """The signature and the first lines of the snippet or doc under an item."""
    out = []
    if item.get("signature"):
        out.append("    " + _short(item["signature"], 160))
    if item.get("doc"):
        out.append("    " + _short(item["doc"].strip().split("\n", 1)[0], 160))
    text = item.get("snippet") or ""
    if text:
        lines = [ln for ln in text.splitlines() if ln.strip()][:SNIPPET_LINES]
        out += ["    | " + _short(ln.strip(), 160) for ln in lines]
    for span in item.get("spans") or []:
        if isinstance(span, dict) and "qualified_name" in span:
            out.append("    - " + _item_line(span))
    return out


def _edge_index(edges: list[dict]) -> dict[str, str]:
    """symbol_id -> `  via kind (confidence) at path:line` for graph nodes."""
    out: dict[str, str] = {}
    for e in edges:
        note = f"  via {e.get('kind')} ({e.get('confidence')}) at {e.get('path')}:{e.get('line')}"
        for key in (e.get("src_id"), e.get("dst_id")):
            if key and key not in out:
                out[key] = note
    return out


def _depths(symbols: list[dict]) -> dict[str, int]:
    depth: dict[str, int] = {}
    for s in symbols:
        parent = s.get("parent_id")
        depth[s.get("symbol_id")] = depth[parent] + 1 if parent in depth else 0
    return depth


def _tree(node: dict, level: int = 0) -> list[str]:
    out = ["  " * level + node.get("name", "") + ("/" if node.get("type") == "directory" else "")
           + (" …" if node.get("truncated") else "")]
    for child in node.get("children") or []:
        out += _tree(child, level + 1)
    return out


def _file_content(body: dict) -> list[str]:
    if body.get("encoding") == "base64":
        return [f"{body.get('path')} ({body.get('size')} B, {body.get('mime_type')}, base64):",
                body["content"]]
    first, last = body.get("line_start"), body.get("line_end")
    head = f"{body.get('path')} lines {first}-{last} of {body.get('total_lines')}"
    return [head, body["content"].rstrip("\n")]


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split()) if "\n" in text else text
    return text if len(text) <= limit else text[:limit - 1] + "…"
