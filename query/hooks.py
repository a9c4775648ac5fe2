"""`codeagent hook claude-code|gemini`: the index's hits for an agent's own grep or glob call.

Claude Code (and Gemini CLI alike) runs the hook with the event as JSON on stdin
(`hook_event_name`, `tool_name`, `tool_input` with the grep or glob `pattern`, `cwd`) and
reads back JSON whose `hookSpecificOutput.additionalContext` it shows the model beside the
tool's result. We answer
a few lines: the definitions whose names the pattern spells, and the files the index ranks
for it. Searches go to the daemon's warm reader when the hook runs under the daemon
(query/warm.py), so a call costs a fork and a lookup, not an interpreter start and a cold
index. Any failure answers nothing: a hook must never get in the agent's way.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import CodeagentError
from .index import open_index
from .retrieval import SearchRequest
from .search import search
from .warm import search_warm

# The client's tool names -> what they are: Claude Code's Grep/Glob, Gemini CLI's grep and glob.
TOOLS = {"Grep": "Grep", "Glob": "Glob", "search_file_content": "Grep", "grep_search": "Grep",
         "glob": "Glob"}
DEFAULT_EVENT = {"claude-code": "PostToolUse", "gemini": "AfterTool"}
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


def hook_answer(event: dict, repo: Path | None = None, client: str = "claude-code") -> dict | None:
    """The hook's JSON answer to one Claude Code or Gemini CLI event, or None (nothing to add)."""
    tool = TOOLS.get(str(event.get("tool_name")))
    tool_input = event.get("tool_input") or {}
    pattern = tool_input.get("pattern") if isinstance(tool_input, dict) else None
    if tool is None or not isinstance(pattern, str) or not pattern.strip():
        return None
    words = words_of(tool, pattern)
    if not words:
        return None
    root = repo or Path(event.get("cwd") or ".")
    try:
        lines = _lines(root, tool, words)
    except (CodeagentError, OSError):
        return None
    if not lines:
        return None
    text = "codeagent index for " + repr(pattern) + ":\n" + "\n".join(lines)
    name = event.get("hook_event_name") or DEFAULT_EVENT.get(client, "PostToolUse")
    return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}}


def _lines(root: Path, tool: str, words: list[str]) -> list[str]:
    """One search (one lookup through the warm reader): the files it ranks, and for a Grep the
    definitions among their spans whose names the pattern spells."""
    mode = "path" if tool == "Glob" else "auto"
    files = _search(root, SearchRequest(" ".join(words), mode=mode, limit=MAX_FILES, group_by="file"))
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


def _search(root: Path, request: SearchRequest):
    answer = search_warm(root, None, None, request)
    if answer is not None:
        return answer
    with open_index(root) as view:
        return search(view, request)
