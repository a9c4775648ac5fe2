"""JavaScript, TypeScript and TSX rules (one grammar family, one rule set)."""

from __future__ import annotations

from tree_sitter import Node

from .rules import Def, Ref, Rules, callee_name, node_bytes, one_line, text

_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function",
                              "generator_function"})
_MODULE_BODIES = frozenset({"internal_module", "module"})


def _string(node: Node | None) -> str:
    return text(node).strip("'\"`")


_SIGNATURES = frozenset({"property_signature", "method_signature"})


def _function_value(node: Node) -> Node | None:
    value = node.child_by_field_name("value")
    return value if value is not None and value.type in _FUNCTION_VALUES else None


def _declared_member(node: Node) -> bool:
    """Interface members, type-alias object members and the members of a class declared
    without bodies (`declare class`, overloads), not inline object types."""
    holder = node.parent
    if holder is None:
        return False
    if holder.type in ("interface_body", "class_body"):
        return True
    return holder.type == "object_type" and holder.parent is not None and holder.parent.type in (
        "interface_declaration", "type_alias_declaration")


class JsRules(Rules):
    hook_types = frozenset({
        "variable_declarator", "import_statement", "export_statement", "class_heritage",
        "extends_type_clause", "jsx_opening_element", "jsx_self_closing_element"
    })
    definitions = {
        "class_declaration": ("class", ""), "abstract_class_declaration": ("class", ""),
        "class": ("class", ""),
        "function_declaration": ("function", ""), "generator_function_declaration": ("function", ""),
        "function_signature": ("function", ""),
        "method_definition": ("method", "method"), "method_signature": ("method", "method"),
        "abstract_method_signature": ("method", "method"),
        "public_field_definition": ("field", "field"), "field_definition": ("field", "field"),
        "property_signature": ("property", "property"),
        "interface_declaration": ("interface", ""), "type_alias_declaration": ("type_alias", ""),
        "enum_declaration": ("enum", ""), "internal_module": ("namespace", ""),
        "module": ("namespace", ""),
    }
    calls = {"call_expression": "function", "new_expression": "constructor"}
    plain_calls = frozenset({"new_expression"})
    type_refs = frozenset({"type_identifier", "nested_type_identifier"})
    span_wrappers = frozenset({"export_statement"})
    header_skip = Rules.header_skip | {"decorator"}

    def name_node(self, node: Node) -> Node | None:
        return node.child_by_field_name("name") or node.child_by_field_name("property")

    def definition(self, node: Node, parent_kind: str) -> Def | None:
        if node.type == "variable_declarator":
            return self._variable(node)
        if node.type in _SIGNATURES and not _declared_member(node):
            return None
        d = super().definition(node, parent_kind)
        if d is not None and d.kind == "method" and d.name == "constructor":
            return Def("constructor", d.name, d.name_node)
        if d is not None and d.kind == "field" and _function_value(node) is not None:
            return Def("method", d.name, d.name_node)
        return d

    def _variable(self, node: Node) -> Def | None:
        decl = node.parent
        name = node.child_by_field_name("name")
        if decl is None or name is None or name.type != "identifier":
            return None
        holder = decl.parent
        if holder is not None and holder.type == "export_statement":
            holder = holder.parent
        if holder is None or not (holder.type == "program" or (
                holder.type == "statement_block" and holder.parent is not None
                and holder.parent.type in _MODULE_BODIES)):
            return None
        value = node.child_by_field_name("value")
        n = text(name)
        if value is not None and value.type in _FUNCTION_VALUES:
            kind = "function"
        elif decl.children and text(decl.children[0]) == "const" and n.upper() == n:
            kind = "constant"
        else:
            kind = "variable"
        span = decl if decl.named_child_count == 1 else node
        return Def(kind, n, name, span_node=span)

    def body(self, node: Node) -> Node | None:
        if node.type == "variable_declarator":
            value = node.child_by_field_name("value")
            if value is not None and value.type in _FUNCTION_VALUES:
                return value.child_by_field_name("body")
            return value
        return super().body(node)

    def signature(self, node: Node, d: Def) -> str:
        fn = _function_value(node) if node.type in ("public_field_definition", "field_definition") else None
        if fn is not None:  # `handler = (e: Event): void => {...}`
            body = fn.child_by_field_name("body")
            head = node_bytes(fn, body.start_byte if body is not None else None)
            return one_line(d.name + head.decode("utf-8", "replace").strip().removesuffix("=>").strip())
        sig = super().signature(node, d)
        return one_line(sig.removesuffix("=>").strip())

    def keywords(self, node: Node) -> list[str]:
        words = super().keywords(node)
        if node.type == "variable_declarator" and node.parent is not None:
            node = node.parent
        parent = node.parent
        if parent is not None and parent.type == "export_statement":
            words += [text(c) for c in parent.children if c.child_count == 0]
        return words

    def modifiers(self, node: Node, d: Def) -> tuple[str, ...]:
        mods = list(super().modifiers(node, d))
        words = self.keywords(node)
        mods += [w for w in ("export", "default") if w in words and w not in mods]
        return tuple(mods)

    def visibility(self, node: Node, d: Def, parent_kind: str) -> str:
        explicit = super().visibility(node, d, parent_kind)
        if explicit:
            return explicit
        if d.name.startswith("#"):
            return "private"
        if parent_kind in self.class_kinds:
            return "public"
        return "public" if "export" in self.keywords(node) else ""

    def references(self, node: Node) -> list[Ref]:
        t = node.type
        if t == "import_statement" or (t == "export_statement" and node.child_by_field_name("source")):
            return self._imports(node)
        if t == "export_statement":
            return self._default_export(node)
        if t == "call_expression":
            fn = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            if fn is not None and text(fn) == "require" and args is not None and args.named_child_count:
                arg = args.named_children[0]
                if arg.type == "string":
                    return [Ref("import", _string(arg), arg, module=_string(arg))]
        if t in ("jsx_opening_element", "jsx_self_closing_element"):
            name = node.child_by_field_name("name")
            if name is not None and text(name)[:1].isupper():
                return [Ref("call", text(name), name)]
            return []
        if t == "class_heritage":
            return self._heritage(node)
        if t == "extends_type_clause":
            return [Ref("inherit", callee_name(text(c)), c) for c in node.named_children]
        if t == "type_identifier" and node.parent is not None and node.parent.type in (
                "nested_type_identifier", "type_parameter"):
            return []
        return super().references(node)

    def _default_export(self, node: Node) -> list[Ref]:
        """`export default name` / `export default function name`: an import of `name` from
        this very module under the alias `default`, so `import x from './m'` finds it."""
        if not any(c.type == "default" for c in node.children):
            return []
        value = node.child_by_field_name("value")
        if value is None:
            decl = node.child_by_field_name("declaration")
            value = decl.child_by_field_name("name") if decl is not None else None
        if value is None or value.type not in ("identifier", "type_identifier"):
            return []
        return [Ref("import", text(value), value, alias="default")]

    def _heritage(self, node: Node) -> list[Ref]:
        out = []
        for clause in node.named_children:
            if clause.type == "extends_clause":
                out += [Ref("inherit", callee_name(text(c)), c) for c in clause.named_children
                        if c.type != "type_arguments"]
            elif clause.type == "implements_clause":
                out += [Ref("implement", callee_name(text(c)), c) for c in clause.named_children]
            else:  # JavaScript: `extends <expression>` directly
                out.append(Ref("inherit", callee_name(text(clause)), clause))
        return out

    def _imports(self, node: Node) -> list[Ref]:
        source = node.child_by_field_name("source")
        module = _string(source)
        out: list[Ref] = []
        stack = [c for c in reversed(node.named_children) if c is not source]
        while stack:
            n = stack.pop()
            if n.type in ("import_specifier", "export_specifier"):
                name = n.child_by_field_name("name")
                alias = n.child_by_field_name("alias")
                out.append(Ref("import", text(name), n, module=module, alias=text(alias)))
            elif n.type == "namespace_import" or n.type == "namespace_export":
                ids = [c for c in n.named_children if c.type == "identifier"]
                out.append(Ref("import", "*", n, module=module, alias=text(ids[0]) if ids else ""))
            elif n.type == "identifier" and n.parent is not None and n.parent.type == "import_clause":
                out.append(Ref("import", "default", n, module=module, alias=text(n)))
            else:
                stack.extend(reversed(n.named_children))
        if not out and source is not None:
            star = [c for c in node.children if c.type == "*"]
            out.append(Ref("import", "*" if star else module, source, module=module))
        return out


RULES = {"javascript": JsRules(), "typescript": JsRules(), "tsx": JsRules()}
