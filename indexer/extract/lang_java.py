"""Java rules: types, members, fields (one symbol per declarator), annotations as modifiers."""

from __future__ import annotations

from tree_sitter import Node

from .rules import Def, Ref, Rules, callee_name, one_line, package_definition, text

_FIELD_HOLDERS = frozenset({"field_declaration", "constant_declaration"})


def member_call(node: Node) -> list[Ref]:
    """`obj.name(...)` calls whose grammar splits the receiver and the method name."""
    name = node.child_by_field_name("name")
    if name is None:
        return []
    obj = node.child_by_field_name("object")
    target = f"{callee_name(text(obj))}.{text(name)}" if obj is not None else text(name)
    return [Ref("call", target, name)]


class JavaRules(Rules):
    hook_types = frozenset({
        "variable_declarator", "method_invocation", "import_declaration", "superclass",
        "super_interfaces", "extends_interfaces", "package_declaration"
    })
    definitions = {
        "class_declaration": ("class", ""), "interface_declaration": ("interface", ""),
        "enum_declaration": ("enum", ""), "record_declaration": ("class", ""),
        "annotation_type_declaration": ("interface", ""),
        "method_declaration": ("method", "method"), "constructor_declaration": ("constructor", "constructor"),
        "compact_constructor_declaration": ("constructor", "constructor"),
        "annotation_type_element_declaration": ("method", "method"),
        "enum_constant": ("constant", "constant"),
    }
    calls = {"object_creation_expression": "type", "explicit_constructor_invocation": "constructor"}
    plain_calls = frozenset({"object_creation_expression", "explicit_constructor_invocation"})
    type_refs = frozenset({"type_identifier", "scoped_type_identifier"})
    default_visibility = "package"

    def definition(self, node: Node, parent_kind: str) -> Def | None:
        if node.type == "package_declaration":
            return package_definition(node)
        if node.type == "variable_declarator":
            holder = node.parent
            if holder is None or holder.type not in _FIELD_HOLDERS:
                return None
            name = node.child_by_field_name("name")
            words = self.keywords(holder)
            kind = "constant" if ("static" in words and "final" in words) or holder.type == "constant_declaration" else "field"
            span = holder if len(holder.children_by_field_name("declarator")) == 1 else node
            return Def(kind, text(name), name, scope=False, span_node=span) if name else None
        return super().definition(node, parent_kind)

    def _holder(self, node: Node) -> Node:
        return node.parent if node.type == "variable_declarator" and node.parent is not None else node

    def keywords(self, node: Node) -> list[str]:
        return super().keywords(self._holder(node))

    def signature(self, node: Node, d: Def) -> str:
        if node.type == "variable_declarator":
            return one_line(f"{text(self._holder(node).child_by_field_name('type'))} {d.name}")
        if node.type == "enum_constant":
            return ""
        return super().signature(node, d)

    def modifiers(self, node: Node, d: Def) -> tuple[str, ...]:
        mods = list(super().modifiers(node, d))
        mods_node = next((c for c in self._holder(node).children if c.type == "modifiers"), None)
        if mods_node is not None and "@Override" in text(mods_node):
            mods.append("override")
        return tuple(mods)

    def visibility(self, node: Node, d: Def, parent_kind: str) -> str:
        if d.kind == "package":
            return ""
        explicit = super().visibility(node, d, "")
        if explicit != self.default_visibility:
            return explicit
        if parent_kind == "interface" or node.type == "enum_constant":
            return "public"
        return explicit

    def references(self, node: Node) -> list[Ref]:
        t = node.type
        if t == "method_invocation":
            return member_call(node)
        if t == "import_declaration":
            path = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None)
            if path is None:
                return []
            full = text(path)
            if any(c.type == "asterisk" for c in node.named_children):
                return [Ref("import", "*", path, module=full)]
            module, _, name = full.rpartition(".")
            return [Ref("import", name, path, module=module)]
        if t == "superclass":
            return [Ref("inherit", callee_name(text(c)), c) for c in node.named_children]
        if t in ("super_interfaces", "extends_interfaces"):
            kind = "implement" if t == "super_interfaces" else "inherit"
            return [Ref(kind, callee_name(text(c)), c) for tl in node.named_children for c in tl.named_children]
        if t == "type_identifier" and node.parent is not None and node.parent.type in (
                "scoped_type_identifier", "type_parameter"):
            return []
        return super().references(node)


RULES = JavaRules()
