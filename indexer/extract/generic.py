"""Rules for languages without their own module: any node whose type ends in a definition-ish
suffix and that has a `name` field becomes a symbol; its kind comes from the node type."""

from __future__ import annotations

from tree_sitter import Node

from .rules import Def, Rules, text

_SUFFIXES = ("_definition", "_declaration", "_item", "_specifier", "_statement")
_KIND_WORDS = (
    ("class", "class"), ("struct", "struct"), ("interface", "interface"), ("trait", "trait"),
    ("enum", "enum"), ("module", "module"), ("namespace", "namespace"), ("macro", "macro"),
    ("method", "method"), ("constructor", "constructor"), ("function", "function"),
    ("func", "function"), ("type", "type_alias"), ("const", "constant"), ("field", "field"),
    ("property", "property"), ("variable", "variable"), ("var", "variable"), ("let", "variable"),
    ("rule", "function"), ("section", "module"), ("message", "struct"), ("service", "interface"),
)
_NAMEABLE = frozenset({"identifier", "name", "type_identifier", "word", "constant",
                       "property_identifier", "field_identifier", "simple_identifier",
                       "scoped_identifier", "dotted_name", "string", "message_name", "enum_name",
                       "service_name", "rpc_name"})


def kind_from_type(node_type: str) -> str:
    for word, kind in _KIND_WORDS:
        if word in node_type:
            return kind
    return ""


class GenericRules(Rules):
    hook_types = None  # node types are matched by suffix: look at every node
    calls = {"call_expression": "function", "call": "function", "function_call": "name"}

    def definition(self, node: Node, parent_kind: str) -> Def | None:
        t = node.type
        if not t.endswith(_SUFFIXES):
            return None
        kind = kind_from_type(t)
        if not kind:
            return None
        name = node.child_by_field_name("name")
        if name is None or name.type not in _NAMEABLE or "\n" in text(name):
            return None
        if kind == "function" and parent_kind in self.class_kinds:
            kind = "method"
        return Def(kind, text(name).strip("\"'"), name)
