"""Rust rules: items, impl blocks as `impl` symbols (methods qualified by the type), use trees."""

from __future__ import annotations

from tree_sitter import Node

from .rules import DEPRECATED, Def, Ref, Rules, callee_name, one_line, strip_comment, text


def _type_name(node: Node | None) -> tuple[str, Node | None]:
    """`S` from `S<T>`, `&mut S`, `a::S`: the name a type is defined under."""
    n = node
    while n is not None and n.type in ("generic_type", "reference_type", "pointer_type"):
        n = n.child_by_field_name("type")
    if n is None:
        return "", None
    if n.type == "scoped_type_identifier":
        return text(n.child_by_field_name("name")), n.child_by_field_name("name")
    return text(n), n


def _join(prefix: str, name: str) -> str:
    return f"{prefix}::{name}" if prefix else name


def _use_refs(arg: Node) -> list[Ref]:
    """One import per leaf of a `use` tree: `a::{b, c as d}` -> b from a, c from a as d."""
    out: list[Ref] = []
    stack: list[tuple[Node, str]] = [(arg, "")]
    while stack:
        n, prefix = stack.pop()
        if n.type == "scoped_use_list":
            path = n.child_by_field_name("path")
            inner = _join(prefix, text(path)) if path is not None else prefix
            lst = n.child_by_field_name("list")
            stack.extend((c, inner) for c in reversed(lst.named_children if lst else []))
        elif n.type == "use_list":
            stack.extend((c, prefix) for c in reversed(n.named_children))
        elif n.type == "use_as_clause":
            full = _join(prefix, text(n.child_by_field_name("path")))
            module, _, name = full.rpartition("::")
            out.append(Ref("import", name, n, module=module, alias=text(n.child_by_field_name("alias"))))
        elif n.type == "use_wildcard":
            path = [c for c in n.named_children]
            out.append(Ref("import", "*", n, module=_join(prefix, text(path[0]) if path else "")))
        elif n.type == "self":
            module, _, name = prefix.rpartition("::")
            out.append(Ref("import", name, n, module=module))
        else:
            full = _join(prefix, text(n))
            module, _, name = full.rpartition("::")
            out.append(Ref("import", name, n, module=module))
    return out


# Tokens a callee path inside a macro's token tree is made of (`a::b(`, `self.x.f(`, `te(h).f(`).
_PATH_TOKENS = frozenset({"identifier", "self", "crate", "super", "::", "."})


def _macro_calls(tree: Node) -> list[Ref]:
    """Calls inside a macro invocation's token trees (`assert!(f(x))`, `vec![a::g()]`): the
    grammar leaves them tokens, an identifier followed by a parenthesised tree; a callee's
    path is read back over `::`/`.` and argument trees (dropped, as callee_name drops them)."""
    out: list[Ref] = []
    stack = [tree]
    while stack:
        kids = stack.pop().children
        for i, k in enumerate(kids):
            if k.type != "token_tree":
                continue
            stack.append(k)
            if i == 0 or kids[i - 1].type != "identifier" or not k.child_count or k.children[0].type != "(" \
                    or (i > 1 and kids[i - 2].type == "fn"):
                continue
            j = i - 1
            while j > 0 and (kids[j - 1].type in _PATH_TOKENS or kids[j - 1].type == "token_tree"
                             and kids[j].type == "." and kids[j - 1].children[0].type == "("):
                j -= 1
            while kids[j].type in ("::", ".", "token_tree"):
                j += 1   # a path starts with a name
            path = "".join(text(t) for t in kids[j:i] if t.type != "token_tree")
            name = callee_name(path)
            if name:
                out.append(Ref("call", name, kids[i - 1]))
    return out


# Nodes whose children are items: where a macro invocation may stand for items.
_ITEM_HOLDERS = frozenset({"source_file", "declaration_list", "mod_item", "impl_item", "trait_item"})


