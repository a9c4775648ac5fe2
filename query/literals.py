"""The longest literal every match of an RE2 pattern must contain, for a cheap prefilter.

`contains(text, literal)` scans memory an order of magnitude faster than a regex, so grep
tests it first. Conservative: a pattern with alternation, flags or anything this scanner
does not understand yields None (no prefilter), never a wrong literal. Pure.
"""

from __future__ import annotations

MIN_LITERAL = 3
_ESCAPED_LITERAL = set("\\.+*?()|[]{}^$#&-~/ '\"!%,:;<=>@`")
_QUANTIFIERS = set("*?{")
_CODE_ESCAPES = set("xpPuU0123456789")


def required_literal(pattern: str) -> str | None:
    """The longest substring of every match of `pattern` (case-sensitive), or None."""
    found = required_literals(pattern)
    return max(found, key=len) if found else None


def required_literals(pattern: str) -> list[str]:
    """Substrings (of at least MIN_LITERAL characters) that every match of `pattern` holds."""
    if "|" in pattern or "(?" in pattern or "\\Q" in pattern:
        return []
    runs: list[str] = []
    run: list[str] = []
    i, n = 0, len(pattern)

    def close() -> None:
        if run:
            runs.append("".join(run))
            run.clear()

    while i < n:
        c = pattern[i]
        nxt = pattern[i + 1] if i + 1 < n else ""
        if c == "\\":
            if nxt in _CODE_ESCAPES:
                return []  # \x41, \pL, \123: a character this scanner does not decode
            if nxt and nxt in _ESCAPED_LITERAL:
                literal, width = nxt, 2
            else:
                close()  # \w, \d, \b, \n... are not literal characters here
                i += 2
                continue
        elif c in "([":
            break  # groups and classes may be optional or varied: stop at the first one
        elif c in ".^$+)":
            close()
            i += 1
            continue
        elif c in _QUANTIFIERS:
            if run:
                run.pop()  # the quantified character is optional
            close()
            if c == "{":
                end = pattern.find("}", i)
                i = end + 1 if end > 0 else n
            else:
                i += 1
            continue
        else:
            literal, width = c, 1
        after = pattern[i + width] if i + width < n else ""
        if after in _QUANTIFIERS:
            close()
            i += width
            continue
        run.append(literal)
        i += width
    close()
    return [r for r in dict.fromkeys(runs) if len(r) >= MIN_LITERAL]
