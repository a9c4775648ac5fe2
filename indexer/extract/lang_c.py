"""C and C++ rules: declarator chains, out-of-class `A::f` methods, access sections, macros."""

from __future__ import annotations

import re

from tree_sitter import Node

from .rules import DEPRECATED, SOURCE, Def, Ref, Rules, callee_name, header_line, node_bytes, one_line, text

_WRAPPING_DECLARATORS = frozenset({
    "pointer_declarator", "reference_declarator", "function_declarator", "array_declarator",
    "init_declarator", "parenthesized_declarator", "attributed_declarator",
})
_NAMES = frozenset({"identifier", "field_identifier", "qualified_identifier", "destructor_name",
                    "operator_name", "type_identifier", "operator_cast"})
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
        if node.type == "reference_declarator":  # C++'s `T& f()`: its declarator has no field name
            node = node.named_children[-1] if node.named_children else None
        else:
            node = node.child_by_field_name("declarator")
    if node is not None and (node.type == "operator_cast" or node.type == "qualified_identifier"
                             and _leaf(node).type == "operator_cast"):
        is_function = True
    return (node, is_function) if node is not None and node.type in _NAMES else (None, is_function)


def _leaf(name: Node) -> Node:
    while name.type == "qualified_identifier" and name.child_by_field_name("name") is not None:
        name = name.child_by_field_name("name")
    return name


def name_text(name: Node) -> str:
    """A definition's name as written: `operator bool` for a conversion operator (its node
    also holds the parameters), `is_code_unit` for the specialization `is_code_unit<char>`."""
    if name.type == "operator_cast":
        declarator = name.child_by_field_name("declarator")
        while declarator is not None and declarator.type != "abstract_function_declarator":
            declarator = declarator.child_by_field_name("declarator")  # `operator T*()`: keep the `*`
        end = declarator.start_byte if declarator is not None else name.end_byte
        return " ".join(node_bytes(name)[:end - name.start_byte].decode("utf-8", "replace").split())
    if name.type == "template_type" and name.child_by_field_name("name") is not None:
        return text(name.child_by_field_name("name"))
    return text(name)


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
    return ".".join(p for p in scopes if p), name_text(name), name


# C++ in a file named as C (`.h`): the markers of GitHub Linguist's `.h` heuristic, none of
# which is valid C outside comments and strings. Found from a literal word (bytes.find), then
# matched at its line's start or where it stands: one regex over the file costs ~10x more.
_CPP_WORDS = (b"template", b"class", b"namespace", b"private", b"public", b"protected", b"include",
              b"std::", b"__has_cpp_attribute", b"__cplusplus")
_CPP_LINE = re.compile(
    rb"[ \t]*(?:template[ \t]*<|(?:class|(?:using[ \t]+)?namespace)[ \t]+\w+|(?:private|public|protected):[ \t]*\r?$"
    rb"|#[ \t]*include[ \t]*<(?:cstdint|cstddef|string|vector|map|list|array|memory|utility|atomic|mutex"
    rb"|unordered_map|unordered_set|(?:i|o|io)stream)>)", re.M)
_CPP_AT = re.compile(rb"std::\w|__has_cpp_attribute|__cplusplus[ \t]*>")


def grammar_of(source: bytes, language: str) -> str:
    """The grammar to parse `source` with: C++'s for a `.h` (named as C) that holds C++."""
    if language != "c":
        return language
    for word in _CPP_WORDS:
        at = source.find(word)
        while at >= 0:
            if _CPP_AT.match(source, at) or _CPP_LINE.match(source, source.rfind(b"\n", 0, at) + 1):
                return "cpp"
            at = source.find(word, at + len(word))
    return language


# A line that is nothing but an upper-case macro (`BEGIN_NAMESPACE`, `NAMESPACE_BEGIN(detail)`,
# `Q_OBJECT`): at declaration level it stands for tokens the grammar cannot see.
_MACRO_LINE = re.compile(rb"^[ \t]*([A-Z][A-Z0-9_]*[A-Z0-9][ \t]*(?:\([^()\n]*\))?)[ \t]*(?://[^\n]*)?\r?$", re.M)
# `class EXPORT_API Name {`: an upper-case macro between the keyword and the name.
_MACRO_NAMED = re.compile(rb"\b(?:class|struct|union)[ \t]+([A-Z][A-Z0-9_]*[A-Z0-9])[ \t]+[A-Za-z_]\w*\s*(?:[:{]|final\b)")
# `FMT_CONSTEXPR buffer(...) : ...`, `constexpr FMT_INLINE value(...)`: upper-case macros with an
# underscore standing as specifiers before a declaration (a constructor's initializer list, or
# a return type after them, derails the C++ grammar). Blanked only in a tree with errors.
_MACRO_SPECIFIERS = re.compile(
    rb"(?:^[ \t]*|(?:\b(?:constexpr|inline|static|explicit|virtual|friend|extern)|>)[ \t]+)"
    rb"((?:[A-Z][A-Z0-9]*_[A-Z0-9_]*[ \t]+)+)(?=[A-Za-z_~])", re.M)
