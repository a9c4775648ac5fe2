"""Edit one member of a JSON / JSONC settings file in place, keeping everything else as it was.

Editors' settings files (VS Code's mcp.json, Zed's settings.json, Gemini's settings.json) carry
comments and trailing commas that `json` refuses and that a load-and-dump round trip would
drop. json-five parses them and gives each node its source offsets; we then splice only the
bytes of the one member we add, replace or remove, so other servers, comments, key order and
indentation survive byte for byte.
"""

from __future__ import annotations

import json
import re
from typing import Any

import json5
from json5.loader import ModelLoader
from json5.model import JSONObject

from ..errors import ClientConfigInvalid


def loads(text: str, where: str) -> dict:
    """The settings as plain Python (empty text: an empty object)."""
    if not text.strip():
        return {}
    try:
        data = _json5(text)
    except Exception as exc:  # json-five raises several unrelated types for bad input
        raise ClientConfigInvalid(f"{where} is not valid JSON/JSONC: {exc}",
                                  hint="fix or move the file, then run the command again") from None
    if not isinstance(data, dict):
        raise ClientConfigInvalid(f"{where} does not hold a JSON object at the top")
    return data


def set_member(text: str, keys: list[str], value: Any, where: str) -> str:
    """`text` with the member at `keys` (object keys from the top) set to `value`; objects
    on the way are created. Unchanged text when the member already equals `value`."""
    if not text.strip():
        return _dump(_nest(keys, value), 0, 2) + "\n"
    loads(text, where)
    obj = _model(text, where)
    for depth, key in enumerate(keys):
        member = _find(obj, key)
        if member is None:
            return _insert(text, obj, key, _nest(keys[depth + 1:], value))
        if depth == len(keys) - 1:
            start, end = _span(member.value)
            if _json5(text[start:end]) == value:
                return text
            indent = _line_indent(text, member.key._tok.index)
            return text[:start] + _dump(value, len(indent), _unit(text)) + text[end:]
        if not isinstance(member.value, JSONObject):
            raise ClientConfigInvalid(f"{where}: `{'.'.join(keys[:depth + 1])}` is not an object",
                                      hint="fix the file by hand, then run the command again")
        obj = member.value
    return text


def remove_member(text: str, keys: list[str], where: str) -> str:
    """`text` without the member at `keys` (unchanged when there is none)."""
    if not text.strip():
        return text
    loads(text, where)
    obj = _model(text, where)
    for key in keys[:-1]:
        member = _find(obj, key)
        if member is None or not isinstance(member.value, JSONObject):
            return text
        obj = member.value
    members = obj.key_value_pairs
    index = next((i for i, kv in enumerate(members) if _key(kv) == keys[-1]), None)
    if index is None:
        return text
    start, end = members[index].key._tok.index, _span(members[index].value)[1]
    after = _skip(text, end)
    if after < len(text) and text[after] == ",":
        end = after + 1
    elif index > 0:  # the last member: drop the comma after the one before it instead
        comma = _skip(text, _span(members[index - 1].value)[1])
        if text[comma] == ",":
            text, start, end = text[:comma] + text[comma + 1:], start - 1, end - 1
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    if not text[line_start:start].strip() and (line_end == -1 or not text[end:line_end].strip()):
        start, end = line_start, (len(text) if line_end == -1 else line_end + 1)
    return text[:start] + text[end:]


def _model(text: str, where: str) -> JSONObject:
    try:
        top = json5.loads(_masked(text), loader=ModelLoader()).value
    except Exception as exc:  # as in loads
        raise ClientConfigInvalid(f"{where} is not valid JSON/JSONC: {exc}") from None
    if not isinstance(top, JSONObject):
        raise ClientConfigInvalid(f"{where} does not hold a JSON object at the top")
    return top


# json-five 1.1.2 reads the escaped backslash of "C:\\xampp" as the start of a \x escape and
# refuses the file. Each escaped backslash is handed to it as \f instead: the same length, so
# every offset holds, and turned back into a backslash in the values it returns.
_ESCAPE = re.compile(r"\\(.)", re.S)  # an escape: a backslash and the character it escapes
_STAND_INS = (("f", "\f"), ("b", "\b"), ("v", "\v"), ("t", "\t"), ("r", "\r"), ("n", "\n"))


