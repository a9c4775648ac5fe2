"""Kotlin rules: classes/interfaces/objects, primary-constructor properties, functions."""

from __future__ import annotations

import re

from tree_sitter import Node

from .rules import SOURCE, Def, Ref, Rules, callee_name, package_definition, text

# A primary constructor on the line after its class's name (`class FileSpec\nprivate
# constructor(...)`, the official style for long headers): the grammar ends the class at the
# newline and reads its body as statements. Its modifiers and keyword (group 1), blanked,
# leave `class FileSpec\n    (...)`, which parses as the class it is. Its annotations may
# stand on lines of their own (`class Reader\n  @JvmOverloads\n  constructor(`).
_CONSTRUCTOR_NEXT_LINE = re.compile(
    rb"\b(?:class|object)[ \t]+\w+(?:[ \t]*<[^{}()\n]*>)?[ \t]*\r?\n[ \t]*"
    rb"((?:@[\w.]+(?:\([^()\n]*\))?\s+)*(?:(?:private|internal|protected|public)[ \t]+)?constructor)[ \t]*\(")


def _child(node: Node, *types: str) -> Node | None:
    return next((c for c in node.named_children if c.type in types), None)


def _keyword(node: Node, *words: str) -> str:
    for c in node.children:
        if not c.is_named and text(c) in words:
            return text(c)
    return ""


class KotlinRules(Rules):
    hook_types = frozenset({
        "class_declaration", "object_declaration", "companion_object", "function_declaration",
        "secondary_constructor", "property_declaration", "class_parameter", "enum_entry",
        "type_alias", "import_header", "delegation_specifier", "user_type", "package_header"
    })
    calls = {"call_expression": ""}
    plain_calls = frozenset({"call_expression"})
    default_visibility = "public"
    class_kinds = Rules.class_kinds | {"object"}

    def item_macros(self, root: Node, parse_items) -> list[tuple[int, int, int, int]]:
        """Not macros: primary constructors the grammar misreads, to blank (see above)."""
        source = SOURCE.get()
        if source is None or not root.has_error:
            return []
        return [(a, b, b, b) for a, b in (m.span(1) for m in _CONSTRUCTOR_NEXT_LINE.finditer(source))]

    def definitions_at(self, node: Node, parent_kind: str) -> list[Def]:
        t = node.type
        in_type = parent_kind in self.class_kinds
        if t == "class_declaration":
            name = _child(node, "type_identifier")
            kw = _keyword(node, "interface", "enum")
            kind = {"interface": "interface", "enum": "enum"}.get(kw, "class")
            return [Def(kind, text(name), name)] if name is not None else []
        if t == "object_declaration":
            name = _child(node, "type_identifier")
            return [Def("object", text(name), name)] if name is not None else []
        if t == "companion_object":
            name = _child(node, "type_identifier")
            anchor = name or next((c for c in node.children if text(c) == "object"), None)
            return [Def("object", text(name) if name else "Companion", anchor)] if anchor is not None else []
        if t == "function_declaration":
            name = _child(node, "simple_identifier")
            return [Def("method" if in_type else "function", text(name), name)] if name is not None else []
        if t == "secondary_constructor":
            kw = next((c for c in node.children if text(c) == "constructor"), None)
            return [Def("constructor", "constructor", kw)] if kw is not None else []
        if t == "property_declaration":
            return self._property(node, in_type)
        if t == "class_parameter" and _child(node, "binding_pattern_kind") is not None:
            name = _child(node, "simple_identifier")
            return [Def("property", text(name), name, scope=False)] if name is not None else []
        if t == "enum_entry":
            name = _child(node, "simple_identifier")
            return [Def("constant", text(name), name, scope=False)] if name is not None else []
        if t == "package_header":
            d = package_definition(node)
            return [d] if d is not None else []
        if t == "type_alias":
            name = _child(node, "type_identifier")
            return [Def("type_alias", text(name), name, scope=False)] if name is not None else []
        return []

    def _property(self, node: Node, in_type: bool) -> list[Def]:
        decl = _child(node, "variable_declaration", "multi_variable_declaration")
        if decl is None or node.parent is None or node.parent.type not in ("source_file", "class_body", "enum_class_body"):
            return []
        names = [c for c in decl.named_children if c.type == "variable_declaration"] or [decl]
        out = []
        for var in names:
            name = _child(var, "simple_identifier")
            if name is None:
                continue
            kind = "property" if in_type else ("constant" if "const" in self.keywords(node) else "variable")
            out.append(Def(kind, text(name), name, scope=False))
        return out

    def body(self, node: Node) -> Node | None:
        if node.type == "property_declaration":
            kids = node.named_children
            decl = _child(node, "variable_declaration", "multi_variable_declaration")
            if decl is not None:
                after = [k for k in kids if k.start_byte > decl.start_byte and k.type not in ("user_type", "nullable_type")]
                return after[0] if after else None
        return super().body(node)

    def visibility(self, node: Node, d: Def, parent_kind: str) -> str:
        return "" if d.kind == "package" else super().visibility(node, d, parent_kind)

    def signature(self, node: Node, d: Def) -> str:
        if node.type == "enum_entry":
            return ""
        return super().signature(node, d).removesuffix(" =").strip()

    def modifiers(self, node: Node, d: Def) -> tuple[str, ...]:
        mods = list(super().modifiers(node, d))
        mods_node = _child(node, "modifiers")
        if mods_node is not None and "@Deprecated" in text(mods_node) and "deprecated" not in mods:
            mods.append("deprecated")
        if node.type == "companion_object" and "companion" not in mods:
            mods.append("companion")
        return tuple(mods)

    def references(self, node: Node) -> list[Ref]:
        t = node.type
        if t == "import_header":
            ident = _child(node, "identifier")
            if ident is None:
                return []
            full = text(ident)
            alias = _child(node, "import_alias")
            alias_name = text(_child(alias, "type_identifier", "simple_identifier")) if alias is not None else ""
            if text(node).rstrip().endswith("*"):
                return [Ref("import", "*", ident, module=full)]
            module, _, name = full.rpartition(".")
            return [Ref("import", name, ident, module=module, alias=alias_name)]
        if t == "delegation_specifier":
            return self._delegation(node)
        if t == "user_type":
            if node.parent is not None and node.parent.type in ("user_type", "constructor_invocation") \
                    or self._in_annotation(node):
                return []
            return [Ref("type_ref", callee_name(text(node)), node)]
        return super().references(node)

    def _in_annotation(self, node: Node) -> bool:
        n = node.parent
        for _ in range(3):
            if n is None:
                return False
            if n.type == "annotation":
                return True
            n = n.parent
        return False

    def _delegation(self, node: Node) -> list[Ref]:
        owner = node.parent
        interface = owner is not None and _keyword(owner, "interface") == "interface"
        inner = node.named_children[0] if node.named_child_count else None
        if inner is None:
            return []
        if inner.type == "constructor_invocation":
            target = _child(inner, "user_type")
            return [Ref("inherit", callee_name(text(target)), target)] if target is not None else []
        target = inner if inner.type == "user_type" else _child(inner, "user_type") or inner
        return [Ref("inherit" if interface else "implement", callee_name(text(target)), target)]


RULES = KotlinRules()
