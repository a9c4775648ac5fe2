"""The one extraction framework: a `Rules` base class driven by per-language tables.

A language module subclasses `Rules`, fills the tables (definition node types, call node
types, comment types...) and overrides a hook only where its grammar needs code (imports,
base classes, receiver types). The walker in `walk.py` calls these hooks; it never looks at
node types itself.
"""

from __future__ import annotations

import inspect
import re
from contextvars import ContextVar
from dataclasses import dataclass

from tree_sitter import Node

SEP = "."
_ARGS = re.compile(r"\([^()]*\)|(?:::)?<[^<>()]*>|\[[^\[\]()]*\]")
_DOT_WS = re.compile(r"\s*\.\s*")
_PLAIN_NAME = re.compile(r"[\w.]*")  # nothing for callee_name to strip
MAX_SIGNATURE = 300

DEPRECATED = re.compile(r"\b(deprecated|Deprecated|Obsolete)\b")
# Words that are modifiers wherever they appear as a keyword token on a definition.
MODIFIER_WORDS = frozenset({
    "static", "abstract", "async", "override", "final", "virtual", "const", "readonly",
    "sealed", "open", "inline", "extern", "unsafe", "mutating", "lazy", "suspend", "data",
    "partial", "volatile", "transient", "synchronized", "native", "default", "constexpr",
    "implicit", "case", "operator", "infix", "tailrec", "external", "companion", "declare",
    "get", "set", "weak", "dynamic", "required", "convenience", "new",
})
VISIBILITY_WORDS = frozenset({
    "public", "private", "protected", "internal", "fileprivate", "package", "pub",
})


@dataclass(slots=True)  # not frozen: a frozen init costs a setattr call per field, per node
class Def:
    """A definition found at a node: what the walker turns into a `Symbol`."""

    kind: str
    name: str
    name_node: Node
    qualifier: str = ""     # extra qualification from the syntax (Go receiver, C++ `A::f`)
    scope: bool = True      # children are qualified under this symbol
    span_node: Node | None = None  # node whose span the symbol covers (default: the node)
    extra: tuple[str, ...] = ()    # modifiers known at definition time (`prototype`)
    # the byte range the symbol (and, with `scope`, its children) covers when no node does:
    # a definition that error recovery flattened into its siblings
    span_range: tuple[int, int] | None = None


@dataclass(slots=True)
class Ref:
    kind: str
    target: str
    node: Node
    module: str = ""
    alias: str = ""


def package_definition(node: Node) -> Def | None:
    """`package a.b;` (Java) or `package a.b` (Kotlin): a package symbol the rest of the file
    is not nested in; the symbol graph takes the file's module from it, not from its path."""
    name = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None)
    if name is None:
        return None
    return Def("package", text(name), name, scope=False, span_range=(node.start_byte, name.end_byte))


# A pseudo reference kind: "`alias` has type `target`" (module "self": a field of the enclosing
# type), made by rules that declare types during the walk; receivers.py consumes them, they
# never reach a shard.
DECLARES = "declares"

# The bytes of the tree being walked: a tree parsed through a read callback (to bound its
# time) has none attached, and its node.text would call back into Python for every node.
SOURCE: ContextVar[bytes | None] = ContextVar("codeagent_extract_source", default=None)


def node_bytes(node: Node, end: int | None = None) -> bytes:
    """The node's source bytes (up to byte offset `end` when given)."""
    source = SOURCE.get()
    stop = node.end_byte if end is None else end
    if source is None:
        return (node.text or b"")[:stop - node.start_byte]
    return source[node.start_byte:stop]


def text(node: Node | None) -> str:
    if node is None:
        return ""
    return node_bytes(node).decode("utf-8", "replace")


def one_line(s: str, limit: int = MAX_SIGNATURE) -> str:
    s = " ".join(s.split())  # str.split's whitespace is re's \s; 4x faster than re.sub
    return s if len(s) <= limit else s[:limit - 1] + "…"


def header_line(raw: bytes, name: str) -> str:
    """A definition's signature from its header bytes ("" when that is just the name)."""
    sig = one_line(raw.decode("utf-8", "replace")).rstrip("{:=; ").strip()
    return "" if sig == name else sig


def callee_name(s: str) -> str:
    """`a.b(x).c` -> `a.b.c`: drop argument lists and generic arguments from a callee."""
    if _PLAIN_NAME.fullmatch(s):
        return s[:200]
    s = one_line(s, 10_000)
    for _ in range(8):
        stripped = _ARGS.sub("", s)
        if stripped == s:
            break
        s = stripped
    s = s.replace("?.", ".").replace("::", ".").replace("->", ".").replace("!!", "")
    s = _DOT_WS.sub(".", s)
    return s[:200]


