"""Python rules: defs, classes, module/class-level assignments, docstrings, decorators."""

from __future__ import annotations

import inspect

from tree_sitter import Node
from tree_sitter_language_pack import get_language

from .rules import DECLARES, Def, Ref, Rules, callee_name, header_line, node_bytes, one_line, text

# The grammar's field ids, looked up once: a lookup by name scans the field names per call.
_FIELD_IDS = {name: get_language("python").field_id_for_name(name) for name in (
    "left", "right", "type", "name", "function", "object", "attribute", "body", "parameters")}
_LEFT, _RIGHT, _TYPE, _NAME, _FUNCTION, _OBJECT, _ATTRIBUTE, _BODY, _PARAMETERS = _FIELD_IDS.values()

_DECORATOR_MODIFIERS = {
    "staticmethod": "static", "classmethod": "classmethod", "abstractmethod": "abstract",
    "property": "property", "override": "override", "deprecated": "deprecated",
    "cached_property": "property", "abstractproperty": "abstract",
}


def _string_value(node: Node) -> str:
    raw = text(node)
    i = 0
    while i < len(raw) and raw[i] in "rRbBuUfF":
        i += 1
    raw = raw[i:]
    q = raw[:3] if raw[:3] in ('"""', "'''") else raw[:1]
    return inspect.cleandoc(raw[len(q):len(raw) - len(q)] if raw.endswith(q) else raw[len(q):])


def _string_statement(node: Node) -> Node | None:
    """The string literal a statement consists of, if it is just one."""
    if node.type == "expression_statement" and node.named_child_count == 1:
        node = node.named_child(0)
    return node if node.type == "string" else None


def _assigned_names(node: Node) -> list[Node]:
    left = node.child_by_field_id(_LEFT)
    if left is None:
        return []
    if left.type == "identifier":
        return [left]
    if left.type in ("pattern_list", "tuple_pattern"):
        return [c for c in left.named_children if c.type == "identifier"]
    return []


_FLOW = frozenset({
    "expression_statement", "block", "if_statement", "elif_clause", "else_clause", "try_statement",
    "except_clause", "except_group_clause", "finally_clause", "with_statement", "for_statement",
    "while_statement", "match_statement", "case_clause",
})

# kinds of the symbols a function_definition makes (the scopes an assignment can be inside)
_FUNCTION_KINDS = frozenset({"function", "method", "constructor"})


def _declared_type(node: Node | None, constructed: bool) -> str:
    """`Foo` of an annotation `Foo` / `m.Foo`, or of a call `Foo(...)` (a capitalised callee)."""
    if node is None:
        return ""
    if constructed:
        fn = node.child_by_field_id(_FUNCTION) if node.type == "call" else None
        if fn is None or fn.type not in ("identifier", "attribute"):
            return ""
        name = text(fn)
        return name if name.rsplit(".", 1)[-1][:1].isupper() else ""
    inner = node.named_child(0) if node.named_child_count == 1 else None
    return text(inner) if inner is not None and inner.type in ("identifier", "attribute") else ""


def _declares(node: Node) -> list[Ref]:
    """What a typed parameter or an assignment says of a name's type (receivers.DECLARES)."""
    if node.type != "assignment":
        name = node.child_by_field_id(_NAME) if node.type == "typed_default_parameter" else (
            node.named_child(0) if node.named_child_count else None)
        kind = _declared_type(node.child_by_field_id(_TYPE), False)
        return [Ref(DECLARES, kind, name, alias=text(name))] if kind and name is not None \
            and name.type == "identifier" else []
    left = node.child_by_field_id(_LEFT)
    kind = _declared_type(node.child_by_field_id(_TYPE), False) or _declared_type(
        node.child_by_field_id(_RIGHT), True)
    if not kind or left is None:
        return []
    if left.type == "identifier":
        return [Ref(DECLARES, kind, left, alias=text(left))]
    obj, attr = left.child_by_field_id(_OBJECT), left.child_by_field_id(_ATTRIBUTE)
    if left.type == "attribute" and obj is not None and attr is not None and text(obj) in ("self", "cls"):
        return [Ref(DECLARES, kind, attr, module="self", alias=text(attr))]
    return []


