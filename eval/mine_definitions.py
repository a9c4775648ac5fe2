"""Definition lookup cases: identifier -> where it is defined, ground truth from universal-ctags.

ctags is a different tool from our tree-sitter extractor, so the gold is independent of the
index being scored. Names defined in more than a few places, short names, dunders and test
files are left out; every definition of a kept name is gold.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ..errors import NotFound
from .cases import EvalCase, GoldSymbol
from ..roles import is_code_path
from .mine_commits import is_test_path

DEFINITION_KINDS = frozenset({
    "class", "function", "method", "func", "struct", "interface", "enum", "trait", "type",
    "typedef", "talias", "macro", "subroutine", "singletonMethod", "module", "union",
})
MEMBER_IS_METHOD = frozenset({"Python"})  # elsewhere ctags' "member" is a field


@dataclass(frozen=True)
class Tag:
    name: str
    path: str
    line: int
    kind: str
    language: str = ""
    end: int | None = None
    scope: str = ""

    @property
    def is_definition(self) -> bool:
        if self.kind == "member":
            return self.language in MEMBER_IS_METHOD
        return self.kind in DEFINITION_KINDS


def parse_ctags(output: str) -> list[Tag]:
    """Tags from `ctags --output-format=json --fields=+nel` output."""
    tags = []
    for line in output.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if obj.get("_type") != "tag" or "line" not in obj:
            continue
        tags.append(Tag(obj["name"], obj["path"], int(obj["line"]), obj.get("kind", ""),
                        obj.get("language", ""), obj.get("end"), obj.get("scope", "")))
    return tags


def ctags_available() -> bool:
    """Is universal-ctags (the JSON-capable one) on PATH?"""
    exe = shutil.which("ctags")
    if exe is None:
        return False
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True)
    return "Universal Ctags" in proc.stdout


def run_ctags(tree: Path) -> list[Tag]:
    """Run universal-ctags over a directory (paths in tags are relative to it)."""
    exe = shutil.which("ctags")
    if exe is None:
        raise NotFound("universal-ctags is not installed; the definitions and descriptions "
                           "datasets take their ground truth from it",
                           hint="apt-get install universal-ctags (or bring a JSONL dataset)")
    proc = subprocess.run([exe, "-R", "--output-format=json", "--fields=+nel", "-f", "-"],
                          cwd=tree, capture_output=True, text=True, errors="replace")
    if proc.returncode != 0:
        raise NotFound(f"ctags failed (is it universal-ctags?): {proc.stderr.strip()[:200]}",
                           hint="apt-get install universal-ctags")
    return parse_ctags(proc.stdout)


def candidate_tags(tags: list[Tag]) -> list[Tag]:
    """Definitions in non-test source files."""
    return [t for t in tags if t.is_definition and is_code_path(t.path) and not is_test_path(t.path)]


def definition_cases(tags: list[Tag], ref: str, limit: int | None = None, seed: int = 0,
                     max_definitions: int = 3, min_length: int = 4) -> list[EvalCase]:
    """One case per kept identifier; a seeded sample of `limit` of them, ordered by name."""
    by_name: dict[str, list[Tag]] = defaultdict(list)
    for tag in candidate_tags(tags):
        by_name[tag.name].append(tag)
    names = sorted(n for n, defs in by_name.items()
                   if len(n) >= min_length and not (n.startswith("__") and n.endswith("__"))
                   and len({(t.path, t.line) for t in defs}) <= max_definitions)
    if limit is not None and len(names) > limit:
        names = sorted(random.Random(seed).sample(names, limit))
    cases = []
    for name in names:
        defs = sorted({(t.path, t.line) for t in by_name[name]})
        cases.append(EvalCase(query=name, ref=ref, gold_files=tuple(dict.fromkeys(p for p, _ in defs)),
                              gold_symbols=tuple(GoldSymbol(p, name, line) for p, line in defs),
                              kind="definitions", id=f"def-{name}"))
    return cases