class RustRules(Rules):
    hook_types = frozenset({
        "impl_item", "use_declaration", "macro_invocation", "trait_bounds",
        "extern_crate_declaration"
    })
    definitions = {
        "struct_item": ("struct", ""), "union_item": ("struct", ""), "enum_item": ("enum", ""),
        "trait_item": ("trait", ""), "function_item": ("function", "method"),
        "function_signature_item": ("function", "method"), "const_item": ("constant", "constant"),
        "static_item": ("variable", ""), "type_item": ("type_alias", "type_alias"),
        "associated_type": ("type_alias", "type_alias"), "mod_item": ("module", ""),
        "macro_definition": ("macro", ""), "field_declaration": ("field", "field"),
        "enum_variant": ("constant", "constant"),
    }
    calls = {"call_expression": "function"}
    plain_calls = frozenset({"call_expression"})
    type_refs = frozenset({"type_identifier", "scoped_type_identifier"})
    class_kinds = frozenset({"struct", "enum", "trait", "impl", "union"})

    def definition(self, node: Node, parent_kind: str) -> Def | None:
        if node.type == "impl_item":
            name, name_node = _type_name(node.child_by_field_name("type"))
            return Def("impl", name, name_node) if name_node is not None else None
        return super().definition(node, parent_kind)

    def item_macros(self, root: Node, parse_items) -> list[tuple[int, int, int, int]]:
        """`cfg_rt! { pub fn f() {} }` and any other `name! { items }` at item level."""
        out = []
        stack = [root]
        while stack:
            for child in stack.pop().named_children:
                if child.type in _ITEM_HOLDERS:
                    stack.append(child)
                elif child.type == "macro_invocation":
                    body = child.named_children[-1] if child.named_child_count else None
                    if body is None or body.type != "token_tree" or body.child_count < 2:
                        continue
                    first, last = body.children[0], body.children[-1]
                    if first.type == "{" and last.type == "}" and parse_items(first.end_byte, last.start_byte):
                        out.append((child.start_byte, first.end_byte, last.start_byte, child.end_byte))
        return out

    def _attributes(self, node: Node) -> list[Node]:
        out = []
        sib = node.prev_named_sibling
        while sib is not None and sib.type in ("attribute_item", "line_comment", "block_comment"):
            if sib.type == "attribute_item":
                out.append(sib)
            sib = sib.prev_named_sibling
        return out

    def doc(self, node: Node, d: Def) -> str:
        """`///` and `/** */` comments above the item, across its `#[...]` attributes."""
        parts: list[str] = []
        sib = node.prev_named_sibling
        while sib is not None and sib.type in ("attribute_item", "line_comment", "block_comment"):
            if sib.type != "attribute_item":
                if not text(sib).startswith(("///", "/**")):
                    break
                parts.append(strip_comment(text(sib)))
            sib = sib.prev_named_sibling
        return "\n".join(reversed(parts)).strip()

    def modifiers(self, node: Node, d: Def) -> tuple[str, ...]:
        mods = [m for m in super().modifiers(node, d) if not (m == "const" and node.type == "const_item")]
        if node.type == "static_item" and "static" not in mods:
            mods.append("static")
        if any(DEPRECATED.search(text(a)) for a in self._attributes(node)):
            mods.append("deprecated")
        return tuple(mods)

    def visibility(self, node: Node, d: Def, parent_kind: str) -> str:
        vis = next((c for c in node.children if c.type == "visibility_modifier"), None)
        if vis is not None:
            v = text(vis).replace(" ", "")
            return "public" if v == "pub" else v.removeprefix("pub(").removesuffix(")")
        if parent_kind in ("trait", "enum") or node.type == "impl_item":
            return "public"
        return "private"

    def signature(self, node: Node, d: Def) -> str:
        if node.type == "field_declaration":
            return one_line(text(node.child_by_field_name("type")))
        if node.type == "enum_variant":
            return ""
        if node.type == "macro_definition":
            return f"macro_rules! {d.name}"
        return super().signature(node, d)

    def references(self, node: Node) -> list[Ref]:
        t = node.type
        if t == "use_declaration":
            arg = node.child_by_field_name("argument")
            return _use_refs(arg) if arg is not None else []
        if t == "macro_invocation":
            mac = node.child_by_field_name("macro")
            calls = [Ref("call", callee_name(text(mac)) + "!", mac)] if mac is not None else []
            return calls + _macro_calls(node)
        if t == "impl_item":
            trait = node.child_by_field_name("trait")
            return [Ref("implement", callee_name(text(trait)), trait)] if trait is not None else []
        if t == "trait_bounds" and node.parent is not None and node.parent.type == "trait_item":
            return [Ref("inherit", callee_name(text(c)), c) for c in node.named_children]
        if t == "type_identifier" and node.parent is not None and node.parent.type in (
                "scoped_type_identifier", "type_parameter"):
            return []
        if t == "extern_crate_declaration":
            name = node.child_by_field_name("name")
            return [Ref("import", text(name), name, module=text(name))] if name is not None else []
        return super().references(node)


RULES = RustRules()
