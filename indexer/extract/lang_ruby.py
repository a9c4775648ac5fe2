"""Ruby rules: classes, modules, methods, constants, attr_* properties, require and mixins."""

from __future__ import annotations

from tree_sitter import Node

from .rules import Def, Ref, Rules, callee_name, strip_comment, text

_ATTRS = frozenset({"attr_reader", "attr_writer", "attr_accessor"})
_MIXINS = frozenset({"include", "extend", "prepend"})
_IMPORTS = frozenset({"require", "require_relative", "load", "autoload"})
_VISIBILITY = frozenset({"private", "protected", "public"})


def _call_name(node: Node) -> str:
    return text(node.child_by_field_name("method"))


def _args(node: Node) -> list[Node]:
    args = node.child_by_field_name("arguments")
    return list(args.named_children) if args is not None else []


class RubyRules(Rules):
    hook_types = frozenset({"call", "assignment", "superclass", "singleton_class"})
    definitions = {"class": ("class", ""), "module": ("module", ""), "method": ("function", "method"),
                   "singleton_method": ("method", "method"), "singleton_class": ("class", "")}
    class_kinds = frozenset({"class", "module"})

    def definitions_at(self, node: Node, parent_kind: str) -> list[Def]:
        t = node.type
        if t == "call" and node.child_by_field_name("receiver") is None and _call_name(node) in _ATTRS:
            return [Def("property", text(a).lstrip(":"), a, scope=False)
                    for a in _args(node) if a.type in ("simple_symbol", "string")]
        if t == "assignment":
            left = node.child_by_field_name("left")
            holder = node.parent
            if left is not None and left.type == "constant" and holder is not None and holder.type in ("program", "body_statement") \
                    and (holder.type == "program" or holder.parent is not None and holder.parent.type in ("class", "module")):
                return [Def("constant", text(left), left, scope=False)]
            return []
        if t == "singleton_class":
            return []
        d = self.definition(node, parent_kind)
        if d is None:
            return []
        if t == "method" and d.name == "initialize" and parent_kind == "class":
            d = Def("constructor", d.name, d.name_node)
        if t == "singleton_method":
            d = Def("method", d.name, d.name_node, extra=("static",))
        return [d]

    def doc(self, node: Node, d: Def) -> str:
        found = super().doc(node, d)
        if found or node.prev_named_sibling is not None:
            return found
        body = node.parent
        if body is None or body.type != "body_statement":
            return ""
        parts = []
        sib = body.prev_named_sibling
        while sib is not None and sib.type == "comment" and sib.end_point.row >= node.start_point.row - 1 - len(parts):
            parts.append(strip_comment(text(sib)))
            sib = sib.prev_named_sibling
        return "\n".join(reversed(parts))

    def signature(self, node: Node, d: Def) -> str:
        if node.type in ("call", "assignment"):
            return ""
        return super().signature(node, d).split(";")[0].strip()

    def visibility(self, node: Node, d: Def, parent_kind: str) -> str:
        if node.type not in ("method", "call"):
            return "public"
        sib = node.prev_named_sibling
        while sib is not None:
            if sib.type == "identifier" and text(sib) in _VISIBILITY:
                return text(sib)
            if sib.type == "call" and _call_name(sib) in _VISIBILITY and not _args(sib):
                return _call_name(sib)
            sib = sib.prev_named_sibling
        parent = node.parent
        if parent is not None and parent.type == "argument_list" and parent.parent is not None:
            name = _call_name(parent.parent)
            if name in _VISIBILITY:
                return name
        return "public"

    def references(self, node: Node) -> list[Ref]:
        t = node.type
        if t == "call":
            return self._call(node)
        if t == "superclass":
            return [Ref("inherit", callee_name(text(c)), c) for c in node.named_children]
        return []

    def _call(self, node: Node) -> list[Ref]:
        name = _call_name(node)
        receiver = node.child_by_field_name("receiver")
        method = node.child_by_field_name("method")
        if method is None:
            return []
        if receiver is None and name in _IMPORTS:
            strings = [a for a in _args(node) if a.type == "string"]
            return [Ref("import", text(s).strip("'\""), s, module=text(s).strip("'\"")) for s in strings]
        if receiver is None and name in _MIXINS:
            return [Ref("implement", callee_name(text(a)), a) for a in _args(node)
                    if a.type in ("constant", "scope_resolution")]
        if receiver is None and name in _ATTRS | _VISIBILITY:
            return []
        target = f"{callee_name(text(receiver))}.{name}" if receiver is not None else name
        return [Ref("call", target, method)]


RULES = RubyRules()