# `void Lock() EXCLUSIVE_LOCK_FUNCTION() {`: an upper-case annotation macro after a declarator's
# parameters (thread-safety and deprecation attributes). Blanked only in a tree with errors.
_MACRO_TRAILING = re.compile(
    rb"\)[ \t]*(?:(?:const|noexcept|override|final)[ \t]*)*"
    rb"([A-Z][A-Z0-9]*_[A-Z0-9_]*(?:[ \t]*\([^()\n]*\))?)(?=\s*[{;:=])"
    # `int count_ GUARDED_BY(mu_);`: the same after a field's name
    rb"|\b[A-Za-z_]\w*[ \t]+([A-Z][A-Z0-9]*_[A-Z0-9_]*[ \t]*\([^()\n]*\))(?=[ \t]*;)")
# Where a macro line is code, not a declaration-level macro (a body, a list, a directive...).
_NOT_DECLARATION_LEVEL = frozenset({
    "compound_statement", "enumerator_list", "initializer_list", "argument_list", "parameter_list",
    "preproc_def", "preproc_function_def", "preproc_call", "preproc_arg", "comment", "string_literal",
    "raw_string_literal", "char_literal", "template_argument_list", "condition_clause",
})


# A directive inside a brace or argument list (`#include "table.h"` or `#define X(n) ...,`
# among an array's elements): the grammar has no place for it there, and the error swallows
# the rest of the file's definitions. Blanked in a tree with errors, continuation lines too.
_LIST_DIRECTIVE = re.compile(rb"#[ \t]*(?:include|define|undef)\b(?:[^\n]*\\\r?\n)*[^\n]*")  # literal first: fast
_LISTS = frozenset({"initializer_list", "argument_list", "enumerator_list"})
_NOT_LISTS = frozenset({"compound_statement", "field_declaration_list", "declaration_list", "translation_unit"})


def _in_list(root: Node, start: int, end: int, opened: dict[tuple[int, int], int]) -> bool:
    """The bytes start..end are inside a list, or inside an error that opened one (`= {`);
    `opened` caches where each error node's first `= {` is (-1: none)."""
    node = root.descendant_for_byte_range(start, end)
    while node is not None and node.type not in _NOT_LISTS:
        if node.type in _LISTS:
            return True
        if node.type == "ERROR":
            key = (node.start_byte, node.end_byte)
            if key not in opened:
                opened[key] = next((c.start_byte for c in node.children if c.type == "{" and c.prev_sibling
                                    is not None and c.prev_sibling.type == "="), -1)
            if 0 <= opened[key] < start:
                return True
        node = node.parent
    return False


def _declaration_level(root: Node, start: int, end: int) -> bool:
    node = root.descendant_for_byte_range(start, end)
    while node is not None:
        if node.type in _NOT_DECLARATION_LEVEL:
            return False
        node = node.parent
    return True


# What may stand before a function's declarator: its return type and specifiers.
_HEAD_PARTS = frozenset({"storage_class_specifier", "type_qualifier", "primitive_type", "type_identifier",
                         "sized_type_specifier", "struct_specifier", "enum_specifier", "union_specifier",
                         "attribute_specifier", "ms_declspec_modifier", "qualified_identifier",
                         "template_type", "virtual", "explicit", "inline"})


def _flattened_function(node: Node) -> tuple[Node, tuple[int, int]] | None:
    """A function definition that error recovery flattened into an ERROR node's children
    (`static double f(int x)`, `{`, its statements..., `}`, typically after an `#ifdef` that
    splits braces): its top declarator and the byte range from its return type to its
    closing brace (when an `#ifdef` took that brace: to the sibling before the next function)."""
    top = _top_declarator(node)
    if not _opens_body(top):
        return None
    start, before = top.start_byte, top.prev_sibling
    while before is not None and before.type in _HEAD_PARTS:
        start, before = before.start_byte, before.prev_sibling
    end, depth, sib = top.next_sibling.end_byte, 1, top.next_sibling.next_sibling
    while sib is not None and sib.type != "function_definition" and not (
            sib.type in _DECLARATOR_TOPS and _opens_body(sib)):
        end = sib.end_byte
        depth += {"{": 1, "}": -1}.get(sib.type, 0)
        if depth == 0:
            break
        sib = sib.next_sibling
    return top, (start, end)


_DECLARATOR_TOPS = frozenset({"function_declarator", "pointer_declarator", "reference_declarator"})


def _top_declarator(node: Node) -> Node:
    while node.parent is not None and node.parent.type in ("pointer_declarator", "reference_declarator"):
        node = node.parent
    return node


