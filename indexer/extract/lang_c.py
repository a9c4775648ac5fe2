"""C and C++ rules: declarator chains, out-of-class `A::f` methods, access sections, macros."""

from __future__ import annotations

from tree_sitter import Node

from .rules import DEPRECATED, Def, Ref, Rules, callee_name, one_line, text

_WRAPPING_DECLARATORS = frozenset({
    "pointer_declarator", "reference_declarator", "function_declarator", "array_declarator",
    "init_declarator", "parenthesized_declarator", "attributed_declarator",
})
_NAMES = frozenset({"identifier", "field_identifier", "qualified_identifier", "destructor_name",
                    "operator_name", "type_identifier"})
_TYPES = {"class_specifier": "class", "struct_specifier": "struct", "union_specifier": "union",
          "enum_specifier": "enum"}
_SCOPES = frozenset({"translation_unit", "declaration_list", "field_declaration_list",
                     "linkage_specification", "preproc_if", "preproc_ifdef", "preproc_else",
                     "preproc_elif", "template_declaration"})


def declarator_name(node: Node | None) -> tuple[Node | None, bool]:
    """The name node at the end of a declarator chain, and whether it declares a function."""
    is_function = False
    while node is not None and node.type in _WRAPPING_DECLARATORS:
        is_function = is_function or node.type == "function_declarator"
        node = node.child_by_field_name("declarator")
    return (node, is_function) if node is not None and node.type in _NAMES else (None, is_function)


def _split_qualified(name: Node) -> tuple[str, str, Node]:
    """`a::B::f` -> ("a.B", "f", <f node>)."""
    scopes: list[str] = []
    while name.type == "qualified_identifier":
        scope, inner = name.child_by_field_name("scope"), name.child_by_field_name("name")
        if scope is not None:
            scopes.append(callee_name(text(scope)))
        if inner is None:
            break
        name = inner
    return ".".join(p for p in scopes if p), text(name), name


