"""Seed 000's facts about one symbol (get_symbol): is_* flags, its parameters and return type,
read off what the index stores (visibility, modifiers, doc, the declaration's text)."""

from __future__ import annotations

import re
from typing import Any

DEPRECATED = re.compile(r"@deprecated|\[Obsolete|#\[deprecated|@Deprecated|^\s*deprecated\b", re.I | re.M)
CALLABLE_KINDS = frozenset({"function", "method", "constructor", "closure", "macro"})
SELF_NAMES = frozenset({"self", "cls", "&self", "&mut self", "mut self", "this"})
ARROW_RETURN = re.compile(r"\)\s*(?:->|:)\s*(?P<type>[^{=;]+?)\s*(?:[{=;:]|where\b|$)", re.S)
GO_RETURN = re.compile(r"\)\s*(?P<type>[^{]+?)\s*\{?\s*$", re.S)


def symbol_facts(sym: Any, header: str) -> dict[str, Any]:
    """The flags and parameter facts of `sym` (a Symbol), `header` its declaration's text
    (the signature, or the source's first lines when the stored signature is cut)."""
    mods = {m.lower() for m in sym.modifiers}
    text = f"{header}\n{' '.join(sym.modifiers)}"
    facts: dict[str, Any] = {
        "is_public_api": sym.visibility in ("public", "exported") or (
            sym.visibility == "" and not sym.name.startswith("_")),
        "is_static": "static" in mods or "classmethod" in mods or "staticmethod" in mods,
        "is_abstract": "abstract" in mods or "abstractmethod" in mods,
        "is_async": "async" in mods or bool(re.match(r"\s*(?:\w+\s+)*async\b", header)),
        "is_override": "override" in mods or "@override" in text.lower(),
        "is_deprecated": bool(DEPRECATED.search(text) or DEPRECATED.search(sym.doc or "")),
        "has_doc_comment": bool((sym.doc or "").strip()),
        "parameter_signature": None, "parameter_count": None, "return_type": None,
    }
    if sym.kind in CALLABLE_KINDS:
        params = _parameters(header, sym.name)
        if params is not None:
            names = [p for p in _split(params) if p.strip()]
            facts["parameter_signature"] = "(" + " ".join(params.split()) + ")"
            facts["parameter_count"] = len([p for p in names if p.strip().split(":")[0].strip()
                                            not in SELF_NAMES])
            facts["return_type"] = _return_type(header, sym.name, sym.language)
    return facts


def _parameters(header: str, name: str) -> str | None:
    span = _parameter_span(header, name)
    return header[span[0] + 1:span[1]] if span else None


def _parameter_span(header: str, name: str) -> tuple[int, int] | None:
    """Where the parentheses after the symbol's name open and close (the first pair if the
    name is not found), or None."""
    at = header.find(name + "(")
    start = header.find("(", at if at >= 0 else 0)
    if start < 0:
        return None
    depth = 0
    for i in range(start, len(header)):
        if header[i] in "([{<":
            depth += 1
        elif header[i] in ")]}>" and not (header[i] == ">" and header[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return start, i
    return None


def _split(params: str) -> list[str]:
    """Top-level comma-separated parts of a parameter list."""
    out, depth, cur = [], 0, []
    for ch in params:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def _return_type(header: str, name: str, language: str) -> str | None:
    span = _parameter_span(header, name)
    if span is None:
        return None
    rest = header[span[1]:]
    if language == "go":
        m = GO_RETURN.match(rest)
        return m.group("type").strip() or None if m else None
    m = ARROW_RETURN.match(rest)
    if m:
        return m.group("type").strip() or None
    before = header[:header.find(name)].split()  # Java, C#, C, C++: the type before the name
    words = [w for w in before if w.lower() not in {"public", "private", "protected", "internal",
                                                    "static", "final", "abstract", "virtual",
                                                    "override", "async", "sealed", "extern",
                                                    "inline", "def", "fn", "func", "function"}]
    return words[-1] if language in ("java", "csharp", "c", "cpp", "kotlin") and words else None
