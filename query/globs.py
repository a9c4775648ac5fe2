"""Path globs (gitignore/ripgrep style) translated to RE2 regular expressions. Pure.

`*` and `?` stay inside one path segment, `**` crosses segments, `[...]` is a class,
`{a,b}` alternatives, and a leading `!` negates the whole glob (`!*_test.go`: every path but
the Go tests; RE2 has no negative look-ahead, so the callers apply it: `negated`). The patterns are meant for RE2 (DuckDB), never for a
backtracking engine. A glob without `/` matches the file name anywhere in the tree
(`*.py`); one with `/` is anchored at the repository root (`src/**/*.ts`).
"""

from __future__ import annotations

from ..errors import InvalidParameter

_RE_SPECIAL = set("\\.+*?()|[]{}^$#&-~")


def escape_re2(text: str) -> str:
    """`text` as an RE2 literal."""
    return "".join("\\" + c if c in _RE_SPECIAL else c for c in text)


def _class_end(glob: str, i: int) -> int:
    """Index of the `]` closing the class opened at i, or -1 (no class: `[` is literal)."""
    start = i + 2 if glob[i + 1:i + 2] in ("!", "^") else i + 1
    j = glob.find("]", start)
    return j if j > start else -1


def _translate(glob: str) -> str:
    out: list[str] = []
    i, n = 0, len(glob)
    depth = 0
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                j = i + 2
                if j < n and glob[j] == "/":
                    out.append("(?:.*/)?")
                    i = j + 1
                else:
                    out.append(".*")
                    i = j
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = _class_end(glob, i)
            if j < 0:
                out.append("\\[")
            else:
                body = glob[i + 1:j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:] + "/"  # a negated class never crosses a directory
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(escape_re2(glob[i]))
        else:
            out.append(escape_re2(c))
        i += 1
    if depth:
        raise InvalidParameter(f"unbalanced braces in glob {glob!r}")
    return "".join(out)


def _normalize(glob: str) -> tuple[str, bool]:
    """(the glob as both matchers read it, whether it is anchored at the repository root)."""
    g = glob.strip()
    if not g:
        raise InvalidParameter("empty path glob")
    if g.endswith("/"):
        g += "**"
    anchored = "/" in g.rstrip("/")
    return _collapse(g.lstrip("/")), anchored


def negated(glob: str) -> tuple[str, bool]:
    """(the glob without a leading `!`, whether it had one: it then selects every path the
    rest does not)."""
    g = glob.strip()
    if g.startswith("!"):
        if not g[1:].strip():
            raise InvalidParameter(f"path glob {glob!r} negates nothing",
                                   hint="write `!PATTERN`, e.g. --path '!*_test.go'")
        return g[1:], True
    return g, False


def glob_to_regex(glob: str) -> str:
    """An RE2 pattern matching whole repository-relative paths that `glob` selects (`glob`
    without its `!`: see `negated`)."""
    g, anchored = _normalize(glob)
    body = _translate(g)
    prefix = "" if anchored or g.startswith("**") else "(?:.*/)?"
    return f"^{prefix}{body}(?:/.*)?$"


def _collapse(glob: str) -> str:
    while "**/**" in glob:
        glob = glob.replace("**/**", "**")
    return glob.replace("***", "**")


# ---- a linear-time matcher for Python-side filtering (no backtracking regex engine) -------
_MAX_ALTERNATIVES = 64


def _expand_braces(glob: str) -> list[str]:
    start = glob.find("{")
    if start < 0:
        return [glob]
    depth, end = 0, -1
    for i in range(start, len(glob)):
        depth += {"{": 1, "}": -1}.get(glob[i], 0)
        if depth == 0:
            end = i
            break
    if end < 0:
        raise InvalidParameter(f"unbalanced braces in glob {glob!r}")
    parts, depth, last = [], 0, start + 1
    for i in range(start + 1, end):
        depth += {"{": 1, "}": -1}.get(glob[i], 0)
        if glob[i] == "," and depth == 0:
            parts.append(glob[last:i])
            last = i + 1
    parts.append(glob[last:end])
    out = [a for p in parts for a in _expand_braces(glob[:start] + p + glob[end + 1:])]
    if len(out) > _MAX_ALTERNATIVES:
        raise InvalidParameter(f"glob {glob!r} expands to more than {_MAX_ALTERNATIVES} alternatives")
    return out


