"""Path globs (gitignore/ripgrep style) translated to RE2 regular expressions. Pure.

`*` and `?` stay inside one path segment, `**` crosses segments, `[...]` is a class,
`{a,b}` alternatives. The patterns are meant for RE2 (DuckDB), never for a
backtracking engine. A glob without `/` matches the file name anywhere in the tree
(`*.py`); one with `/` is anchored at the repository root (`src/**/*.ts`).
"""

from __future__ import annotations

from ..errors import InvalidParameter

_RE_SPECIAL = set("\\.+*?()|[]{}^$#&-~")


def escape_re2(text: str) -> str:
    """`text` as an RE2 literal."""
    return "".join("\\" + c if c in _RE_SPECIAL else c for c in text)


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
            j = glob.find("]", i + 2 if glob[i + 1:i + 2] in ("!", "^") else i + 1)
            if j < 0:
                out.append("\\[")
            else:
                body = glob[i + 1:j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
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


def glob_to_regex(glob: str) -> str:
    """An RE2 pattern matching whole repository-relative paths that `glob` selects."""
    g = glob.strip()
    if not g:
        raise InvalidParameter("empty path glob")
    if g.endswith("/"):
        g += "**"
    anchored = "/" in g.rstrip("/")
    g = _collapse(g.lstrip("/"))
    body = _translate(g)
    prefix = "" if anchored or g.startswith("**") else "(?:.*/)?"
    return f"^{prefix}{body}(?:/.*)?$"


def _collapse(glob: str) -> str:
    while "**/**" in glob:
        glob = glob.replace("**/**", "**")
    return glob.replace("***", "**")
