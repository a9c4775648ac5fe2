"""The symbol and reference kinds the symbol graph resolves between, and the SQL helpers its
statements (graph_sql.py) share with the tables' step (a reference's separator-neutral key)."""

from __future__ import annotations

CLASS_KINDS = ("class", "struct", "interface", "trait", "enum", "object", "protocol",
               "record", "union", "extension", "impl")
MEMBER_KINDS = ("method", "constructor", "property")
_CALLABLE = ("function", "method", "constructor", "class", "struct", "macro", "record", "object")
_TYPES = ("class", "struct", "interface", "trait", "enum", "type_alias", "type", "union",
          "protocol", "record", "typedef", "object", "delegate")
_ANY = tuple(sorted(set(_CALLABLE + _TYPES + (
    "field", "property", "constant", "variable", "module", "namespace", "package", "enum_member"))))
# Receiver types no repository defines: a method call on one is not name-matched either.
# Languages whose files see each other's types without an import or a module name (a Swift
# module is its target's directory, which the index does not know).
SHARED_NAMESPACE = ("swift",)
BUILTIN_TYPES = ("str", "int", "float", "bool", "bytes", "list", "dict", "set", "tuple", "object",
                 "string", "number", "boolean", "any", "unknown", "Array", "Map", "Set", "Promise",
                 "Date", "RegExp", "Error", "String", "Object", "Integer", "Long", "List",
                 "HashMap", "ArrayList", "StringBuilder", "error", "byte", "rune", "int64",
                 # the standard collections and scalars of Rust, C#, Kotlin and Swift
                 "Vec", "VecDeque", "HashSet", "BTreeMap", "BTreeSet", "Option", "Dictionary",
                 "MutableList", "MutableMap", "MutableSet", "Int", "Boolean", "Double", "Bool")

# Variables a call names (`export const got = create(...)`, `handler = partial(...)`) resolve
# through scopes and imports only: by name alone a variable is too weak a guess.
CALLED_VALUES = ("variable", "constant")
REF_KINDS = {"call": _CALLABLE + CALLED_VALUES, "type_ref": _TYPES, "inherit": _TYPES, "implement": _TYPES,
             "reference": _ANY}
EDGE_KIND = {"call": "calls", "inherit": "inherits", "implement": "implements"}


def kind_rows() -> list[tuple[str, str]]:
    return [(r, s) for r, kinds in REF_KINDS.items() for s in kinds]


def in_list(values: tuple[str, ...]) -> str:
    """`values` as an SQL list of literals: `('a', 'b')`."""
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


def target_key(expr: str) -> str:
    """Separator-neutral form (module_names.key); a JS/Java `new ` before a callee is dropped."""
    folded = f"replace(replace(replace({expr}, '::', '.'), '\\', '.'), '->', '.')"
    return f"trim(CASE WHEN starts_with({expr}, 'new ') THEN substr({folded}, 5) ELSE {folded} END, '.')"


RESOLVE_KINDS = ('calls', 'references', 'inherits', 'implements')