class CRules(Rules):
    hook_types = frozenset({
        "class_specifier", "struct_specifier", "union_specifier", "enum_specifier",
        "type_definition", "function_definition", "declaration", "field_declaration",
        "preproc_include", "base_class_clause", "qualified_identifier", "using_declaration"
    })
    definitions = {"namespace_definition": ("namespace", ""), "preproc_def": ("macro", ""),
                   "preproc_function_def": ("macro", ""), "enumerator": ("constant", "constant"),
                   "alias_declaration": ("type_alias", "type_alias")}
    class_kinds = frozenset({"class", "struct", "union"})
    calls = {"call_expression": "function", "new_expression": "type"}
    plain_calls = frozenset({"call_expression", "new_expression"})
    type_refs = frozenset({"type_identifier"})
    span_wrappers = frozenset({"template_declaration"})

    def definitions_at(self, node: Node, parent_kind: str) -> list[Def]:
        t = node.type
        if t in _TYPES:
            name = node.child_by_field_name("name")
            if name is None or node.child_by_field_name("body") is None:
                return []
            return [Def(_TYPES[t], text(name), name)]
        if t == "type_definition":
            return [Def("type_alias", text(n), n, scope=False)
                    for n, _ in map(declarator_name, node.children_by_field_name("declarator")) if n is not None]
        if t in ("function_definition", "declaration", "field_declaration"):
            return self._declarators(node, parent_kind)
        d = self.definition(node, parent_kind)
        return [d] if d is not None else []

    def _declarators(self, node: Node, parent_kind: str) -> list[Def]:
        holder = node.parent
        if holder is not None and holder.type == "template_declaration":
            holder = holder.parent
        if node.type != "function_definition" and (holder is None or holder.type not in _SCOPES):
            return []
        out = []
        for decl in node.children_by_field_name("declarator"):
            name, is_function = declarator_name(decl)
            if name is None:
                continue
            qualifier, leaf, leaf_node = _split_qualified(name)
            in_class = parent_kind in self.class_kinds
            if is_function:
                kind = "method" if in_class or qualifier else "function"
                owner = (qualifier.rsplit(".", 1)[-1] if qualifier else "")
                if leaf.startswith("~") or name.type == "destructor_name":
                    kind = "destructor"
                elif in_class and leaf == self._class_name(node) or owner and owner == leaf:
                    kind = "constructor"
                extra = () if node.type == "function_definition" else ("prototype",)
                out.append(Def(kind, leaf, leaf_node, qualifier=qualifier, extra=extra))
            elif "typedef" not in (words := self.keywords(node)):
                kind = "field" if in_class or qualifier else "variable"
                if kind == "variable" and ("const" in words or "constexpr" in words):
                    kind = "constant"
                out.append(Def(kind, leaf, leaf_node, qualifier=qualifier, scope=False))
        return out

    def _class_name(self, node: Node) -> str:
        n = node.parent
        while n is not None and n.type not in _TYPES:
            n = n.parent
        return text(n.child_by_field_name("name")) if n is not None else ""

    def keywords(self, node: Node) -> list[str]:
        words = super().keywords(node)
        for child in node.children:
            if child.type in ("virtual", "explicit", "inline") or child.type == "virtual_function_specifier":
                words.append(text(child))
        for decl in node.children_by_field_name("declarator"):
            stack = [decl]
            while stack:
                n = stack.pop()
                if n.type in ("virtual_specifier", "type_qualifier") and n.parent is not None and n.parent.type == "function_declarator":
                    words.append(text(n))
                elif n.type in _WRAPPING_DECLARATORS:
                    stack.extend(n.children)
        if node.child_by_field_name("default_value") is not None and text(node.child_by_field_name("default_value")) == "0":
            words.append("abstract")
        return words

    def modifiers(self, node: Node, d: Def) -> tuple[str, ...]:
        mods = list(super().modifiers(node, d))
        attrs = [c for c in node.children if c.type in ("attribute_declaration", "attribute_specifier")]
        if any(DEPRECATED.search(text(a)) for a in attrs) and "deprecated" not in mods:
            mods.append("deprecated")
        if "abstract" in self.keywords(node) and "abstract" not in mods:
            mods.append("abstract")
        return tuple(mods)

    def visibility(self, node: Node, d: Def, parent_kind: str) -> str:
        if parent_kind in self.class_kinds:
            sib = node.prev_sibling
            while sib is not None:
                if sib.type == "access_specifier":
                    return text(sib).rstrip(":").strip()
                sib = sib.prev_sibling
            return "private" if parent_kind == "class" else "public"
        if node.type in ("function_definition", "declaration") and "static" in self.keywords(node):
            return "private"
        return "public"

    def signature(self, node: Node, d: Def) -> str:
        if node.type in ("preproc_def", "preproc_function_def"):
            return one_line(f"#define {d.name}{text(node.child_by_field_name('parameters'))}")
        if node.type in ("declaration", "field_declaration") and not d.extra:
            return one_line(f"{text(node.child_by_field_name('type'))} {d.name}")
        if node.type == "enumerator":
            return ""
        if node.type == "type_definition":
            kind = node.child_by_field_name("type")
            if kind is not None and kind.child_by_field_name("body") is not None:
                named = kind.child_by_field_name("name")
                return one_line(f"typedef {kind.children[0].type} {text(named)} {d.name}".replace("  ", " "))
            return one_line(text(node).rstrip(";"))
        return super().signature(node, d)

    def references(self, node: Node) -> list[Ref]:
        t = node.type
        if t == "preproc_include":
            path = node.child_by_field_name("path")
            name = text(path).strip('<>"')
            return [Ref("import", name, path, module=name)] if path is not None else []
        if t == "base_class_clause":
            return [Ref("inherit", callee_name(text(c)), c) for c in node.named_children
                    if c.type not in ("access_specifier", "virtual")]
        if t == "type_identifier" and node.parent is not None and node.parent.type in (
                "qualified_identifier", "template_type", "type_parameter_declaration"):
            parent = node.parent
            if parent.type == "template_type" and parent.child_by_field_name("name") == node and (
                    parent.parent is None or parent.parent.type != "qualified_identifier"):
                return [Ref("type_ref", text(node), node)]
            return []
        if t == "qualified_identifier" and node.parent is not None and node.parent.type in (
                "parameter_declaration", "field_declaration", "declaration", "function_definition") \
                and node.parent.child_by_field_name("type") == node:
            return [Ref("type_ref", callee_name(text(node)), node)]
        if t == "using_declaration":
            names = [c for c in node.named_children]
            return [Ref("import", callee_name(text(names[-1])), names[-1], module=callee_name(text(names[-1])))] if names else []
        return super().references(node)


RULES = {"c": CRules(), "cpp": CRules()}
