"""One server entry read, set and removed in a client's settings text, per file format.

Every format keeps what it does not touch: JSON and JSONC through a splice of the one member
(jsonc.py); TOML through tomlkit and YAML through ruamel.yaml, the maintained round-trip
libraries that keep comments, key order and layout. `keys` name the object that holds the
servers; a YAML list of servers (Continue's `mcpServers: [{name: ...}]`) is matched by `name`.
"""

from __future__ import annotations

import io
from typing import Any

from ..errors import ClientConfigInvalid

JSON, JSONC, TOML, YAML = "json", "jsonc", "toml", "yaml"
FORMATS = (JSON, JSONC, TOML, YAML)


def read(fmt: str, text: str, where: str) -> dict:
    """The whole settings file as plain data."""
    if fmt in (JSON, JSONC):
        return _jsonc().loads(text, where)
    if fmt == TOML:
        return _toml(text, where).unwrap()
    data = _yaml_load(text, where)
    return _plain(data) if data is not None else {}


def entry(fmt: str, text: str, keys: list[str], name: str, where: str) -> Any:
    """The server entry called `name`, or None."""
    node: Any = read(fmt, text, where)
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, list):
        return next((dict(e) for e in node if isinstance(e, dict) and e.get("name") == name), None)
    return node.get(name) if isinstance(node, dict) else None


def set_entry(fmt: str, text: str, keys: list[str], name: str, value: dict | list,
              where: str) -> str:
    if fmt in (JSON, JSONC):
        return _jsonc().set_member(text, [*keys, name], value, where)
    if fmt == TOML:
        return _toml_set(text, keys, name, value, where)
    return _yaml_set(text, keys, name, value, where)


def remove_entry(fmt: str, text: str, keys: list[str], name: str, where: str) -> str:
    if fmt in (JSON, JSONC):
        return _jsonc().remove_member(text, [*keys, name], where)
    if entry(fmt, text, keys, name, where) is None:
        return text
    if fmt == TOML:
        doc = _toml(text, where)
        _descend(doc, keys, where, create=False).remove(name)
        return _tomlkit().dumps(doc)
    yaml, data = _yaml(), _yaml_load(text, where)
    holder = _descend(data, keys, where, create=False)
    holder[:] = [e for e in holder if not (isinstance(e, dict) and e.get("name") == name)]
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _jsonc():
    from . import jsonc  # json5 (~90 ms): only `install`/`doctor` reading a client's settings, never `--help`

    return jsonc


def _tomlkit():
    import tomlkit  # only `install`/`doctor` on a TOML client pay for it

    return tomlkit


def _toml(text: str, where: str):
    tomlkit = _tomlkit()
    try:
        return tomlkit.parse(text)
    except Exception as exc:  # tomlkit's ParseError and friends
        raise ClientConfigInvalid(f"{where} is not valid TOML: {exc}",
                                  hint="fix or move the file, then run the command again") from None


def _toml_set(text: str, keys: list[str], name: str, value: dict, where: str) -> str:
    if entry(TOML, text, keys, name, where) == value:
        return text
    tomlkit = _tomlkit()
    doc = _toml(text, where)
    holder = _descend(doc, keys, where, create=True, make=tomlkit.table)
    holder[name] = _toml_value(tomlkit, value)
    return tomlkit.dumps(doc)


def _toml_value(tomlkit, value):
    """A table for a dict, an array of tables for a list of dicts (Codex's `[[hooks.X]]`)."""
    if isinstance(value, dict):
        table = tomlkit.table()
        for k, v in value.items():
            table[k] = _toml_value(tomlkit, v)
        return table
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        tables = tomlkit.aot()
        for v in value:
            tables.append(_toml_value(tomlkit, v))
        return tables
    return value


def _yaml():
    from ruamel.yaml import YAML as RoundTrip  # only `install`/`doctor` on a YAML client

    yaml = RoundTrip()
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.preserve_quotes = True
    return yaml


def _yaml_load(text: str, where: str):
    try:
        data = _yaml().load(text) if text.strip() else None
    except Exception as exc:  # ruamel's ScannerError, ParserError, ComposerError...
        raise ClientConfigInvalid(f"{where} is not valid YAML: {exc}",
                                  hint="fix or move the file, then run the command again") from None
    if data is not None and not isinstance(data, dict):
        raise ClientConfigInvalid(f"{where} does not hold a YAML mapping at the top")
    return data


def _yaml_set(text: str, keys: list[str], name: str, value: dict, where: str) -> str:
    if entry(YAML, text, keys, name, where) == {"name": name, **value}:
        return text
    from ruamel.yaml.comments import CommentedMap, CommentedSeq  # as in _yaml

    yaml = _yaml()
    data = _yaml_load(text, where)
    if data is None:
        data = CommentedMap()
    holder = _descend(data, keys, where, create=True, make=CommentedSeq)
    if not isinstance(holder, list):
        raise ClientConfigInvalid(f"{where}: `{'.'.join(keys)}` is not a list")
    item = CommentedMap([("name", name), *value.items()])
    at = next((i for i, e in enumerate(holder) if isinstance(e, dict) and e.get("name") == name), None)
    if at is None:
        holder.append(item)
    else:
        holder[at] = item
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _descend(node, keys: list[str], where: str, *, create: bool, make=dict):
    """The container at `keys` (created, with `make()` for the last, when `create`)."""
    for i, key in enumerate(keys):
        if key not in node:
            if not create:
                raise KeyError(key)
            node[key] = make() if i == len(keys) - 1 else type(node)()
        node = node[key]
        if not hasattr(node, "__getitem__") or isinstance(node, str):
            raise ClientConfigInvalid(f"{where}: `{'.'.join(keys[:i + 1])}` is not a table",
                                      hint="fix the file by hand, then run the command again")
    return node


def _plain(node):
    """ruamel's commented containers as dicts and lists."""
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node
