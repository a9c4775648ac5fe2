"""Swift rules: class/struct/enum/actor/extension declarations, protocols, properties, inits."""

from __future__ import annotations

from tree_sitter import Node

from .rules import Def, Ref, Rules, callee_name, text

_DECL_KEYWORDS = {"class": "class", "struct": "struct", "enum": "enum", "actor": "class",
                  "extension": "extension", "protocol": "interface"}


def _names(node: Node) -> list[Node]:
    """Bound identifiers of a property declaration (`let a, b: Int`)."""
    out = []
    for pattern in node.children_by_field_name("name"):
        ident = pattern.child_by_field_name("bound_identifier") if pattern.type == "pattern" else None
        if ident is not None:
            out.append(ident)
    return out


class SwiftRules(Rules):
    hook_types = frozenset({
        "class_declaration", "protocol_declaration", "property_declaration",
        "protocol_property_declaration", "enum_entry", "init_declaration", "deinit_declaration",
        "subscript_declaration", "import_declaration", "inheritance_specifier", "user_type"
    })
    definitions = {
        "function_declaration": ("function", "method"), "protocol_function_declaration": ("method", "method"),
        "typealias_declaration": ("type_alias", "type_alias"), "associatedtype_declaration": ("type_alias", "type_alias"),
    }
    calls = {"call_expression": ""}
    plain_calls = frozenset({"call_expression"})
    default_visibility = "internal"

    def definitions_at(self, node: Node, parent_kind: str) -> list[Def]:
        t = node.type
        if t in ("class_declaration", "protocol_declaration"):
            keyword = next((text(c) for c in node.children if not c.is_named and text(c) in _DECL_KEYWORDS), "class")
            name = node.child_by_field_name("name")
            return [Def(_DECL_KEYWORDS[keyword], callee_name(text(name)), name)] if name is not None else []
        if t in ("property_declaration", "protocol_property_declaration"):
            in_type = parent_kind in self.class_kinds or parent_kind == "extension"
            binding = self._binding(node)
            kind = "property" if in_type else ("constant" if binding == "let" else "variable")
            return [Def(kind, text(n), n, scope=False) for n in self._property_names(node)]
        if t == "enum_entry":
            return [Def("constant", text(n), n, scope=False) for n in node.children_by_field_name("name")]
        if t in ("init_declaration", "deinit_declaration", "subscript_declaration"):
            keyword = next((c for c in node.children if not c.is_named), None)
            if keyword is None:
                return []
            kind = {"init": "constructor", "deinit": "destructor"}.get(text(keyword), "method")
            return [Def(kind, text(keyword), keyword)]
        d = self.definition(node, parent_kind)
        return [d] if d is not None else []

    def _binding(self, node: Node) -> str:
        for c in node.children:
            if c.type == "value_binding_pattern":
                return text(c).split()[0] if text(c) else ""
            if c.type == "pattern":
                inner = next((k for k in c.children if k.type == "value_binding_pattern"), None)
                if inner is not None:
                    return text(inner)
        return ""

    def _property_names(self, node: Node) -> list[Node]:
        names = _names(node)
        if not names and node.type == "protocol_property_declaration":
            pattern = node.child_by_field_name("name")
            ident = pattern.child_by_field_name("bound_identifier") if pattern is not None else None
            names = [ident] if ident is not None else []
        return names

    def body(self, node: Node) -> Node | None:
        found = super().body(node)
        if found is None and node.type == "property_declaration":
            return node.child_by_field_name("computed_value")
        return found

    def signature(self, node: Node, d: Def) -> str:
        return "" if node.type == "enum_entry" else super().signature(node, d)

    def modifiers(self, node: Node, d: Def) -> tuple[str, ...]:
        return tuple(m for m in super().modifiers(node, d) if m != "case")

    def visibility(self, node: Node, d: Def, parent_kind: str) -> str:
        vis = super().visibility(node, d, parent_kind)
        if parent_kind == "interface":
            return "public"
        return vis

    def keywords(self, node: Node) -> list[str]:
        words = super().keywords(node)
        mods = next((c for c in node.children if c.type == "modifiers"), None)
        if mods is not None:
            words += [text(c).split("(")[0] for c in mods.named_children if c.type == "visibility_modifier"]
        return words

    def references(self, node: Node) -> list[Ref]:
        t = node.type
        if t == "import_declaration":
            ident = next((c for c in node.named_children if c.type == "identifier"), None)
            return [Ref("import", text(ident), ident, module=text(ident))] if ident is not None else []
        if t == "inheritance_specifier":
            return self._inheritance(node)
        if t == "user_type":
            if node.parent is not None and node.parent.type in ("user_type", "attribute"):
                return []
            return [Ref("type_ref", callee_name(text(node)), node)]
        return super().references(node)

    def _inheritance(self, node: Node) -> list[Ref]:
        owner = node.parent
        target = node.child_by_field_name("inherits_from") or (node.named_children[0] if node.named_child_count else None)
        if owner is None or target is None:
            return []
        keyword = next((text(c) for c in owner.children if not c.is_named and text(c) in _DECL_KEYWORDS), "")
        specs = [c for c in owner.children if c.type == "inheritance_specifier"]
        if owner.type == "protocol_declaration" or keyword == "protocol":
            kind = "inherit"
        elif keyword == "class" and specs and specs[0] == node:
            kind = "inherit"
        else:
            kind = "implement"
        return [Ref(kind, callee_name(text(target)), target)]


RULES = SwiftRules()
