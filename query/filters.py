"""File filters shared by every retriever: language, path glob, extensions.

Globs become RE2 patterns evaluated by DuckDB; the Python side only ever sees the resulting
set of paths.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidParameter
from ..format import SKIP_INVALID_UTF8, SKIP_MINIFIED, SKIP_PARSER_TIMEOUT, SKIP_TOO_LARGE
from ..model import SkippedFile
from ..roles import ROLES
from .globs import glob_to_regex, negated
from .index import IndexView

KIND_ALIASES = {
    "fn": ("function", "method"), "func": ("function", "method"), "def": ("function", "method"),
    "function": ("function",), "method": ("method",), "class": ("class",),
    "struct": ("struct", "class"), "interface": ("interface", "trait", "protocol"),
    "trait": ("trait", "interface"), "enum": ("enum",), "var": ("variable", "constant", "field"),
    "variable": ("variable",), "const": ("constant",), "constant": ("constant",),
    "type": ("type", "type_alias", "typedef", "struct", "class", "interface", "enum"),
    "module": ("module", "package", "namespace"),
}


# Short names users type for a language (what `--lang` and the MCP `language` argument accept
# besides the index's own names).
LANGUAGE_ALIASES = {
    "ts": "typescript", "js": "javascript", "py": "python", "rs": "rust", "golang": "go",
    "c++": "cpp", "cxx": "cpp", "cs": "csharp", "c#": "csharp", "rb": "ruby", "kt": "kotlin",
    "sh": "bash", "shell": "bash", "yml": "yaml", "md": "markdown", "txt": "text",
}
_index_values: dict[str, tuple[frozenset[str], frozenset[str]]] = {}


def _values(view: IndexView) -> tuple[frozenset[str], frozenset[str]]:
    """(languages of indexed files, symbol kinds) of the view's index, read once per manifest."""
    found = _index_values.get(view.manifest_id)
    if found is None:
        langs = frozenset(r[0].lower() for r in view.sql(
            "SELECT DISTINCT language FROM files WHERE status = 'indexed'") if r[0])
        kinds = frozenset(r[0].lower() for r in view.sql("SELECT DISTINCT kind FROM symbols") if r[0])
        if len(_index_values) > 16:
            _index_values.clear()
        found = _index_values[view.manifest_id] = (langs, kinds)
    return found


def checked_language(view: IndexView, language: str | None) -> str | None:
    """The index's name for a language filter (`ts` -> typescript); an error listing the
    languages of this index when it names none of them."""
    if not language:
        return None
    lang = language.strip().lower()
    lang = LANGUAGE_ALIASES.get(lang, lang)
    known = _values(view)[0]
    if lang not in known:
        raise InvalidParameter(f"no indexed files of language {language!r}",
                               hint=f"languages in this index: {', '.join(sorted(known)) or 'none'}")
    return lang


def checked_kind(view: IndexView, kind: str | None) -> str | None:
    """A kind filter that names an alias (`fn`) or a kind this index holds; else an error
    listing them."""
    if not kind:
        return None
    k = kind.strip().lower()
    known = _values(view)[1]
    if k not in KIND_ALIASES and k not in known:
        raise InvalidParameter(f"unknown symbol kind {kind!r}",
                               hint=f"kinds: {', '.join(sorted(known | KIND_ALIASES.keys()))}")
    return k


def kinds_for(kind: str | None) -> tuple[str, ...] | None:
    """The stored kinds a user's kind filter means (`fn` -> function, method)."""
    if not kind:
        return None
    k = kind.strip().lower()
    return KIND_ALIASES.get(k, (k,))


@dataclass(frozen=True)
class FileFilter:
    language: str | None = None
    glob: str | None = None
    extensions: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()  # codeagent.roles names

    @property
    def active(self) -> bool:
        return bool(self.language or self.glob or self.extensions or self.roles)

    def where(self, column: str = "path", status: str = "indexed") -> tuple[str, list]:
        """A SQL condition on `column` (a path of a file with `status`) and its parameters;
        "TRUE" when inactive."""
        if not self.active:
            return "TRUE", []
        conds, params = ["status = ?"], [status]
        if self.language:
            conds.append("lower(language) = ?")
            params.append(self.language.lower())
        if self.glob:
            glob, negate = negated(self.glob)
            conds.append(("NOT " if negate else "") + "regexp_full_match(path, ?)")
            params.append(glob_to_regex(glob))
        if self.extensions:
            conds.append("lower(regexp_extract(path, '\\.([^./]+)$', 1)) IN (SELECT unnest(?))")
            params.append(list(self.extensions))
        if self.roles:
            conds.append("role IN (SELECT unnest(?::VARCHAR[]))")
            params.append(list(self.roles))
        return f"{column} IN (SELECT path FROM files WHERE {' AND '.join(conds)})", params


def make_filter(language: str | None = None, glob: str | None = None,
                extension: str | None = None, roles: tuple[str, ...] = ()) -> FileFilter:
    exts = tuple(e.strip().lstrip(".").lower() for e in (extension or "").split(",") if e.strip())
    return FileFilter(language or None, glob or None, exts, tuple(roles))


def check_roles(roles: tuple[str, ...]) -> tuple[str, ...]:
    """The roles, or InvalidParameter naming the unknown one and the valid ones."""
    for role in roles:
        if role not in ROLES:
            raise InvalidParameter(f"unknown role {role!r}; choose from {', '.join(ROLES)}")
    return roles


def allowed_paths(view: IndexView, filt: FileFilter) -> set[str] | None:
    """The indexed paths passing `filt` (None when it filters nothing); memoised per view."""
    if not filt.active:
        return None
    key = ("allowed_paths", filt)
    memo = view.cache.setdefault("allowed_paths", {})
    if key not in memo:
        where, params = filt.where("path")
        memo[key] = {r[0] for r in view.sql(f"SELECT path FROM files WHERE {where}", params)}
        if len(memo) > 64:
            memo.pop(next(iter(memo)))
    return memo[key]


# Files the index keeps no text of although they are text: a search of the index did not look
# into them (a binary or a secret file is neither searched nor ever named).
UNINDEXED_TEXT = (SKIP_TOO_LARGE, SKIP_INVALID_UTF8, SKIP_MINIFIED, SKIP_PARSER_TIMEOUT)
NAMED_SKIPPED = 5  # an answer names this many of them; it counts them all


def unindexed_text(view: IndexView, filt: FileFilter | None = None) -> list[tuple[str, str]]:
    """(path, reason) of the files passing `filt` whose text the index skipped
    (UNINDEXED_TEXT), by path; memoised per view."""
    filt = filt or FileFilter()
    memo = view.cache.setdefault("unindexed_text", {})
    if filt not in memo:
        where, params = filt.where("path", status="skipped")
        memo[filt] = [tuple(r) for r in view.sql(
            f"SELECT path, reason FROM files WHERE reason IN (SELECT unnest(?)) AND {where} ORDER BY path",
            [list(UNINDEXED_TEXT), *params])]
        if len(memo) > 64:
            memo.pop(next(iter(memo)))
    return memo[filt]


def skipped_files(view: IndexView, filt: FileFilter | None = None) -> dict:
    """What an index answer says it did not search: `skipped` (the first NAMED_SKIPPED files
    the filters take that the index holds no text of) and `skipped_count`; {} when none."""
    files = unindexed_text(view, filt)
    if not files:
        return {}
    return {"skipped": [SkippedFile(p, r) for p, r in files[:NAMED_SKIPPED]], "skipped_count": len(files)}