def _tokens(glob: str) -> list[tuple]:
    """("lit", c) | ("one",) | ("class", chars, negated) | ("star",) | ("any",) | ("dirs",)."""
    toks: list[tuple] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if glob.startswith("**/", i):
            toks.append(("dirs",))
            i += 3
        elif glob.startswith("**", i):
            toks.append(("any",))
            i += 2
        elif c == "*":
            toks.append(("star",))
            i += 1
        elif c == "?":
            toks.append(("one",))
            i += 1
        elif c == "[" and (j := _class_end(glob, i)) > 0:
            body, neg = glob[i + 1:j], glob[i + 1:i + 2] in ("!", "^")
            body = body[1:] if neg else body
            chars = set()
            k = 0
            while k < len(body):
                if k + 2 < len(body) and body[k + 1] == "-":
                    chars.update(chr(x) for x in range(ord(body[k]), ord(body[k + 2]) + 1))
                    k += 3
                else:
                    chars.add(body[k])
                    k += 1
            toks.append(("class", frozenset(chars), neg))
            i = j + 1
        else:
            if c == "\\" and i + 1 < n:
                i += 1
            toks.append(("lit", glob[i]))
            i += 1
    return toks


def _closure(toks: list[tuple], states: set[int]) -> set[int]:
    out, stack = set(states), list(states)
    while stack:
        s = stack.pop()
        if 0 <= s < len(toks) and toks[s][0] in ("star", "any", "dirs") and s + 1 not in out:
            out.add(s + 1)
            stack.append(s + 1)
    return out


_INSIDE = 1 << 20  # state id offset: "inside the directories matched by the `**/` at s"


def _step(toks: list[tuple], states: set[int], ch: str) -> set[int]:
    nxt: set[int] = set()
    for s in states:
        if s == -1 or s == len(toks):
            if s == -1 or ch == "/":
                nxt.add(-1)  # below a matched path: everything in it matches
            continue
        if s >= _INSIDE or toks[s][0] == "dirs":
            base = s - _INSIDE if s >= _INSIDE else s
            nxt.add(base + _INSIDE)
            if ch == "/":
                nxt.add(base + 1)
            continue
        t = toks[s]
        kind = t[0]
        if kind == "lit" and ch == t[1] or kind == "one" and ch != "/":
            nxt.add(s + 1)
        elif kind == "class" and (ch in t[1]) != t[2] and not (t[2] and ch == "/"):
            nxt.add(s + 1)
        elif kind == "star" and ch != "/" or kind == "any":
            nxt.add(s)
    return _closure(toks, nxt)


def glob_matcher(glob: str | None):
    """A predicate on repository-relative paths with the semantics of `glob_to_regex`, by
    NFA simulation: O(len(path) x len(glob)) whatever the glob, safe for user input. No
    glob (None or "") takes every path."""
    if not glob:
        return lambda path: True
    glob, negate = negated(glob)
    g, anchored = _normalize(glob)
    programs = []
    for alt in _expand_braces(g):
        toks = _tokens(alt)
        if not anchored and not alt.startswith("**"):
            toks.insert(0, ("dirs",))
        programs.append(toks)

    def match(path: str) -> bool:
        for toks in programs:
            states = _closure(toks, {0})
            for ch in path:
                states = _step(toks, states, ch)
                if not states:
                    break
            if len(toks) in states or -1 in states:
                return True
        return False

    return (lambda path: not match(path)) if negate else match
