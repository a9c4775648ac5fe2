"""Go rules: funcs, methods qualified by receiver type, type specs, struct fields, consts."""

from __future__ import annotations

from tree_sitter import Node

from .rules import Def, Ref, Rules, callee_name, one_line, text

_TYPE_KINDS = {"struct_type": "struct", "interface_type": "interface"}


def _receiver_type(node: Node) -> str:
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return ""
    stack = [receiver]
    while stack:
        n = stack.pop()
        if n.type == "type_identifier":
            return text(n)
        stack.extend(reversed(n.named_children))
    return ""


def _top_level(node: Node) -> bool:
    decl = node.parent
    while decl is not None and decl.type in ("const_spec_list", "var_spec_list"):
        decl = decl.parent
    return decl is not None and decl.parent is not None and decl.parent.type == "source_file"


class GoRules(Rules):
    hook_types = frozenset({
        "type_spec", "type_alias", "const_spec", "var_spec", "import_spec", "type_elem"
    })
    definitions = {
        "function_declaration": ("function", ""), "method_declaration": ("method", ""),
        "method_elem": ("method", "method"), "field_declaration": ("field", "field"),
    }
    calls = {"call_expression": "function"}
    plain_calls = frozenset({"call_expression"})
    type_refs = frozenset({"type_identifier", "qualified_type"})

    def definitions_at(self, node: Node, parent_kind: str) -> list[Def]:
        t = node.type
        if t in ("type_spec", "type_alias"):
            name, kind_node = node.child_by_field_name("name"), node.child_by_field_name("type")
            kind = _TYPE_KINDS.get(kind_node.type if kind_node is not None else "", "type_alias")
            return [Def(kind, text(name), name, span_node=self._single_spec(node))] if name else []
        if t in ("const_spec", "var_spec", "field_declaration"):
            if t != "field_declaration" and not _top_level(node):
                return []
            kind = {"const_spec": "constant", "var_spec": "variable"}.get(t, "field")
            names = [n for n in node.children_by_field_name("name") if n.is_named]
            span = self._single_spec(node) if len(names) == 1 else node
            return [Def(kind, text(n), n, scope=False, span_node=span) for n in names]
        d = self.definition(node, parent_kind)
        if d is not None and t == "method_declaration":
            d = Def("method", d.name, d.name_node, qualifier=_receiver_type(node))
        return [d] if d is not None else []

    def _single_spec(self, node: Node) -> Node:
        decl = node.parent
        if decl is not None and decl.type.endswith("_declaration") and decl.named_child_count == 1:
            return decl
        return node

    def signature(self, node: Node, d: Def) -> str:
        if node.type in ("type_spec", "type_alias"):
            kind = node.child_by_field_name("type")
            params = node.child_by_field_name("type_parameters")
            tail = kind.type.removesuffix("_type") if kind is not None and kind.type in _TYPE_KINDS else text(kind)
            eq = " = " if node.type == "type_alias" else " "
            return one_line(f"type {d.name}{text(params)}{eq}{tail}")
        if node.type in ("const_spec", "var_spec", "field_declaration"):
            kind = node.child_by_field_name("type")
            return one_line(text(kind))
        return super().signature(node, d)

    def visibility(self, node: Node, d: Def, parent_kind: str) -> str:
        return "public" if d.name[:1].isupper() else "private"

    def references(self, node: Node) -> list[Ref]:
        t = node.type
        if t == "import_spec":
            path = node.child_by_field_name("path")
            module = text(path).strip('"`')
            return [Ref("import", module, path, module=module, alias=text(node.child_by_field_name("name")))]
        if t == "field_declaration" and node.child_by_field_name("name") is None:
            kind = node.child_by_field_name("type")
            return [Ref("inherit", callee_name(text(kind)).lstrip("*"), kind)] if kind else []
        if t == "type_elem" and node.parent is not None and node.parent.type == "interface_type":
            kids = node.named_children
            if len(kids) == 1 and kids[0].type in ("type_identifier", "qualified_type"):
                return [Ref("inherit", text(kids[0]), kids[0])]
        if t == "type_identifier" and node.parent is not None and node.parent.type == "qualified_type":
            return []
        return super().references(node)


RULES = GoRules()
