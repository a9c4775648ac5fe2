"""Definitions read off Pygments' lexers, for the languages this machine's universal-ctags
cannot parse and no SCIP indexer here covers (Swift, Scala): bench/graph_truth.py's source
for them. A name the lexer tags after `func`/`def`, or after a type keyword, that no function
body encloses (local functions are left out, as ctags leaves out locals). They read no
`init`, operator, `extension`, `given` or type alias. (A module of its own, importable without
putting bench/ on sys.path, where its mcp.py would shadow the SDK.)"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

from pygments.lexers import ScalaLexer, SwiftLexer
from pygments.token import Keyword, Name, Punctuation

_SWIFT_TYPES = frozenset({"class", "struct", "enum", "protocol", "actor"})
_SWIFT_BODIES = frozenset({"func", "init", "deinit", "subscript", "var", "let"})
_SCALA_TYPES = frozenset({"class", "object", "trait", "enum"})


def _lexed(repo: Path, suffix: str, lexer) -> Iterator[tuple[str, str, list]]:
    """(path, text, Pygments tokens) of each tracked source file with this suffix."""
    listing = subprocess.run(["git", "ls-files", "-z", "--", f"*{suffix}"], cwd=repo, capture_output=True,
                             check=True).stdout.decode()
    for rel in filter(None, listing.split("\0")):
        path = repo / rel
        if any(part in ("vendor", "node_modules") for part in rel.split("/")) or path.is_symlink():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        yield rel, text, list(lexer.get_tokens_unprocessed(text))


def swift_lexer_defs(repo: Path) -> set[tuple[str, str, int]]:
    """Swift definitions read off Pygments' lexer (see the module doc): (path, name, line).
    A function body is the brace after `func`/`init`/accessor keywords."""
    out = set()
    for rel, text, tokens in _lexed(repo, ".swift", SwiftLexer()):
        scopes: list[str] = []  # what each open brace belongs to: "body" (of a function or accessor) or not
        keyword, pending = "", ""
        for index, token, value in tokens:
            if token in Keyword.Declaration:
                keyword = value
                pending = "body" if value in _SWIFT_BODIES else "type" if value in _SWIFT_TYPES | {"extension"} \
                    else pending
            elif token in Punctuation and value in "{}":
                if value == "{":
                    scopes.append(pending or "block")
                elif scopes:
                    scopes.pop()
                pending = ""
            elif token in Name and "body" not in scopes and (
                    (token in Name.Function and keyword == "func")
                    or (keyword in _SWIFT_TYPES and (token in Name.Class or keyword == "actor"))):
                out.add((rel, value, text.count("\n", 0, index) + 1))
                keyword = ""
    return out


def scala_lexer_defs(repo: Path) -> set[tuple[str, str, int]]:
    """Scala definitions read off Pygments' lexer: `def` names and class/object/trait/enum
    names, leaving out a `def` indented inside another `def` (a local function; Scala 3
    bodies need no braces, so nesting is read from the indentation, as formatters lay it)."""
    out = set()
    for rel, text, tokens in _lexed(repo, ".scala", ScalaLexer()):
        open_defs: list[tuple[int, bool]] = []  # (indent, is a def) of the enclosing definitions
        keyword = ""
        for index, token, value in tokens:
            if token in Keyword and value in _SCALA_TYPES | {"def"}:
                keyword = value
                line_start = text.rfind("\n", 0, index) + 1
                column = len(text[line_start:index]) - len(text[line_start:index].lstrip())  # the line's indent
                while open_defs and open_defs[-1][0] >= column:
                    open_defs.pop()
                local = bool(open_defs) and open_defs[-1][1]
                open_defs.append((column, value == "def"))
            elif token in Keyword:
                continue
            elif keyword and token in (Name.Function if keyword == "def" else Name.Class):
                if not local:
                    out.add((rel, value, text.count("\n", 0, index) + 1))
                keyword = ""
            elif value.strip():
                keyword = ""
    return out


LEXER_DEFS = {"swift": swift_lexer_defs, "scala": scala_lexer_defs}
