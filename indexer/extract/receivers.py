"""Receiver types written in the source (no type checker): `x.m()` after `x: Foo`, `x = Foo()`,
`new Foo()`, and `self.x.m()` / `this.x.m()` after a field typed or constructed the same way.

A call reference whose receiver has such a type gets the type's name in its `module` field
(otherwise unused by calls); the symbol graph looks the method up in that type. Python's
rules declare the types during the walk (DECLARES references, no second pass over the
tree); the other languages' come from one query over the tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from tree_sitter import Language, Node, Query, QueryCursor

from ...types import NO_PARENT, Reference, Symbol
from .rules import DECLARES, SEP, callee_name, text

_TS_TYPE = "[(type_identifier) (nested_type_identifier) (generic_type name: (_) @type)] @type"
_TS_TYPES = "\n".join(p.replace("TYPE", _TS_TYPE) for p in (
    "(required_parameter pattern: (identifier) @var type: (type_annotation TYPE))",
    "(optional_parameter pattern: (identifier) @var type: (type_annotation TYPE))",
    "(variable_declarator name: (identifier) @var type: (type_annotation TYPE))",
    "(public_field_definition name: (property_identifier) @field type: (type_annotation TYPE))",
    "(required_parameter (accessibility_modifier) pattern: (identifier) @field type: (type_annotation TYPE))",
    "(optional_parameter (accessibility_modifier) pattern: (identifier) @field type: (type_annotation TYPE))"))
_JS_NEW = """
(variable_declarator name: (identifier) @var value: (new_expression constructor: [(identifier) (member_expression)] @ctor))
(assignment_expression left: (member_expression object: (this) property: (property_identifier) @field) right: (new_expression constructor: [(identifier) (member_expression)] @ctor))
"""
_TS_FIELD_NEW = """
(public_field_definition name: (property_identifier) @field value: (new_expression constructor: [(identifier) (member_expression)] @ctor))
"""
_GO_TYPE = ("[(type_identifier) (qualified_type) (pointer_type [(type_identifier) (qualified_type)] @type)"
            " (generic_type type: [(type_identifier) (qualified_type)] @type)] @type")
_GO = "\n".join(p.replace("TYPE", _GO_TYPE) for p in (
    "(parameter_declaration name: (identifier) @var type: TYPE)",
    "(var_spec name: (identifier) @var type: TYPE)",
    "(field_declaration name: (field_identifier) @field type: TYPE)",
    "(short_var_declaration left: (expression_list . (identifier) @var) right: (expression_list . "
    "[(composite_literal type: (type_identifier) @type) "
    "(unary_expression operand: (composite_literal type: (type_identifier) @type))]))"))
_JAVA_TYPE = ("[(type_identifier) (scoped_type_identifier)"
              " (generic_type [(type_identifier) (scoped_type_identifier)] @type)] @type")
_JAVA = "\n".join(p.replace("TYPE", _JAVA_TYPE) for p in (
    "(formal_parameter type: TYPE name: (identifier) @var)",
    "(local_variable_declaration type: TYPE declarator: (variable_declarator name: (identifier) @var))",
    "(field_declaration type: TYPE declarator: (variable_declarator name: (identifier) @field))",
    "(variable_declarator name: (identifier) @var value: (object_creation_expression type: TYPE))"))
# Languages where a method sees its type's fields by bare name (`client.get()` in Java).
FIELDS_IN_SCOPE = frozenset({"java"})
QUERIES = {"go": _GO, "java": _JAVA, "javascript": _JS_NEW, "typescript": _TS_TYPES + _JS_NEW + _TS_FIELD_NEW,
           "tsx": _TS_TYPES + _JS_NEW + _TS_FIELD_NEW}
_SELF = frozenset({"self", "this"})
_SCOPES = frozenset({"function", "method", "constructor"})
_TYPES = frozenset({"class", "struct", "interface", "object", "enum"})


@lru_cache(maxsize=None)
def _query(language: Language, name: str) -> Query | None:
    source = QUERIES.get(name)
    return Query(language, source) if source else None


def _owner(symbols: list[Symbol], starts: list[int], at: int) -> int:
    """The innermost function or type symbol whose span holds byte `at` (NO_PARENT: none)."""
    best, best_size = NO_PARENT, None
    for i in starts:
        s = symbols[i].span
        if s.start_byte <= at < s.end_byte and (best_size is None or s.end_byte - s.start_byte < best_size):
            best, best_size = i, s.end_byte - s.start_byte
    return best


def _type_of(captures: dict[str, list[Node]]) -> str:
    if "type" in captures:  # the innermost capture: `Foo` of `*Foo`, `List<Foo>`'s `List`
        found = callee_name(text(min(captures["type"], key=lambda n: n.end_byte - n.start_byte)))
        return "" if found == "var" else found
    ctor = callee_name(text(captures["ctor"][0]))
    last = ctor.rsplit(SEP, 1)[-1]
    return ctor if last[:1].isupper() else ""  # `Foo()` builds a Foo; `make()` says nothing


def _class_of(symbols: list[Symbol], i: int) -> int:
    while i != NO_PARENT and symbols[i].kind not in _TYPES:
        i = symbols[i].parent
    return i


@dataclass
class _Types:
    """What one file says of names' types: locals by (scope symbol, name), fields by (type
    symbol, name)."""

    symbols: list[Symbol]
    bare_fields: bool  # a method sees its type's fields by bare name (FIELDS_IN_SCOPE)
    local: dict[tuple[int, str], str] = field(default_factory=dict)
    fields: dict[tuple[int, str], str] = field(default_factory=dict)

    def declare(self, owner: int, name: str, type_name: str, is_field: bool) -> None:
        if is_field:
            cls = _class_of(self.symbols, owner)
            if cls != NO_PARENT:
                self.fields.setdefault((cls, name), type_name)
        else:
            self.local.setdefault((owner, name), type_name)

    def of(self, head: str, source: int) -> str:
        """The type of `head` where `source` uses it: a local, else (Java) a field."""
        scope = source
        while scope != NO_PARENT:
            found = self.local.get((scope, head))
            if found:
                return found
            scope = self.symbols[scope].parent
        found = self.local.get((NO_PARENT, head), "")
        if not found and self.bare_fields:
            found = self.fields.get((_class_of(self.symbols, source), head), "")
        return found


def _from_query(types: _Types, query: Query, root: Node) -> None:
    symbols = types.symbols
    owners = [i for i, s in enumerate(symbols) if s.kind in _SCOPES or s.kind in _TYPES]
    for _, caps in QueryCursor(query).matches(root):
        type_name = _type_of(caps)
        if not type_name:
            continue
        if "var" in caps:
            node = caps["var"][0]
            owner = _owner(symbols, owners, node.start_byte)
            # `client: Client` in a class body is a field
            types.declare(owner, text(node), type_name, owner != NO_PARENT and symbols[owner].kind in _TYPES)
        elif "self" not in caps or text(caps["self"][0]) in _SELF:
            node = caps["field"][0]
            types.declare(_owner(symbols, owners, node.start_byte), text(node), type_name, True)


def typed_receivers(root: Node, language: Language, name: str, symbols: list[Symbol],
                    refs: list[Reference]) -> list[Reference]:
    """`refs` with the receiver type of each `x.m()` / `self.x.m()` call that has one (and
    without the rules' DECLARES references)."""
    declared = [r for r in refs if r.kind == DECLARES]
    if declared:
        refs = [r for r in refs if r.kind != DECLARES]
    query = _query(language, name)
    if (query is None and not declared) or not any(r.kind == "call" and SEP in r.target for r in refs):
        return refs
    types = _Types(symbols, name in FIELDS_IN_SCOPE)
    for r in declared:
        types.declare(r.source, r.alias, r.target,
                      r.module == "self" or (r.source != NO_PARENT and symbols[r.source].kind in _TYPES))
    if query is not None:
        _from_query(types, query, root)
    if not types.local and not types.fields:
        return refs
    classes = {s.name: i for i, s in enumerate(symbols) if s.kind in _TYPES}
    out = []
    for r in refs:
        parts = r.target.split(SEP) if r.kind == "call" and not r.module else ()
        found = ""
        if len(parts) == 3:  # self.x.m(), s.db.Query() with s a typed receiver
            owner = (_class_of(symbols, r.source) if parts[0] in _SELF
                     else classes.get(types.of(parts[0], r.source), NO_PARENT))
            found = types.fields.get((owner, parts[1]), "") if owner != NO_PARENT else ""
        elif len(parts) == 2 and parts[0] not in _SELF:
            found = types.of(parts[0], r.source)
        out.append(r._replace(module=found) if found else r)
    return out
