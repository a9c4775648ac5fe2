"""What a repository asks its index to leave out: `.codeagentignore` (gitignore syntax) and an
`[tool.codeagent]` table in `pyproject.toml` or a `.codeagent.toml` (include, exclude,
max_file_size). A committed tree is read with the rules it commits; the work tree with its
own files."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from .errors import InvalidParameter

if TYPE_CHECKING:
    import pathspec

IGNORE_FILE = ".codeagentignore"
CONFIG_FILE = ".codeagent.toml"
PYPROJECT = "pyproject.toml"
RULE_FILES = (IGNORE_FILE, CONFIG_FILE, PYPROJECT)
_KEYS = {"include", "exclude", "max_file_size"}
# A pyproject.toml that TOML cannot read is only ours to reject when it may hold our table.
_MAY_HOLD_OURS = re.compile(rb"codeagent")
_TOML_WHERE = re.compile(r"\s*\(at line (\d+), column (\d+)\)$|\s*\(at end of document\)$")


@dataclass(frozen=True)
class IndexRules:
    ignore: pathspec.PathSpec | None = None  # .codeagentignore lines, then `exclude`
    include: pathspec.PathSpec | None = None  # when set, only these paths are indexed
    max_file_size: int | None = None
    sources: tuple[str, ...] = ()  # the files the rules came from

    def excluded(self, path: str) -> bool:
        """Leave `path` out of the index (as .gitignore does: not listed, not read)?"""
        if self.ignore is not None and self.ignore.match_file(path):
            return True
        return self.include is not None and not self.include.match_file(path)


NO_RULES = IndexRules()


def load_rules(read: Callable[[str], bytes | None]) -> IndexRules:
    """The rules of a tree whose root files `read(name)` returns (None: absent). A malformed
    file is an InvalidParameter naming it: nothing is indexed under rules it cannot read."""
    lines: list[str] = []
    sources: list[str] = []
    ignore = read(IGNORE_FILE)
    if ignore is not None:
        numbered = enumerate(ignore.decode("utf-8", "replace").splitlines(), 1)
        lines += [(f"{IGNORE_FILE}:{n}", line) for n, line in numbered]
        sources.append(IGNORE_FILE)
    table, where = _config_table(read)
    if where:
        sources.append(where)
    lines += [(f"{where} exclude", p) for p in _patterns(table, "exclude", where)]
    include = [(f"{where} include", p) for p in _patterns(table, "include", where)]
    size = table.get("max_file_size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise InvalidParameter(f"{where}: max_file_size must be a positive number of bytes, not {size!r}")
    return IndexRules(_spec(lines), _spec(include), size, tuple(sources))


def _spec(lines: list[tuple[str, str]]) -> pathspec.PathSpec | None:
    """The gitignore spec of (where, pattern) lines; a pattern gitignore cannot read (`!`
    alone) is an InvalidParameter naming the file and line it came from."""
    if not lines:
        return None
    import pathspec  # ~20-60 ms: most repositories have no rules, and a one-file edit's build reads them

    for where, line in lines:
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except (ValueError, TypeError) as exc:  # GitIgnorePatternError is a ValueError
            raise InvalidParameter(f"{where}: invalid pattern {line!r} ({exc})") from None
    return pathspec.GitIgnoreSpec.from_lines([line for _, line in lines])


def _toml_error(name: str, data: bytes, exc: Exception) -> InvalidParameter:
    """`name:LINE: not valid TOML: why` (tomllib puts the place at the end of its message)."""
    message = str(exc)
    found = _TOML_WHERE.search(message)
    line = ""
    if found:
        line = found.group(1) or str(max(data.count(b"\n"), 1))
        message = message[:found.start()] + (f" (column {found.group(2)})" if found.group(2) else "")
    return InvalidParameter(f"{name}:{line}: not valid TOML: {message}" if line
                            else f"{name}: not valid TOML: {message}")


def _config_table(read: Callable[[str], bytes | None]) -> tuple[dict, str]:
    for name, path in ((CONFIG_FILE, ()), (PYPROJECT, ("tool", "codeagent"))):
        data = read(name)
        if data is None:
            continue
        try:
            table = tomllib.loads(data.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            if name == PYPROJECT and not _MAY_HOLD_OURS.search(data):
                continue  # another tool's broken file, with no [tool.codeagent] to misread
            # never index under rules we cannot read (an exclude would silently vanish)
            raise _toml_error(name, data, exc) from None
        for key in path:
            table = table.get(key) if isinstance(table, dict) else None
        if not isinstance(table, dict):
            continue
        where = name if not path else f"{name} [tool.codeagent]"
        unknown = sorted(set(table) - _KEYS)
        if unknown:
            raise InvalidParameter(f"{where}: unknown key {unknown[0]!r}",
                                   hint=f"known keys: {', '.join(sorted(_KEYS))}")
        return table, where
    return {}, ""


def _patterns(table: dict, key: str, where: str) -> list[str]:
    value = table.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidParameter(f"{where}: {key} must be a list of gitignore-style patterns")
    return value