class PythonRules(Rules):
    hook_types = frozenset({
        "assignment", "import_statement", "import_from_statement", "decorator",
        "typed_parameter", "typed_default_parameter"
    })
    definitions = {
        "function_definition": ("function", "method"),
        "class_definition": ("class", ""),
    }
    calls = {"call": "function"}
    plain_calls = frozenset({"call"})
    type_refs = frozenset({"type"})
    span_wrappers = frozenset({"decorated_definition"})

    def definitions_at(self, node: Node, parent_kind: str) -> list[Def]:
        t = node.type
        if t == "assignment":
            return self._assignment(node, parent_kind)
        if t not in self.definitions:  # calls, imports...: most of the nodes visited
            return []
        d = super().definition(node, parent_kind)
        if d is None:
            return []
        if d.kind == "method" and d.name == "__init__":
            d.kind = "constructor"
        return [d]

    def _assignment(self, node: Node, parent_kind: str) -> list[Def]:
        """Module- and class-level names (also under if/try/with), and lambdas anywhere."""
        right = node.child_by_field_id(_RIGHT)
        is_lambda = right is not None and right.type == "lambda"
        if not is_lambda and parent_kind in _FUNCTION_KINDS:
            return []  # the owner is that function or a node inside it: no module/class name
        owner = node.parent
        while owner is not None and owner.type in _FLOW:
            owner = owner.parent
        if owner is None:
            return []
        out = []
        for name_node in _assigned_names(node):
            name = text(name_node)
            if owner.type == "class_definition":
                kind = "method" if is_lambda else "field"
            elif owner.type == "module":
                kind = "function" if is_lambda else (
                    "constant" if name.isupper() or name.lstrip("_").isupper() else "variable")
            elif is_lambda and owner.type == "function_definition":
                kind = "function"
            else:
                continue
            out.append(Def(kind, name, name_node, scope=False))
        return out

    def name_node(self, node: Node) -> Node | None:
        return node.child_by_field_id(_NAME)

    def body(self, node: Node) -> Node | None:
        return node.child_by_field_id(_BODY)

    def signature(self, node: Node, d: Def) -> str:
        if node.type == "assignment":
            right = node.child_by_field_id(_RIGHT)
            if right is not None and right.type == "lambda":
                params = right.child_by_field_id(_PARAMETERS)
                return one_line(f"lambda {text(params)}".strip())
            kind_node = node.child_by_field_id(_TYPE)
            return one_line(text(kind_node)) if kind_node is not None else ""
        body = node.child_by_field_id(_BODY)
        raw = node_bytes(node, body.start_byte if body is not None else None)
        if b"#" in raw:  # maybe a comment among the header's children, for the base to cut
            return super().signature(node, d)
        return header_line(raw, d.name)

    def doc(self, node: Node, d: Def) -> str:
        """The docstring; for an assignment, the string statement after it (PEP 257 attribute
        docstring) or the comments directly above it."""
        if node.type == "assignment":
            parent = node.parent  # a node's parent is searched for from the root: once
            stmt = parent if parent is not None and parent.type == "expression_statement" else node
            after = stmt.next_named_sibling
            found = _string_statement(after) if after is not None else None
            if found is not None and after.start_point.row <= stmt.end_point.row + 1:
                return _string_value(found)
            holder = stmt.parent
            if stmt.prev_named_sibling is None and holder is not None and holder.type == "block":
                stmt = holder  # comments before a body's first statement hang on its owner
            return super().doc(stmt, Def(d.kind, d.name, d.name_node))
        body = node.child_by_field_id(_BODY)
        first = body.named_child(0) if body is not None and body.named_child_count else None
        first = _string_statement(first) if first is not None else None
        return _string_value(first) if first is not None else ""

    def _decorators(self, node: Node) -> list[str]:
        wrapper = node.parent
        if wrapper is None or wrapper.type != "decorated_definition":
            return []
        out = []
        for dec in wrapper.named_children:
            if dec.type == "decorator" and dec.named_child_count:
                out.append(callee_name(text(dec.named_child(0))).rsplit(".", 1)[-1])
        return out

    def modifiers(self, node: Node, d: Def) -> tuple[str, ...]:
        mods: list[str] = []
        first = node.child(0) if node.type == "function_definition" and node.child_count else None
        if first is not None and first.type != "def" and text(first) == "async":
            mods.append("async")
        for name in self._decorators(node):
            mod = _DECORATOR_MODIFIERS.get(name)
            if mod and mod not in mods:
                mods.append(mod)
        return tuple(mods)

    def visibility(self, node: Node, d: Def, parent_kind: str) -> str:
        n = d.name
        if n.startswith("__") and n.endswith("__"):
            return "public"
        return "private" if n.startswith("_") else "public"

    def references(self, node: Node) -> list[Ref]:
        t = node.type
        if t == "function_definition":  # most of the nodes visited
            return []
        if t == "assignment" or t == "typed_parameter" or t == "typed_default_parameter":
            return _declares(node)
        if t == "call":
            return self.call_references(node, "function")
        if t == "import_statement":
            return [self._import(n, "") for n in node.children_by_field_name("name")]
        if t == "import_from_statement":
            module = text(node.child_by_field_name("module_name"))
            names = node.children_by_field_name("name")
            if not names:
                star = [c for c in node.named_children if c.type == "wildcard_import"]
                return [Ref("import", "*", star[0], module=module)] if star else []
            return [self._import(n, module) for n in names]
        if t == "class_definition":
            supers = node.child_by_field_name("superclasses")
            if supers is None:
                return []
            return [Ref("inherit", callee_name(text(c)), c) for c in supers.named_children
                    if c.type in ("identifier", "attribute", "subscript", "call")]
        if t == "decorator" and node.named_child_count:
            inner = node.named_child(0)
            if inner.type in ("identifier", "attribute"):
                return [Ref("call", text(inner), inner)]
        return super().references(node)

    def _import(self, n: Node, module: str) -> Ref:
        alias = ""
        if n.type == "aliased_import":
            alias = text(n.child_by_field_name("alias"))
            n = n.child_by_field_id(_NAME)
        target = text(n)
        return Ref("import", target, n, module=module or target, alias=alias)

    def type_ref(self, node: Node) -> list[Ref]:
        out = []
        stack = list(reversed(node.named_children))
        while stack:
            n = stack.pop()
            if n.type in ("identifier", "attribute"):
                out.append(Ref("type_ref", text(n), n))
            elif n.type != "type":
                stack.extend(reversed(n.named_children))
        return out


RULES = PythonRules()
