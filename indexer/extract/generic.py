"""Rules for languages without their own module: a node whose type names a kind of definition
(`function_definition`, `class_declaration`, `message`, `FnProto`...) and that has a name
becomes a symbol; call-like nodes become call references."""

from __future__ import annotations

import re

from tree_sitter import Node

from .rules import Def, Ref, Rules, callee_name, text

_KIND_WORDS = (
    ("class", "class"), ("struct", "struct"), ("interface", "interface"), ("trait", "trait"),
    ("protocol", "interface"), ("enum", "enum"), ("module", "module"), ("namespace", "namespace"),
    ("package", "module"), ("macro", "macro"), ("method", "method"), ("constructor", "constructor"),
    ("function", "function"), ("func", "function"), ("fn", "function"), ("subroutine", "function"),
    ("fun_decl", "function"), ("procedure", "function"), ("rule", "function"),
    ("message", "struct"), ("service", "interface"), ("rpc", "method"), ("type", "type_alias"),
    ("const", "constant"), ("field", "field"), ("property", "property"), ("variable", "variable"),
    ("value", "variable"), ("var", "variable"), ("let", "variable"),
)
_SUFFIX = re.compile(r"(_definition|_declaration|_interface|_implementation|_declaration_statement|_item|_specifier|_decl|"
                     r"_binding|_statement|_signature|Decl|Proto|Def|_def)$")
_BARE = frozenset({"function", "message", "service", "rpc", "enum", "class", "module", "method"})
_NAME_FIELDS = ("name", "function", "variable", "pattern")
NAMEABLE = frozenset({
    "identifier", "name", "type_identifier", "word", "constant", "property_identifier",
    "field_identifier", "simple_identifier", "scoped_identifier", "dotted_name", "message_name",
    "enum_name", "service_name", "rpc_name", "bareword", "symbol", "atom", "value_name",
    "type_constructor", "variable", "IDENTIFIER", "dot_index_expression", "constant_identifier",
    "method_index_expression", "module_name", "class_name", "function_name", "tag_name",
})
_CALLS = frozenset({"call_expression", "call", "function_call", "method_invocation",
                    "invocation_expression", "function_call_expression", "method_call"})
_CALLEE_FIELDS = ("function", "target", "name", "method", "callee")


def kind_from_type(node_type: str) -> str:
    low = node_type.lower()
    for word, kind in _KIND_WORDS:
        if word in low:
            return kind
    return ""


def _name_node(node: Node) -> Node | None:
    for field in _NAME_FIELDS:
        found = node.child_by_field_name(field)
        if found is not None and found.type in NAMEABLE:
            return found
    for child in node.named_children[:3]:
        if child.type in NAMEABLE:
            return child
        if child.type.endswith("_name") and child.named_child_count == 1 and child.named_children[0].type in NAMEABLE:
            return child.named_children[0]
    return None


def _has_fields(node: Node) -> bool:
    return any(node.field_name_for_child(i) for i in range(node.child_count))


class GenericRules(Rules):
    hook_types = None  # node types are matched by pattern: look at every node

    def definition(self, node: Node, parent_kind: str) -> Def | None:
        t = node.type
        if not (_SUFFIX.search(t) or t in _BARE):
            return None
        kind = kind_from_type(t)
        if not kind:
            return None
        name = _name_node(node) if t not in _BARE or not _has_fields(node) else node.child_by_field_name("name")
        if name is None or name.type not in NAMEABLE:
            return None
        label = text(name).strip("\"'")
        if not label or "\n" in label or len(label) > 120:
            return None
        if kind == "function" and parent_kind in self.class_kinds:
            kind = "method"
        return Def(kind, label, name)

    def references(self, node: Node) -> list[Ref]:
        if node.type not in _CALLS:
            return []
        callee = next((c for f in _CALLEE_FIELDS if (c := node.child_by_field_name(f)) is not None), None)
        if callee is None and node.named_child_count:
            callee = node.named_children[0]
        if callee is None or callee.child_count > 12:
            return []
        name = callee_name(text(callee))
        return [Ref("call", name, callee)] if name and "\n" not in name else []
