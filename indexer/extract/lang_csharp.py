"""C# rules: types, members, one symbol per field declarator, XML doc comments, base lists."""

from __future__ import annotations

import re

from tree_sitter import Node

from .rules import Def, Ref, Rules, callee_name, one_line, text

_XML_TAG = re.compile(r"</?\w+[^>]*?/?>")
_FIELD_HOLDERS = frozenset({"field_declaration", "event_field_declaration"})
_TYPE_NAMES = frozenset({"identifier", "qualified_name", "generic_name"})


def _interface_like(name: str) -> bool:
    return len(name) > 1 and name[0] == "I" and name[1].isupper()


class CSharpRules(Rules):
    hook_types = frozenset({
        "variable_declarator", "using_directive", "base_list", "member_access_expression",
        "generic_name", "type_argument_list", "variable_declaration", "parameter",
        "property_declaration", "method_declaration", "delegate_declaration",
        "local_function_statement", "event_declaration", "indexer_declaration",
        "operator_declaration", "local_declaration_statement", "cast_expression",
        "typeof_expression", "is_pattern_expression", "declaration_expression",
        "catch_declaration", "foreach_statement"
    })
    definitions = {
        "class_declaration": ("class", ""), "interface_declaration": ("interface", ""),
        "struct_declaration": ("struct", ""), "enum_declaration": ("enum", ""),
        "record_declaration": ("class", ""), "record_struct_declaration": ("struct", ""),
        "delegate_declaration": ("type_alias", "type_alias"),
        "method_declaration": ("method", "method"), "constructor_declaration": ("constructor", "constructor"),
        "destructor_declaration": ("destructor", "destructor"),
        "property_declaration": ("property", "property"), "event_declaration": ("field", "field"),
        "enum_member_declaration": ("constant", "constant"),
        "namespace_declaration": ("namespace", ""), "file_scoped_namespace_declaration": ("namespace", ""),
        "local_function_statement": ("function", "function"),
    }
    calls = {"invocation_expression": "function", "object_creation_expression": "type"}
    plain_calls = frozenset({"invocation_expression"})

    def definition(self, node: Node, parent_kind: str) -> Def | None:
        if node.type == "variable_declarator":
            decl = node.parent
            holder = decl.parent if decl is not None else None
            if holder is None or holder.type not in _FIELD_HOLDERS:
                return None
            name = node.child_by_field_name("name")
            kind = "constant" if "const" in self.keywords(holder) else "field"
            span = holder if len([c for c in decl.named_children if c.type == "variable_declarator"]) == 1 else node
            return Def(kind, text(name), name, scope=False, span_node=span) if name else None
        return super().definition(node, parent_kind)

    def _holder(self, node: Node) -> Node:
        if node.type == "variable_declarator" and node.parent is not None and node.parent.parent is not None:
            return node.parent.parent
        return node

    def keywords(self, node: Node) -> list[str]:
        return super().keywords(self._holder(node))

    def doc(self, node: Node, d: Def) -> str:
        return _XML_TAG.sub("", super().doc(self._holder(node), d)).strip()

    def signature(self, node: Node, d: Def) -> str:
        if node.type == "variable_declarator":
            decl = node.parent
            return one_line(f"{text(decl.child_by_field_name('type'))} {d.name}")
        if node.type == "enum_member_declaration":
            return ""
        if node.type == "property_declaration":
            return one_line(f"{text(node.child_by_field_name('type'))} {d.name}")
        return super().signature(node, d)

    def visibility(self, node: Node, d: Def, parent_kind: str) -> str:
        if d.kind == "namespace":
            return ""
        words = self.keywords(node)
        found = [w for w in ("public", "private", "protected", "internal") if w in words]
        if found:
            return " ".join(found)
        if parent_kind in ("interface", "enum"):
            return "public"
        return "private" if parent_kind in self.class_kinds else "internal"

    def references(self, node: Node) -> list[Ref]:
        t = node.type
        if t == "using_directive":
            target = next((c for c in node.named_children if c.type in ("identifier", "qualified_name")
                           and c != node.child_by_field_name("name")), None)
            if target is None:
                return []
            full = text(target)
            return [Ref("import", full, target, module=full, alias=text(node.child_by_field_name("name")))]
        if t == "base_list":
            return self._bases(node)
        if t == "member_access_expression" and node.parent is not None and node.parent.type == "invocation_expression":
            return []
        out = super().references(node)
        for field in ("type", "returns"):
            child = node.child_by_field_name(field)
            if child is not None and child.type in ("identifier", "qualified_name"):
                out.append(Ref("type_ref", text(child), child))
        if t == "generic_name" and not (node.parent is not None and node.parent.type == "object_creation_expression"):
            first = node.named_children[0] if node.named_child_count else None
            if first is not None:
                out.append(Ref("type_ref", text(first), first))
        elif t == "type_argument_list":
            out += [Ref("type_ref", text(c), c) for c in node.named_children if c.type in ("identifier", "qualified_name")]
        return out

    def _bases(self, node: Node) -> list[Ref]:
        owner = node.parent.type if node.parent is not None else ""
        out = []
        for i, c in enumerate(c for c in node.named_children if c.type in _TYPE_NAMES):
            name = callee_name(text(c))
            if owner == "interface_declaration":
                kind = "inherit"
            elif owner == "struct_declaration" or i > 0 or _interface_like(name.rsplit(".", 1)[-1]):
                kind = "implement"
            else:
                kind = "inherit"
            out.append(Ref(kind, name, c))
        return out


RULES = CSharpRules()
