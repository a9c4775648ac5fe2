"""Eval cases: one query, the ref it is asked at, and what a good answer contains.

The JSONL form (one object a line) is what users bring and what the miners save:
`{"query", "ref", "gold_files": [...]}` and/or `"gold_symbols": [{"path", "name", "line"}]`,
optionally `"kind"`, `"id"` and `"strip_docs": [{"path", "start_line", "end_line",
"placeholder"}]`: doc text removed from the indexed tree before the query is asked (used by
the descriptions dataset so a docstring cannot find itself).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InvalidParameter


@dataclass(frozen=True, order=True)
class GoldSymbol:
    """A definition a good answer names: its file, its (unqualified) name, its line if known."""

    path: str
    name: str
    line: int | None = None

    @classmethod
    def parse(cls, obj: object) -> "GoldSymbol":
        """From `{"path", "name", "line"?}` or the string `path::name`."""
        if isinstance(obj, str) and "::" in obj:
            path, name = obj.split("::", 1)
            return cls(path, name.rsplit(".", 1)[-1])
        if isinstance(obj, dict) and isinstance(obj.get("path"), str) and isinstance(obj.get("name"), str):
            line = obj.get("line")
            if line is not None and not isinstance(line, int):
                raise InvalidParameter(f"gold symbol line must be an integer, got {line!r}")
            return cls(obj["path"], obj["name"].rsplit(".", 1)[-1], line)
        raise InvalidParameter(f"a gold symbol is {{\"path\", \"name\", \"line\"?}} or \"path::name\", got {obj!r}")

    def to_dict(self) -> dict:
        d: dict = {"path": self.path, "name": self.name}
        if self.line is not None:
            d["line"] = self.line
        return d


@dataclass(frozen=True, order=True)
class DocSpan:
    """Lines [start_line, end_line] of `path` replaced by `placeholder` (indented) and blanks,
    so line numbers of everything else stay valid."""

    path: str
    start_line: int
    end_line: int
    placeholder: str = ""

    def to_dict(self) -> dict:
        return {"path": self.path, "start_line": self.start_line, "end_line": self.end_line,
                "placeholder": self.placeholder}


@dataclass(frozen=True)
class EvalCase:
    query: str
    ref: str
    gold_files: tuple[str, ...]
    gold_symbols: tuple[GoldSymbol, ...] = ()
    kind: str = "user"
    id: str = ""
    strip_docs: tuple[DocSpan, ...] = field(default=())
    # (path, first, last line) of the parent's lines a commit changed: the functions holding
    # them are the case's gold functions, found in the index built at the parent
    gold_lines: tuple[tuple[str, int, int], ...] = field(default=())

    @property
    def case_id(self) -> str:
        if self.id:
            return self.id
        digest = hashlib.blake2b(f"{self.ref}\0{self.query}".encode(), digest_size=6).hexdigest()
        return f"{self.kind}-{digest}"

    def to_dict(self) -> dict:
        d: dict = {"id": self.case_id, "kind": self.kind, "ref": self.ref, "query": self.query,
                   "gold_files": list(self.gold_files)}
        if self.gold_symbols:
            d["gold_symbols"] = [g.to_dict() for g in self.gold_symbols]
        if self.strip_docs:
            d["strip_docs"] = [s.to_dict() for s in self.strip_docs]
        if self.gold_lines:
            d["gold_lines"] = [list(x) for x in self.gold_lines]
        return d


def case_from_dict(obj: dict, default_ref: str | None = None, where: str = "") -> EvalCase:
    """Validate one JSONL object; gold files default to the files of the gold symbols."""
    at = f" ({where})" if where else ""
    if not isinstance(obj, dict):
        raise InvalidParameter(f"an eval case is a JSON object{at}")
    query = obj.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InvalidParameter(f"eval case needs a non-empty \"query\"{at}")
    ref = obj.get("ref", default_ref)
    if not isinstance(ref, str) or not ref:
        raise InvalidParameter(f"eval case needs a \"ref\" (a commit, branch or tag){at}",
                               hint="add \"ref\": \"HEAD\" or pass --ref")
    symbols = tuple(GoldSymbol.parse(s) for s in obj.get("gold_symbols") or [])
    files = obj.get("gold_files") or []
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise InvalidParameter(f"\"gold_files\" must be a list of paths{at}")
    if not files:
        files = list(dict.fromkeys(s.path for s in symbols))
    if not files:
        raise InvalidParameter(f"eval case needs \"gold_files\" or \"gold_symbols\"{at}")
    strip = tuple(DocSpan(s["path"], int(s["start_line"]), int(s["end_line"]), s.get("placeholder", ""))
                  for s in obj.get("strip_docs") or [])
    lines = tuple((str(p), int(a), int(b)) for p, a, b in obj.get("gold_lines") or [])
    return EvalCase(query=query, ref=ref, gold_files=tuple(dict.fromkeys(files)), gold_symbols=symbols,
                    kind=str(obj.get("kind", "user")), id=str(obj.get("id", "")), strip_docs=strip,
                    gold_lines=lines)


def load_jsonl(path: Path, default_ref: str | None = None) -> list[EvalCase]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InvalidParameter(f"cannot read dataset {path}: {exc.strerror}") from None
    cases = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise InvalidParameter(f"{path}:{n} is not JSON: {exc}") from None
        cases.append(case_from_dict(obj, default_ref, f"{path.name}:{n}"))
    if not cases:
        raise InvalidParameter(f"dataset {path} holds no cases")
    return cases


def dump_jsonl(cases: list[EvalCase]) -> str:
    return "".join(json.dumps(c.to_dict(), sort_keys=True) + "\n" for c in cases)
