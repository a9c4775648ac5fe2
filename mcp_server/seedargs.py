"""Arguments of the five seed specifications (/work/shared/seeds, mapped in docs/seeds.md)
that our tools spell differently or have no use for: a client written to a seed is understood,
never refused for a name.

Each tool's seed names translate before the strict check: an alias becomes our argument
(`node_id` -> `symbol_id`), a folder (`path`, `directory`) scopes the search's path glob,
`file_type` adds an extension, and a name with no meaning here is type-checked, dropped and
named in `metadata.ignored_arguments`. Wrong types stay errors.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from .budget import ArgumentError


@dataclass(frozen=True)
class Alias:
    """Our name for the seed's argument."""
    target: str


@dataclass(frozen=True)
class Scope:
    """A repository folder that narrows a search (the seeds' `path` to the codebase and
    `directory`): ".", "" or the repository's own path search everything."""


@dataclass(frozen=True)
class FileType:
    """One extension (`py`), added to `extensions`."""


@dataclass(frozen=True)
class Ignored:
    """Accepted and left unused: type-checked, then named in metadata.ignored_arguments."""
    kind: type
    why: str


@dataclass(frozen=True)
class RootPath:
    """The repository to work on: must be the one served ("." or its path)."""


NODE = {"node_id": Alias("symbol_id")}
PROJECT = {"project_id": Ignored(str, "one repository per server")}
SEARCH = {"path": Scope(), "directory": Scope(), "file_type": FileType(),
          "repository_id": Ignored(str, "one repository per server"),
          "expand_query": Ignored(bool, "no LLM query expansion here"),
          "synthesize": Ignored(bool, "no LLM summary here")}
SEED_ARGUMENTS: dict[str, dict[str, Any]] = {
    "search_code": SEARCH,
    "search_docs": {"path": Scope()},
    "code_research": {"path": Scope()},
    "search_symbols": {**PROJECT, "node_type": Alias("kind")},
    "lookup_symbol": PROJECT,
    # seed 001's and seed 002's names of index_repo (app.TOOL_ALIASES)
    "index_codebase": {"path": RootPath()},
    "index_repository": {"path": RootPath(), "force_reindex": Alias("force"),
                         "name": Ignored(str, "one repository per server")},
    **{tool: NODE for tool in ("find_similar", "get_symbol", "get_source_spans", "get_callers",
                               "get_callees", "get_implementations", "get_references",
                               "get_dependencies", "get_dependents")},
}
SCHEMA = {Scope: {"type": "string"}, FileType: {"type": "string"}, RootPath: {"type": "string"}}


def seed_properties(tool: str) -> dict[str, dict]:
    """Input-schema properties for the seed names `tool` takes (none our own names cover)."""
    out = {}
    for name, spec in SEED_ARGUMENTS.get(tool, {}).items():
        if isinstance(spec, Ignored):
            out[name] = {"type": "boolean" if spec.kind is bool else "string"}
        elif isinstance(spec, Alias):
            out[name] = {"type": "string"}
        else:
            out[name] = dict(SCHEMA[type(spec)])
    return out


def translate(tool: str, arguments: dict[str, Any], root: str) -> list[str]:
    """Rewrite the seed names in `arguments` (in place) into ours; the names ignored."""
    ignored = []
    for name, spec in SEED_ARGUMENTS.get(tool, {}).items():
        if name not in arguments:
            continue
        value = arguments.pop(name)
        if isinstance(spec, Ignored):
            if type(value) is not spec.kind:
                raise ArgumentError(name, "a boolean" if spec.kind is bool else "a string")
            ignored.append(name)
        elif isinstance(spec, Alias):
            if spec.target in arguments and arguments[spec.target] != value:
                raise ArgumentError(name, f"the same value as `{spec.target}` (it is its other name)")
            arguments[spec.target] = value
        elif isinstance(spec, FileType):
            _file_type(arguments, name, value)
        elif isinstance(spec, RootPath):
            if not isinstance(value, str) or posixpath.normpath(value.rstrip("/") or ".") not in (
                    ".", posixpath.normpath(root)):
                raise ArgumentError(name, "this server's repository (\".\" or its path)",
                                    "names another repository than the one this server serves")
        else:
            _scope(arguments, name, value, root)
    return ignored


def _file_type(arguments: dict, name: str, value: Any) -> None:
    if not isinstance(value, str) or not value.strip(".").isalnum():
        raise ArgumentError(name, "a file extension such as `py` or `ts`")
    have = [e for e in (arguments.get("extensions") or "").split(",") if e]
    arguments["extensions"] = ",".join(dict.fromkeys([*have, value.strip(".")]))


def _scope(arguments: dict, name: str, value: Any, root: str) -> None:
    """A folder becomes the path glob `folder/**` (joined with a path_filter the call gave)."""
    if not isinstance(value, str) or len(value) > 4096:
        raise ArgumentError(name, "a repository folder (\".\" for all of it)")
    folder = value.strip()
    if posixpath.isabs(folder):
        if folder.rstrip("/") == root.rstrip("/") or (folder + "/").startswith(root.rstrip("/") + "/"):
            folder = folder[len(root.rstrip("/")):]
        else:
            raise ArgumentError(name, "a folder of this server's repository",
                                "is outside the repository this server serves",
                                hint="pass a repository-relative folder, or leave it out")
    folder = posixpath.normpath(folder.strip("/") or ".")
    if folder.startswith(".."):
        raise ArgumentError(name, "a folder inside the repository")
    if folder == ".":
        return
    glob = arguments.get("path_filter")
    if not glob:
        arguments["path_filter"] = f"{folder}/**"
    elif not glob.startswith(folder + "/"):
        arguments["path_filter"] = f"{folder}/{glob}" if "/" in glob else f"{folder}/**/{glob}"