def _masked(text: str, esc: str = "f") -> str:
    if "\\\\" not in text:
        return text
    return _ESCAPE.sub(lambda m: "\\" + esc if m.group(1) == "\\" else m.group(0), text)


def _json5(text: str) -> Any:
    """The value `text` holds: strict JSON first, else json-five, escaped backslashes included."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    if "\\\\" not in text:
        return json5.loads(text)
    used = {m.group(1) for m in _ESCAPE.finditer(text)}
    for esc, char in _STAND_INS:  # a stand-in the file does not use itself
        if char not in text and esc not in used:
            return _restored(json5.loads(_masked(text, esc)), char)
    raise ValueError("escaped backslashes beside every one-letter control escape (\\f \\b \\v \\t \\r \\n)")


def _restored(value: Any, char: str) -> Any:
    if isinstance(value, str):
        return value.replace(char, "\\")
    if isinstance(value, dict):
        return {_restored(k, char): _restored(v, char) for k, v in value.items()}
    if isinstance(value, list):
        return [_restored(v, char) for v in value]
    return value


def _key(kv) -> str:
    return getattr(kv.key, "characters", None) or getattr(kv.key, "name", "")


def _find(obj: JSONObject, key: str):
    return next((kv for kv in obj.key_value_pairs if _key(kv) == key), None)


def _span(node) -> tuple[int, int]:
    return node._tok.index, (node._end_tok or node._tok).end


def _insert(text: str, obj: JSONObject, key: str, value: Any) -> str:
    """Add `"key": value` as the last member of `obj`, after any comment that ends it."""
    open_at, close_at = obj._tok.index, obj._end_tok.index
    outer = _line_indent(text, open_at)
    unit = _unit(text)
    if obj.key_value_pairs:
        last = obj.key_value_pairs[-1]
        indent = _line_indent(text, last.key._tok.index)
        end = _span(last.value)[1]
        comma = "" if text[_skip(text, end)] == "," else ","
        body = text[end:close_at].rstrip()
        return (text[:end] + comma + body + "\n" + indent + _member(key, value, len(indent), unit)
                + "\n" + _line_indent(text, close_at) + text[close_at:])
    indent = outer + " " * unit
    inner = text[open_at + 1:close_at].rstrip()
    return (text[:open_at + 1] + inner + "\n" + indent + _member(key, value, len(indent), unit)
            + "\n" + outer + text[close_at:])


def _member(key: str, value: Any, indent: int, unit: int) -> str:
    return json.dumps(key, ensure_ascii=False) + ": " + _dump(value, indent, unit)


def _dump(value: Any, indent: int, unit: int) -> str:
    """JSON of `value` whose continuation lines start `indent` spaces in."""
    text = json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + " " * indent)
    # U+2028/U+2029 are legal in a JSON string but json-five reads them as line breaks
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _nest(keys: list[str], value: Any) -> Any:
    for key in reversed(keys):
        value = {key: value}
    return value


def _line_indent(text: str, at: int) -> str:
    """The blanks that start the line holding offset `at`."""
    head = text[text.rfind("\n", 0, at) + 1:at]
    return head[:len(head) - len(head.lstrip())]


def _unit(text: str) -> int:
    """The file's indentation step (2 when it cannot tell)."""
    steps = [len(line) - len(line.lstrip(" ")) for line in text.splitlines() if line.startswith(" ")]
    return min(steps) if steps else 2


def _skip(text: str, at: int) -> int:
    """The offset of the first character at or after `at` that is not blank or a comment."""
    while at < len(text):
        if text[at].isspace():
            at += 1
        elif text.startswith("//", at):
            nl = text.find("\n", at)
            at = len(text) if nl == -1 else nl + 1
        elif text.startswith("/*", at):
            close = text.find("*/", at + 2)
            at = len(text) if close == -1 else close + 2
        else:
            break
    return at
