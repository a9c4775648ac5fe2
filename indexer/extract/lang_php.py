"""PHP rules: classes, interfaces, traits, enums, functions, methods, properties, constants."""

from __future__ import annotations

import re

from tree_sitter import Node

from .rules import Def, Ref, Rules, callee_name, one_line, text

_ELEMENTS = {"property_element": "field", "const_element": "constant"}
_INCLUDES = frozenset({"require_expression", "require_once_expression", "include_expression",
                       "include_once_expression"})


def _statement_span(node: Node) -> tuple[int, int] | None:
    """`namespace A;` names the file's module; when a file has several, each holds the
    declarations up to the next (its byte range), so `A\\User` and `B\\User` stay apart."""
    parent = node.parent
    statements = [c for c in parent.named_children if c.type == "namespace_definition"
                  and c.child_by_field_name("body") is None] if parent is not None else []
    if len(statements) < 2:
        return None
    after = [c.start_byte for c in statements if c.start_byte > node.start_byte]
    return node.start_byte, after[0] if after else parent.end_byte


def _php_name(node: Node | None) -> str:
    return callee_name(text(node).lstrip("$").replace("\\", "."))


def _descendants(node: Node) -> list[Node]:
    out, stack = [], list(reversed(node.named_children))
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.named_children))
    return out


_CONSTANT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _define(node: Node) -> Def | None:
    """`define('NAME', value)`: a global constant named by a string literal."""
    fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
    if fn is None or args is None or text(fn).lstrip("\\").lower() != "define" or not args.named_children:
        return None
    literal = next((c for c in args.named_children[0].named_children if c.type in ("string", "encapsed_string")), None)
    name = text(literal)[1:-1] if literal is not None else ""
    return Def("constant", name, literal, scope=False) if _CONSTANT_NAME.fullmatch(name) else None


class PhpRules(Rules):
    hook_types = frozenset({
        "namespace_definition", "property_element", "const_element", "member_call_expression",
        "nullsafe_member_call_expression", "scoped_call_expression",
        "object_creation_expression", "namespace_use_clause", "require_expression",
        "require_once_expression", "include_expression", "include_once_expression",
        "base_clause", "class_interface_clause", "use_declaration", "named_type"
    })
    definitions = {
        "class_declaration": ("class", ""), "interface_declaration": ("interface", ""),
        "trait_declaration": ("trait", ""), "enum_declaration": ("enum", ""),
        "function_definition": ("function", ""), "method_declaration": ("method", "method"),
        "enum_case": ("constant", "constant"),
    }
    calls = {"function_call_expression": "function"}
    default_visibility = "public"

    def definition(self, node: Node, parent_kind: str) -> Def | None:
        t = node.type
        if t == "namespace_definition":
            name = node.child_by_field_name("name")
            if name is None:
                return None
            if node.child_by_field_name("body") is not None:
                return Def("namespace", _php_name(name), name)
            span = _statement_span(node)
            return Def("namespace", _php_name(name), name, scope=span is not None, span_range=span)
        if t in _ELEMENTS:
            name = node.child_by_field_name("name") or next(
                (c for c in node.named_children if c.type in ("name", "variable_name")), None)
            if name is None:
                return None
            holder = node.parent
            single = holder is not None and sum(c.type == t for c in holder.named_children) == 1
            return Def(_ELEMENTS[t], text(name).lstrip("$"), name, scope=False,
                       span_node=holder if single else None)
        if t == "function_call_expression":
            return _define(node)
        d = super().definition(node, parent_kind)
        if d is not None and d.kind == "method" and d.name == "__construct":
            return Def("constructor", d.name, d.name_node)
        return d

    def _holder(self, node: Node) -> Node:
        return node.parent if node.type in _ELEMENTS and node.parent is not None else node

    def keywords(self, node: Node) -> list[str]:
        return super().keywords(self._holder(node))

    def doc(self, node: Node, d: Def) -> str:
        return super().doc(self._holder(node), d)

    def signature(self, node: Node, d: Def) -> str:
        if node.type in _ELEMENTS:
            kind = self._holder(node).child_by_field_name("type")
            return one_line(f"{text(kind)} ${d.name}" if node.type == "property_element" else "").strip()
        if node.type == "enum_case":
            return ""
        return super().signature(node, d)

    def modifiers(self, node: Node, d: Def) -> tuple[str, ...]:
        return tuple(m for m in super().modifiers(node, d) if m not in ("const", "case"))

    def visibility(self, node: Node, d: Def, parent_kind: str) -> str:
        if d.kind == "namespace":
            return ""
        return super().visibility(node, d, parent_kind)

    def references(self, node: Node) -> list[Ref]:
        t = node.type
        if t == "member_call_expression" or t == "nullsafe_member_call_expression":
            obj, name = node.child_by_field_name("object"), node.child_by_field_name("name")
            return [Ref("call", f"{_php_name(obj)}.{text(name)}", name)] if name is not None else []
        if t == "scoped_call_expression":
            scope, name = node.child_by_field_name("scope"), node.child_by_field_name("name")
            return [Ref("call", f"{_php_name(scope)}.{text(name)}", name)] if name is not None else []
        if t == "object_creation_expression":
            cls = next((c for c in node.named_children if c.type in ("name", "qualified_name")), None)
            return [Ref("call", _php_name(cls), cls)] if cls is not None else []
        if t == "namespace_use_clause":
            return self._use(node)
        if t in _INCLUDES:
            path = next((c for c in _descendants(node) if c.type in ("string", "encapsed_string")), None)
            if path is not None:
                p = text(path).strip("'\"")
                return [Ref("import", p, path, module=p)]
            return []
        if t in ("base_clause", "class_interface_clause"):
            kind = "implement" if t == "class_interface_clause" else "inherit"
            return [Ref(kind, _php_name(c), c) for c in node.named_children if c.type in ("name", "qualified_name")]
        if t == "use_declaration":
            return [Ref("implement", _php_name(c), c) for c in node.named_children if c.type in ("name", "qualified_name")]
        if t == "named_type":
            return [Ref("type_ref", _php_name(node), node)]
        if t == "function_call_expression":
            fn = node.child_by_field_name("function")
            return [Ref("call", _php_name(fn), fn)] if fn is not None else []
        return []

    def _use(self, node: Node) -> list[Ref]:
        target = next((c for c in node.named_children if c.type in ("qualified_name", "name")
                       and c != node.child_by_field_name("alias")), None)
        if target is None:
            return []
        full = _php_name(target)
        group = node.parent
        if group is not None and group.type == "namespace_use_group" and group.parent is not None:
            prefix = next((c for c in group.parent.named_children if c.type == "namespace_name"), None)
            if prefix is not None:
                full = f"{_php_name(prefix)}.{full}"
        module, _, name = full.rpartition(".")
        return [Ref("import", name, target, module=module, alias=text(node.child_by_field_name("alias")))]


RULES = PhpRules()
