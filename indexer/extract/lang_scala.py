"""Scala rules: classes, traits, objects, enums, defs, vals/vars, imports with selectors."""

from __future__ import annotations

from tree_sitter import Node

from .rules import Def, Ref, Rules, callee_name, text

_VALUES = frozenset({"val_definition", "val_declaration", "var_definition", "var_declaration"})


def _pattern_names(node: Node) -> list[Node]:
    pattern = node.child_by_field_name("pattern") or node.child_by_field_name("name")
    if pattern is None:
        return []
    if pattern.type == "identifier":
        return [pattern]
    if pattern.type == "identifiers":
        return [c for c in pattern.named_children if c.type == "identifier"]
    return []


def _bare(n: Node | None) -> bool:
    return n is not None and n.type == "package_clause" and n.child_by_field_name("body") is None


def _file_package(node: Node) -> list[Def]:
    """The file's package from its leading `package a.b` clauses without a body (chained ones
    add up: `package a.b` then `package c` is `a.b.c`), one symbol on the last of them, which
    the rest of the file is not nested in."""
    if node.parent is None or node.parent.type != "compilation_unit" or _bare(node.next_named_sibling):
        return []
    chain = [node]
    while _bare(chain[0].prev_named_sibling):
        chain.insert(0, chain[0].prev_named_sibling)
    names = [c.child_by_field_name("name") for c in chain]
    if any(n is None for n in names):
        return []
    return [Def("package", ".".join(text(n) for n in names), names[-1], scope=False,
                span_range=(chain[0].start_byte, names[-1].end_byte))]


def _block_package(node: Node) -> list[Def]:
    """`package a.b { ... }`: a package symbol its members are nested in (`a.b.X`); a nested
    block adds to its enclosing one, and a top-level block to the file's leading clauses
    (`package a` then `package b { object X }` is `a.b.X`)."""
    name = node.child_by_field_name("name")
    if name is None:
        return []
    parent = node.parent
    leading = [] if parent is None or parent.type != "compilation_unit" else [
        c.child_by_field_name("name") for c in parent.named_children
        if _bare(c) and c.end_byte <= node.start_byte]
    return [Def("package", text(name), name, qualifier=".".join(text(n) for n in leading if n is not None))]


class ScalaRules(Rules):
    hook_types = frozenset({
        "val_definition", "val_declaration", "var_definition", "var_declaration",
        "class_parameter", "import_declaration", "extends_clause", "package_clause"
    })
    definitions = {
        "class_definition": ("class", ""), "trait_definition": ("trait", ""),
        "object_definition": ("object", ""), "enum_definition": ("enum", ""),
        "function_definition": ("function", "method"), "function_declaration": ("function", "method"),
        "type_definition": ("type_alias", "type_alias"),
        "simple_enum_case": ("constant", "constant"), "full_enum_case": ("constant", "constant"),
        "given_definition": ("variable", "field"),
    }
    calls = {"call_expression": "function", "instance_expression": ""}
    plain_calls = frozenset({"call_expression"})
    type_refs = frozenset({"type_identifier"})
    class_kinds = Rules.class_kinds | {"object"}
    default_visibility = "public"

    def definitions_at(self, node: Node, parent_kind: str) -> list[Def]:
        t = node.type
        in_type = parent_kind in self.class_kinds
        if t == "package_clause":
            return _file_package(node) if _bare(node) else _block_package(node)
        if t in _VALUES:
            parent = node.parent
            if parent is None or parent.type not in ("template_body", "compilation_unit", "package_clause"):
                return []
            is_val = t.startswith("val")
            kind = "field" if in_type else ("constant" if is_val else "variable")
            return [Def(kind, text(n), n, scope=False) for n in _pattern_names(node)]
        if t == "class_parameter":
            if not any(text(c) in ("val", "var") for c in node.children if not c.is_named):
                return []
            name = node.child_by_field_name("name")
            return [Def("property", text(name), name, scope=False)] if name is not None else []
        d = self.definition(node, parent_kind)
        if d is None:
            return []
        if t in ("simple_enum_case", "full_enum_case", "type_definition"):
            d = Def(d.kind, d.name, d.name_node, scope=False)
        return [d]

    def visibility(self, node: Node, d: Def, parent_kind: str) -> str:
        return "" if d.kind == "package" else super().visibility(node, d, parent_kind)

    def signature(self, node: Node, d: Def) -> str:
        if node.type in ("simple_enum_case",):
            return ""
        return super().signature(node, d)

    def modifiers(self, node: Node, d: Def) -> tuple[str, ...]:
        mods = list(super().modifiers(node, d))
        if node.type == "class_definition" and any(text(c) == "case" for c in node.children if not c.is_named):
            mods.append("case")
        return tuple(dict.fromkeys(mods))

    def references(self, node: Node) -> list[Ref]:
        t = node.type
        if t == "import_declaration":
            return self._import(node)
        if t == "extends_clause":
            owner = node.parent.type if node.parent is not None else ""
            types = [c for c in node.children_by_field_name("type") if c.is_named]
            return [Ref("inherit" if i == 0 or owner == "trait_definition" else "implement",
                        callee_name(text(c)), c) for i, c in enumerate(types)]
        if t == "instance_expression":
            target = next((c for c in node.named_children if c.type in ("type_identifier", "generic_type", "stable_type_identifier")), None)
            return [Ref("call", callee_name(text(target)), target)] if target is not None else []
        if t == "type_identifier" and node.parent is not None and node.parent.type in (
                "type_parameters", "stable_type_identifier", "annotation"):
            return []
        return super().references(node)

    def _import(self, node: Node) -> list[Ref]:
        paths = [p for p in node.children_by_field_name("path") if p.is_named]
        module = ".".join(text(p) for p in paths)
        out = []
        for c in node.named_children:
            if c.type == "namespace_wildcard":
                out.append(Ref("import", "*", c, module=module))
            elif c.type == "namespace_selectors":
                for sel in c.named_children:
                    if sel.type == "identifier":
                        out.append(Ref("import", text(sel), sel, module=module))
                    elif sel.type == "arrow_renamed_identifier":
                        out.append(Ref("import", text(sel.child_by_field_name("name")), sel, module=module,
                                       alias=text(sel.child_by_field_name("alias"))))
                    elif sel.type == "namespace_wildcard":
                        out.append(Ref("import", "*", sel, module=module))
            elif c.type == "as_renamed_identifier":
                out.append(Ref("import", text(c.child_by_field_name("name")), c, module=module,
                               alias=text(c.child_by_field_name("alias"))))
        if not out and paths:
            head, _, last = module.rpartition(".")
            out.append(Ref("import", last, paths[-1], module=head))
        return out


RULES = ScalaRules()