def _opens_body(top: Node) -> bool:
    """`top` is a declarator among an ERROR node's children, and a `{` follows it."""
    opening = top.next_sibling
    return top.parent is not None and top.parent.type == "ERROR" and opening is not None and opening.type == "{"


class CRules(Rules):
    hook_types = frozenset({
        "class_specifier", "struct_specifier", "union_specifier", "enum_specifier",
        "type_definition", "function_definition", "declaration", "field_declaration",
        "preproc_include", "base_class_clause", "qualified_identifier", "using_declaration",
        "function_declarator"
    })
    definitions = {"namespace_definition": ("namespace", ""), "preproc_def": ("macro", ""),
                   "preproc_function_def": ("macro", ""), "enumerator": ("constant", "constant"),
                   "alias_declaration": ("type_alias", "type_alias")}
    class_kinds = frozenset({"class", "struct", "union"})
    calls = {"call_expression": "function", "new_expression": "type"}
    plain_calls = frozenset({"call_expression", "new_expression"})
    type_refs = frozenset({"type_identifier"})
    span_wrappers = frozenset({"template_declaration"})

    def __init__(self, cpp: bool = False) -> None:
        self.cpp = cpp

    def item_macros(self, root: Node, parse_items) -> list[tuple[int, int, int, int]]:
        """Macros the grammar misreads, to blank: declaration-level ones (`BEGIN_NAMESPACE`
        lines, `class EXPORT_API Name`); in a tree with errors also C++ specifier and
        annotation macros around a declarator, and directives inside a brace list."""
        source = SOURCE.get()
        if source is None:
            return []
        found = [m.span(1) for m in _MACRO_NAMED.finditer(source)]
        found += [m.span(1) for m in _MACRO_LINE.finditer(source)]
        if self.cpp and root.has_error:
            found += [m.span(1) for m in _MACRO_SPECIFIERS.finditer(source)]
            found += [m.span(1 if m.start(1) >= 0 else 2) for m in _MACRO_TRAILING.finditer(source)]
        found = [(a, b) for a, b in found if _declaration_level(root, a, b)]
        if root.has_error:
            opened: dict[tuple[int, int], int] = {}
            found += [m.span() for m in _LIST_DIRECTIVE.finditer(source)
                      if not source[source.rfind(b"\n", 0, m.start()) + 1:m.start()].strip()
                      and _in_list(root, *m.span(), opened)]
        return [(a, b, b, b) for a, b in sorted(found)]

    def definitions_at(self, node: Node, parent_kind: str) -> list[Def]:
        t = node.type
        if t in _TYPES:
            name = node.child_by_field_name("name")
            if name is None or node.child_by_field_name("body") is None:
                return []
            if name.type == "qualified_identifier":  # `struct Outer::Inner { ... }`
                qualifier, leaf, leaf_node = _split_qualified(name)
                return [Def(_TYPES[t], leaf, leaf_node, qualifier=qualifier)]
            return [Def(_TYPES[t], name_text(name), name)]
        if t == "type_definition":
            return [Def("type_alias", text(n), n, scope=False)
                    for n, _ in map(declarator_name, node.children_by_field_name("declarator")) if n is not None]
        if t in ("function_definition", "declaration", "field_declaration"):
            return self._declarators(node, parent_kind)
        if t == "function_declarator":
            return self._flattened(node, parent_kind)
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

    def _flattened(self, node: Node, parent_kind: str) -> list[Def]:
        found = _flattened_function(node)
        name = declarator_name(found[0])[0] if found is not None else None
        if name is None:
            return []
        qualifier, leaf, leaf_node = _split_qualified(name)
        kind = "method" if qualifier or parent_kind in self.class_kinds else "function"
        return [Def(kind, leaf, leaf_node, qualifier=qualifier, span_range=found[1])]

    def _class_name(self, node: Node) -> str:
        n = node.parent
        while n is not None and n.type not in _TYPES:
            n = n.parent
        return text(n.child_by_field_name("name")) if n is not None else ""

    def keywords(self, node: Node) -> list[str]:
        if node.type == "function_declarator":  # a flattened function: the specifiers before it
            words, before = [], _top_declarator(node).prev_sibling
            while before is not None and before.type in _HEAD_PARTS:
                words.append(text(before))
                before = before.prev_sibling
            return words[::-1]
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
        if node.type in ("function_definition", "declaration", "function_declarator") and "static" in self.keywords(node):
            return "private"
        return "public"

    def signature(self, node: Node, d: Def) -> str:
        if d.span_range is not None:  # a flattened function: from its return type to its `{`
            holder = _top_declarator(node).parent
            return header_line(node_bytes(holder, node.end_byte)[d.span_range[0] - holder.start_byte:], d.name)
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


RULES = {"c": CRules(), "cpp": CRules(cpp=True)}
