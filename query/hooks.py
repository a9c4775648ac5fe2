"""`codeagent hook claude-code|gemini|codex`: the index's hits for an agent's own grep or glob.

The agent runs the hook with the event as JSON on stdin (`hook_event_name`, `tool_name`,
`tool_input` with the grep or glob `pattern` (Codex: the Bash `command`), `cwd`) and reads
back JSON whose `hookSpecificOutput.additionalContext` it shows the model beside the tool's
result. The process the agent starts is clients/hook_runner.py (standard library only), which
hands the event to the resident daemon; this module runs in the daemon's child. We answer a
few lines: the definitions whose names the pattern spells, and the files the index ranks for
it. The search goes to the repository's warm reader (runtime/warm.py: the command passes its
`ask_warm` in, the read side imports no process role), found without running
git when the store says which index to read, and asks for names first (a few milliseconds),
the full ranking only when no name matches. Any failure answers nothing: a hook must never
get in the agent's way.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from .. import format as fmt
from .. import refs as refnames
from ..clients.hook_runner import normalize
from ..errors import CodeagentError
from ..model import SearchResponse
from ..store import Store
from .index import open_index, open_store
from .retrieval import SearchRequest
from .search import search

DEFAULT_EVENT = {"claude-code": "PostToolUse", "gemini": "AfterTool", "codex": "PostToolUse"}
MAX_DEFINITIONS = 5
MAX_FILES = 5
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
# Regex and glob vocabulary that is not a name the code would define.
_NOISE = frozenset("def class func function fn let const var import from return self "
                   "async await public private static void int str none true false "
                   "py js ts go rs java rb cs kt swift".split())


def words_of(tool: str, pattern: str) -> list[str]:
    """The names a Grep regex or a Glob pattern spells (escapes and classes dropped)."""
    text = re.sub(r"\\[a-zA-Z]", " ", pattern)  # \b \w \s ...
    if tool == "Glob":
        text = re.sub(r"\*\*?|\?|\{|\}|,|/", " ", text)
        text = re.sub(r"\.[A-Za-z0-9]{1,5}\b", " ", text)  # extensions
    return [w for w in dict.fromkeys(_WORD.findall(text)) if w.lower() not in _NOISE]


# The warm reader's asker (runtime.warm.ask_warm): its answer, or None to search here.
Ask = Callable[[Path, Path, str | None, SearchRequest], SearchResponse | None]


def hook_answer(event: dict, repo: Path | None = None, client: str = "claude-code",
                ask: Ask | None = None) -> dict | None:
    """The hook's JSON answer to one Claude Code, Gemini CLI or Codex event, or None (nothing
    to add); `ask` puts each search to the warm reader first."""
    event = normalize(event, client)
    if event is None:
        return None
    tool, pattern = event["tool_name"], event["tool_input"]["pattern"]
    words = words_of(tool, pattern)
    if not words:
        return None
    root = repo or Path(event.get("cwd") or ".")
    try:
        lines = _lines(root, tool, words, ask)
    except (CodeagentError, OSError):
        return None
    if not lines:
        return None
    text = "codeagent index for " + repr(pattern) + ":\n" + "\n".join(lines)
    name = event.get("hook_event_name") or DEFAULT_EVENT.get(client, "PostToolUse")
    return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}}


def _lines(root: Path, tool: str, words: list[str], ask: Ask | None) -> list[str]:
    """One search (a lookup through the warm reader): the files it ranks, and for a Grep the
    definitions among their spans whose names the pattern spells. A Grep asks for names
    first (symbol mode: the same top files as the full ranking on names, a tenth of the cost),
    then, when no name matches, for the full ranking."""
    located = _locate(root)
    query = " ".join(words)
    if tool == "Glob":
        files = _search(located, SearchRequest(query, mode="path", limit=MAX_FILES, group_by="file"), ask)
    else:
        files = _search(located, SearchRequest(query, mode="symbol", limit=MAX_FILES, group_by="file"), ask)
        if not files.files:
            files = _search(located, SearchRequest(query, mode="auto", limit=MAX_FILES, group_by="file"), ask)
    out = []
    if tool == "Grep":
        named = set(words)
        found = [h for f in files.files or [] for h in f.spans
                 if h.result_type == "symbol" and h.name in named][:MAX_DEFINITIONS]
        if found:
            out.append("definitions: " + "; ".join(
                f"{h.kind} {h.qualified_name or h.name} {h.path}:{h.line_start}" for h in found))
    ranked = [f.path for f in files.files or []][:MAX_FILES]
    if ranked:
        out.append("files: " + ", ".join(ranked))
    return out


def _locate(start: Path) -> tuple[Path, Store, str | None]:
    """The indexed repository at or above `start`, its store, and the ref a search there reads:
    read off the store when it decides alone (a work-tree index, or a single ref), so no git
    runs; else found as every command finds them (git's top level, the current branch)."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".codeagent" / fmt.STORE_MARKER).exists():
            store = Store(folder / ".codeagent")
            refs = store.list_refs()
            if refnames.WORKTREE_REF in refs:
                return folder, store, refnames.WORKTREE_REF
            if len(refs) == 1:
                return folder, store, next(iter(refs))
            break
    store, root = open_store(start, None)
    return root or start, store, refnames.resolve(store, None, root)[0]


def _search(located: tuple[Path, Store, str | None], request: SearchRequest, ask: Ask | None):
    root, store, ref = located
    answer = ask(root, store.root, ref, request) if ask is not None else None
    if answer is not None:
        return answer
    with open_index(root, ref=ref) as view:
        return search(view, request)