def callee_node(node: Node, field: str) -> Node | None:
    """The callee of a call node: its child in `field` ("": its first named child)."""
    if field:
        return node.child_by_field_name(field)
    return node.named_child(0) if node.named_child_count else None


def strip_comment(raw: str) -> str:
    """Comment text without its markers (`//`, `///`, `#`, `/** */`, leading `*`)."""
    s = raw.strip()
    if s.startswith("/*"):
        s = re.sub(r"^/\*+!?", "", s)
        s = re.sub(r"\*+/$", "", s)
        lines = [re.sub(r"^\s*\*(?!/) ?", "", ln) for ln in s.splitlines()]
        return inspect.cleandoc("\n".join(lines)).strip()
    if s.startswith("{-") or s.startswith("(*"):
        return s[2:-2].strip()
    out = [re.sub(r"^\s*(///?!?|#+:?|--+|;+|%+)\s?", "", ln) for ln in s.splitlines()]
    return "\n".join(out).strip()


class Rules:
    """Per-language extraction rules. Subclasses set the tables; hooks have defaults."""

    # node type -> (kind, kind when directly inside a class-like symbol or "")
    definitions: dict[str, tuple[str, str]] = {}
    # kinds whose members become methods/fields (member kinds apply inside them)
    class_kinds = frozenset({"class", "struct", "interface", "trait", "enum", "module",
                             "object", "protocol", "extension", "union", "namespace", "impl"})
    calls: dict[str, str] = {}           # call node type -> field holding the callee
    # call node types whose hooks do nothing but `call_references(node, calls[type])` (no
    # definition, no other reference): the walker takes their callee without the hooks
    plain_calls: frozenset[str] = frozenset()
    type_refs: frozenset[str] = frozenset()
    comment_types = frozenset({"comment", "line_comment", "block_comment", "multiline_comment"})
    # children skipped when building the one-line signature header
    header_skip = frozenset({"decorator", "annotation", "marker_annotation", "attribute_list",
                             "attribute_item", "comment", "line_comment", "block_comment"})
    body_types = frozenset({"block", "body", "class_body", "declaration_list",
                            "field_declaration_list", "compound_statement", "statement_block",
                            "enum_body", "interface_body", "object_type", "function_body",
                            "template_body", "enum_class_body", "class_declaration_list"})
    default_visibility = ""
    # wrapper node type -> True: a definition's span extends over this parent (decorators)
    span_wrappers = frozenset({"decorated_definition"})
    # node types the language's hooks look at beyond the tables above; None = every node
    hook_types: frozenset[str] | None = frozenset()

    def item_macros(self, root: Node, parse_items) -> list[tuple[int, int, int, int]]:
        """Macro invocations whose body holds items, as (start, open, close, end) byte offsets
        of the invocation and its delimiters: the extractor blanks all but the body and parses
        again, so the items inside are indexed where they stand. `parse_items(start, end)`
        says whether those bytes parse as items on their own; SOURCE holds the bytes parsed.
        (C and C++ give (start, end, end, end): a declaration-level macro, blanked whole.)
        Default: none."""
        return []

    def interesting(self) -> frozenset[str] | None:
        """Node types worth calling the hooks for (the walker skips the rest cheaply)."""
        if self.hook_types is None:
            return None
        return frozenset(self.definitions) | frozenset(self.calls) | self.type_refs | self.hook_types

    # --- definitions -------------------------------------------------------------------

    def definitions_at(self, node: Node, parent_kind: str) -> list[Def]:
        """Every definition made by `node` (several for `int a, b;`); usually zero or one."""
        d = self.definition(node, parent_kind)
        return [d] if d is not None else []

    def definition(self, node: Node, parent_kind: str) -> Def | None:
        """The definition at `node`, or None. Default: table lookup + `name` field."""
        entry = self.definitions.get(node.type)
        if entry is None:
            return None
        name_node = self.name_node(node)
        if name_node is None:
            return None
        kind, member_kind = entry
        if member_kind and parent_kind in self.class_kinds:
            kind = member_kind
        return Def(kind, self.name_text(name_node), name_node)

    def name_node(self, node: Node) -> Node | None:
        return node.child_by_field_name("name")

    def name_text(self, name_node: Node) -> str:
        return text(name_node)

    def body(self, node: Node) -> Node | None:
        found = node.child_by_field_name("body")
        if found is not None:
            return found
        for child in node.named_children:
            if child.type in self.body_types:
                return child
        return None

    def signature(self, node: Node, d: Def) -> str:
        """The definition's header on one line: its text up to the body, without attributes,
        decorators, annotations and comments."""
        if d.kind == "package":
            return f"package {d.name}"
        body = self.body(node) or node.child_by_field_name("value")
        end = body.start_byte if body is not None else node.end_byte
        base = node.start_byte
        raw = node_bytes(node, end)
        for child in reversed(self._header_noise(node, end)):
            raw = raw[:child.start_byte - base] + b" " + raw[child.end_byte - base:]
        return header_line(raw, d.name)

    def _header_noise(self, node: Node, end: int) -> list[Node]:
        noise = []
        for child in node.children:
            if child.start_byte >= end:
                break
            if child.type in self.header_skip:
                noise.append(child)
            elif child.type in ("modifiers", "attribute_list", "attributes"):
                noise += [c for c in child.children if "annotation" in c.type or "attribute" in c.type]
        return noise

    def outer(self, node: Node, d: Def) -> Node:
        """The node the symbol's span covers: the definition plus wrappers (decorators, export)."""
        n = d.span_node or node
        parent = n.parent
        while parent is not None and parent.type in self.span_wrappers:
            n, parent = parent, parent.parent
        return n

    def doc(self, node: Node, d: Def) -> str:
        """Comments directly above the definition (no blank line between)."""
        anchor = self.outer(node, d)
        parts: list[str] = []
        line = anchor.start_point.row
        sib = anchor.prev_named_sibling
        while sib is not None and sib.type not in self.comment_types and sib.named_child_count \
                and sib.end_point.row >= line - 1:
            sib = sib.named_child(sib.named_child_count - 1)  # a grammar that hangs the comment on the previous node
        while sib is not None and sib.type in self.comment_types and sib.end_point.row >= line - 1:
            if sib.end_point.row == anchor.start_point.row and sib is not anchor.prev_sibling:
                break
            parts.append(strip_comment(text(sib)))
            line = sib.start_point.row
            sib = sib.prev_named_sibling
        return "\n".join(reversed(parts)).strip()

    def keywords(self, node: Node) -> list[str]:
        """Keyword-ish tokens of the definition's modifier area (before the body)."""
        words: list[str] = []
        body = self.body(node)
        for child in node.children:
            if body is not None and child.start_byte >= body.start_byte:
                break
            if child.type in ("modifiers", "modifier", "visibility_modifier", "declaration_modifiers",
                              "member_modifiers", "function_modifiers", "class_modifiers",
                              "access_specifier", "storage_class_specifier", "type_qualifier"):
                words.extend(self.modifier_tokens(child))
            elif child.child_count == 0 or child.type.endswith("_modifier"):
                words.append(text(child))
            if child.type in self.header_skip or "annotation" in child.type or "attribute" in child.type:
                if DEPRECATED.search(text(child)):
                    words.append("deprecated")
        return words

    def modifier_tokens(self, node: Node) -> list[str]:
        out: list[str] = []
        stack = [node]
        while stack:
            n = stack.pop()
            if n.child_count == 0 or n.type.endswith("_modifier") and n.named_child_count == 0:
                out.append(text(n))
            elif "annotation" in n.type or "attribute" in n.type:
                if DEPRECATED.search(text(n)):
                    out.append("deprecated")
            else:
                stack.extend(reversed(n.children))
        return out

    def modifiers(self, node: Node, d: Def) -> tuple[str, ...]:
        seen: list[str] = []
        for w in self.keywords(node):
            if (w in MODIFIER_WORDS or w == "deprecated") and w not in seen:
                seen.append(w)
        return tuple(seen)

    def visibility(self, node: Node, d: Def, parent_kind: str) -> str:
        for w in self.keywords(node):
            if w in VISIBILITY_WORDS:
                return "public" if w == "pub" else w
        return self.default_visibility

    # --- references --------------------------------------------------------------------

    def references(self, node: Node) -> list[Ref]:
        """References made at `node` (not its descendants: the walker visits those)."""
        field = self.calls.get(node.type)
        if field is not None:
            return self.call_references(node, field)
        if node.type in self.type_refs:
            return self.type_ref(node)
        return []

    def call_references(self, node: Node, field: str) -> list[Ref]:
        """The call at `node` to the callee in `field` ("": the first named child)."""
        callee = callee_node(node, field)
        if callee is not None:
            name = callee_name(text(callee))
            if name:
                return [Ref("call", name, callee)]
        return []

    def type_ref(self, node: Node) -> list[Ref]:
        return [Ref("type_ref", callee_name(text(node)), node)]
