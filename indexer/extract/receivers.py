"""Receiver types written in the source (no type checker): `x.m()` after `x: Foo`, `Foo x`,
`x = Foo()`, `new Foo()`, `Foo::new()`, `Foo.new`, and `self.x.m()` / `this.x.m()` / `@x.m`
after a field typed or constructed the same way.

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


def _patterns(parts: dict[str, str], *patterns: str) -> str:
    """One query of `patterns`, each upper-case placeholder (TYPE, NEW...) replaced by its part."""
    query = "\n".join(patterns)
    for placeholder, part in parts.items():
        query = query.replace(placeholder, part)
    return query


_TS_TYPE = "[(type_identifier) (nested_type_identifier) (generic_type name: (_) @type)] @type"
_TS_TYPES = _patterns({"TYPE": _TS_TYPE},
    "(required_parameter pattern: (identifier) @var type: (type_annotation TYPE))",
    "(optional_parameter pattern: (identifier) @var type: (type_annotation TYPE))",
    "(variable_declarator name: (identifier) @var type: (type_annotation TYPE))",
    "(public_field_definition name: (property_identifier) @field type: (type_annotation TYPE))",
    "(required_parameter (accessibility_modifier) pattern: (identifier) @field type: (type_annotation TYPE))",
    "(optional_parameter (accessibility_modifier) pattern: (identifier) @field type: (type_annotation TYPE))")
_JS_NEW = """
(variable_declarator name: (identifier) @var value: (new_expression constructor: [(identifier) (member_expression)] @ctor))
(assignment_expression left: (member_expression object: (this) property: (property_identifier) @field) right: (new_expression constructor: [(identifier) (member_expression)] @ctor))
"""
_TS_FIELD_NEW = """
(public_field_definition name: (property_identifier) @field value: (new_expression constructor: [(identifier) (member_expression)] @ctor))
"""
_GO_TYPE = ("[(type_identifier) (qualified_type) (pointer_type [(type_identifier) (qualified_type)] @type)"
            " (generic_type type: [(type_identifier) (qualified_type)] @type)] @type")
_GO = _patterns({"TYPE": _GO_TYPE},
    "(parameter_declaration name: (identifier) @var type: TYPE)",
    "(var_spec name: (identifier) @var type: TYPE)",
    "(field_declaration name: (field_identifier) @field type: TYPE)",
    "(short_var_declaration left: (expression_list . (identifier) @var) right: (expression_list . "
    "[(composite_literal type: (type_identifier) @type) "
    "(unary_expression operand: (composite_literal type: (type_identifier) @type))]))")
_JAVA_TYPE = ("[(type_identifier) (scoped_type_identifier)"
              " (generic_type [(type_identifier) (scoped_type_identifier)] @type)] @type")
_JAVA = _patterns({"TYPE": _JAVA_TYPE},
    "(formal_parameter type: TYPE name: (identifier) @var)",
    "(local_variable_declaration type: TYPE declarator: (variable_declarator name: (identifier) @var))",
    "(field_declaration type: TYPE declarator: (variable_declarator name: (identifier) @field))",
    "(variable_declarator name: (identifier) @var value: (object_creation_expression type: TYPE))")
_CS_TYPE = ("[(identifier) (qualified_name) (generic_name . (identifier) @type)"
            " (nullable_type type: [(identifier) (qualified_name) (generic_name . (identifier) @type)] @type)] @type")
_CSHARP = _patterns({"TYPE": _CS_TYPE},
    "(parameter type: TYPE name: (identifier) @var)",
    "(variable_declaration type: TYPE (variable_declarator name: (identifier) @var))",
    "(property_declaration type: TYPE name: (identifier) @field)",
    "(variable_declarator name: (identifier) @var (object_creation_expression type: TYPE))")
_KT_TYPE = "[(user_type) @type (nullable_type (user_type) @type)]"
_KT_CTOR = "(call_expression . [(simple_identifier) (navigation_expression)] @ctor)"
_KOTLIN = _patterns({"TYPE": _KT_TYPE, "CTOR": _KT_CTOR},
    "(parameter (simple_identifier) @var . TYPE)",
    "(class_parameter (binding_pattern_kind) (simple_identifier) @field . TYPE)",
    "(property_declaration (variable_declaration (simple_identifier) @var . TYPE))",
    "(property_declaration (variable_declaration (simple_identifier) @var .) . CTOR)")
_SWIFT_TYPE = "[(user_type) @type (optional_type wrapped: (user_type) @type)]"
_SWIFT = _patterns({"TYPE": _SWIFT_TYPE},
    "(parameter (simple_identifier) @var . TYPE)",
    "(property_declaration name: (pattern bound_identifier: (simple_identifier) @var)"
    " (type_annotation TYPE))",
    "(property_declaration name: (pattern bound_identifier: (simple_identifier) @var)"
    " value: (call_expression . [(simple_identifier) (navigation_expression)] @ctor))")
_RS_NAMED = "[(type_identifier) (scoped_type_identifier)]"
_RS_TYPE = (f"[{_RS_NAMED} (generic_type type: {_RS_NAMED} @type) (reference_type type: [{_RS_NAMED}"
            f" (generic_type type: {_RS_NAMED} @type)] @type)] @type")
_RS_POINTERS = frozenset({"Box", "Arc", "Rc"})
_RS_CTOR = ("(call_expression function: (scoped_identifier path: [(identifier) (scoped_identifier)] @ctor"
            " name: (identifier) @ctor_fn))")
_RUST = _patterns({"TYPE": _RS_TYPE, "CTOR": _RS_CTOR},
    "(parameter pattern: (identifier) @var type: TYPE)",
    "(let_declaration pattern: (identifier) @var type: TYPE)",
    "(field_declaration name: (field_identifier) @field type: TYPE)",
    "(let_declaration pattern: (identifier) @var value: [CTOR (try_expression CTOR)])",
    "(let_declaration pattern: (identifier) @var value: (struct_expression name: [(type_identifier)"
    " (scoped_type_identifier)] @ctor))")
_PHP_TYPE = "[(named_type [(name) (qualified_name)] @type) (optional_type (named_type [(name) (qualified_name)] @type))]"
_PHP_NEW = "(object_creation_expression [(name) (qualified_name)] @ctor)"
_PHP = _patterns({"TYPE": _PHP_TYPE, "NEW": _PHP_NEW},
    "(simple_parameter type: TYPE name: (variable_name (name) @var))",
    "(property_promotion_parameter type: TYPE name: (variable_name (name) @field))",
    "(property_declaration type: TYPE (property_element name: (variable_name (name) @var)))",
    "(assignment_expression left: (variable_name (name) @var) right: NEW)",
    "(assignment_expression left: (member_access_expression object: (variable_name (name) @self)"
    " name: (name) @field) right: NEW)")
_RB_NEW = "(call receiver: [(constant) (scope_resolution)] @ctor method: (identifier) @ctor_fn)"
_RUBY = _patterns({"NEW": _RB_NEW},
    "(assignment left: (identifier) @var right: NEW)",
    "(assignment left: (instance_variable) @field right: NEW)")
# Languages where a method sees its type's fields by bare name (`client.get()` in Java, `@db`
# in Ruby).
FIELDS_IN_SCOPE = frozenset({"java", "csharp", "kotlin", "swift", "ruby"})
QUERIES = {"go": _GO, "java": _JAVA, "javascript": _JS_NEW, "typescript": _TS_TYPES + _JS_NEW + _TS_FIELD_NEW,
           "tsx": _TS_TYPES + _JS_NEW + _TS_FIELD_NEW, "csharp": _CSHARP, "kotlin": _KOTLIN, "swift": _SWIFT,
           "rust": _RUST, "php": _PHP, "ruby": _RUBY}
_SELF = frozenset({"self", "this"})
_SCOPES = frozenset({"function", "method", "constructor"})
# Types whose members see the fields: an `impl` or an `extension` sees those of the type it
# names (fields are kept by type name).
_TYPES = frozenset({"class", "struct", "interface", "object", "enum", "impl", "extension", "trait"})


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


def constructs(function: str) -> bool:
    """`Foo::new()`, `Foo.new`, `Foo::with_capacity(n)`: by convention a Foo."""
    return function in ("new", "default") or function.startswith(("new_", "with_"))


def _type_name(node: Node) -> str:
    return callee_name(text(node).replace("\\", SEP))  # PHP's `App\Db` as its references write it


def _type_of(captures: dict[str, list[Node]], language: str) -> str:
    if "type" in captures:  # the innermost capture: `Foo` of `*Foo`, `List<Foo>`'s `List`
        node = min(captures["type"], key=lambda n: n.end_byte - n.start_byte)
        found = _type_name(node)
        if language == "rust" and found in _RS_POINTERS and node.parent is not None:
            args = node.parent.child_by_field_name("type_arguments")
            inner = args.named_children[0] if args is not None and args.named_child_count else None
            if inner is not None and inner.type in ("type_identifier", "scoped_type_identifier"):
                return _type_name(inner)  # `Arc<Cache>`: its methods are Cache's (Deref)
        return "" if found == "var" else found
    if "ctor_fn" in captures and not constructs(text(captures["ctor_fn"][0])):
        return ""
    ctor = _type_name(captures["ctor"][0])
    last = ctor.rsplit(SEP, 1)[-1]
    return ctor if last[:1].isupper() else ""  # `Foo()` builds a Foo; `make()` says nothing


def _class_of(symbols: list[Symbol], i: int) -> int:
    while i != NO_PARENT and symbols[i].kind not in _TYPES:
        i = symbols[i].parent
    return i


@dataclass
class _Types:
    """What one file says of names' types: locals by (scope symbol, name), fields by (type
    name, name): a Rust `impl S` or a Swift `extension S` sees the fields of `struct S`."""

    symbols: list[Symbol]
    bare_fields: bool  # a method sees its type's fields by bare name (FIELDS_IN_SCOPE)
    local: dict[tuple[int, str], str] = field(default_factory=dict)
    fields: dict[tuple[str, str], str] = field(default_factory=dict)

    def declare(self, owner: int, name: str, type_name: str, is_field: bool) -> None:
        if is_field:
            cls = _class_of(self.symbols, owner)
            if cls != NO_PARENT:
                self.fields.setdefault((self.symbols[cls].name, name), type_name)
        else:
            self.local.setdefault((owner, name), type_name)

    def field_type(self, type_name: str, name: str) -> str:
        """The type of field `name` of the type named `type_name` ("" when unknown)."""
        return self.fields.get((type_name.rsplit(SEP, 1)[-1], name), "")

    def enclosing(self, source: int) -> str:
        """The name of the type whose member `source` is ("" at top level)."""
        cls = _class_of(self.symbols, source)
        return self.symbols[cls].name if cls != NO_PARENT else ""

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
            found = self.field_type(self.enclosing(source), head)
        return found


def _from_query(types: _Types, query: Query, root: Node, language: str) -> None:
    symbols = types.symbols
    owners = [i for i, s in enumerate(symbols) if s.kind in _SCOPES or s.kind in _TYPES]
    for _, caps in QueryCursor(query).matches(root):
        type_name = _type_of(caps, language)
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
        _from_query(types, query, root, name)
    if not types.local and not types.fields:
        return refs
    out = []
    for r in refs:
        parts = r.target.split(SEP) if r.kind == "call" and not r.module else ()
        found = ""
        if len(parts) == 3:  # self.x.m(), s.db.Query() with s a typed receiver
            owner = types.enclosing(r.source) if parts[0] in _SELF else types.of(parts[0], r.source)
            found = types.field_type(owner, parts[1]) if owner else ""
        elif len(parts) == 2 and parts[0] not in _SELF:
            found = types.of(parts[0], r.source)
        out.append(r._replace(module=found) if found else r)
    return out
