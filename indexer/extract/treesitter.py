"""Tree-sitter extraction: parse within a time budget, apply the language's rules, chunk.

Returns None when tree-sitter-language-pack has no grammar for the language, so the caller
falls back to text chunks.
"""

from __future__ import annotations

import time
from functools import lru_cache

from tree_sitter import Parser, Tree

from ...errors import ExtractTimeout
from ...types import Extraction
from . import (lang_c, lang_csharp, lang_go, lang_java, lang_js, lang_kotlin, lang_php, lang_python,
               lang_ruby, lang_rust, lang_scala, lang_swift, preproc)
from .budget import PARSE_BUDGET_S
from .chunks import code_chunks
from .generic import GenericRules
from .receivers import typed_receivers
from .rules import SOURCE, Rules
from .walk import walk

# Small reads: some scanners (Perl's) make the lexer fetch text ~27k times on a 400 KB file,
# and each fetch copies a whole block (64 KB blocks: 1.2 s to parse it, 4 KB: 0.19 s).
_READ_BLOCK = 1 << 12

# language -> the module holding its `RULES` (a Rules, or a dict of them by language)
RULE_MODULES = {
    "python": lang_python,
    "javascript": lang_js, "typescript": lang_js, "tsx": lang_js,
    "go": lang_go, "rust": lang_rust, "java": lang_java,
    "c": lang_c, "cpp": lang_c, "csharp": lang_csharp,
    "ruby": lang_ruby, "php": lang_php, "swift": lang_swift,
    "kotlin": lang_kotlin, "scala": lang_scala,
}


@lru_cache(maxsize=None)
def _parser(language: str) -> Parser | None:
    from tree_sitter_language_pack import get_parser

    try:
        return get_parser(language)  # type: ignore[arg-type]
    except (LookupError, ValueError):
        return None


@lru_cache(maxsize=None)
def rules_for(language: str) -> Rules:
    module = RULE_MODULES.get(language)
    if module is None:
        return GenericRules()
    rules = module.RULES
    return rules[language] if isinstance(rules, dict) else rules


def parse(source: bytes, language: str, budget_s: float = PARSE_BUDGET_S) -> Tree | None:
    """Parse `source`; None without a grammar; ExtractTimeout past `budget_s` seconds."""
    parser = _parser(language)
    if parser is None:
        return None
    deadline = time.monotonic() + budget_s

    def read(offset: int, _point: object) -> bytes:
        return source[offset:offset + _READ_BLOCK]

    def over_budget(*_state: object) -> bool:
        return time.monotonic() > deadline

    try:
        # Only a read callback takes a progress callback. The tree has no bytes attached:
        # walk it with rules.SOURCE set (extract_tree does), not through node.text.
        return parser.parse(read, progress_callback=over_budget)
    except ValueError as exc:  # tree-sitter aborts with "Parsing failed" when we stop it
        # A stopped parser resumes the stopped parse on its next call, whatever the new
        # source: forget it, or the next file gets a tree of this one.
        parser.reset()
        if time.monotonic() > deadline:
            raise ExtractTimeout(f"{language} parse exceeded {budget_s:.0f}s") from exc
        raise


# Rounds of macro unwrapping (each one a parse of the file): macros nested deeper stay opaque.
_MACRO_ROUNDS = 4


def _holds_items(source: bytes, language: str, start: int, end: int) -> bool:
    """True when source[start:end] parses, on its own and without an error, as items."""
    tree = parse(source[start:end], language)
    if tree is None or tree.root_node.has_error:
        return False
    return any(c.type.endswith("_item") or c.type == "macro_invocation"
               for c in tree.root_node.named_children)


def _unwrap_item_macros(tree: Tree, source: bytes, language: str, rules: Rules) -> Tree:
    """The tree of `source` with every item-holding macro invocation's name and delimiters
    blanked (byte offsets unchanged), so its items parse as items."""
    blanked = source
    for _ in range(_MACRO_ROUNDS):
        token = SOURCE.set(blanked)
        try:
            found = rules.item_macros(tree.root_node, lambda a, b: _holds_items(blanked, language, a, b))
        finally:
            SOURCE.reset(token)
        if not found:
            break
        buf = bytearray(blanked)
        for start, opened, closed, end in found:
            for a, b in ((start, opened), (closed, end)):
                buf[a:b] = bytes(c if c in b"\r\n" else 32 for c in buf[a:b])
        blanked = bytes(buf)
        tree = parse(blanked, language)
    return tree


def _one_branch_each(tree: Tree, source: bytes, language: str) -> tuple[Tree, bytes]:
    """The tree of `source` with one branch of each `#if` kept when that has fewer errors
    (preproc.py says why), and the bytes it parsed."""
    if not tree.root_node.has_error or language not in preproc.LANGUAGES:
        return tree, source
    return preproc.resolve(tree, source, lambda blanked: parse(blanked, language))


def extract_tree(source: bytes, language: str) -> Extraction | None:
    """Definitions, references and syntax-aware chunks of `source`, or None without a grammar."""
    language = lang_c.grammar_of(source, language)
    tree = parse(source, language)
    if tree is None:
        return None
    rules = rules_for(language)
    tree, parsed = _one_branch_each(tree, source, language)
    tree = _unwrap_item_macros(tree, parsed, language, rules)
    token = SOURCE.set(source)
    try:
        walked = walk(tree.root_node, rules, tree.language)
    finally:
        SOURCE.reset(token)
    symbol_at = {}
    for i, (sym, node) in enumerate(zip(walked.symbols, walked.nodes)):
        symbol_at.setdefault((node.start_byte, node.end_byte), i)
        symbol_at.setdefault((sym.span.start_byte, sym.span.end_byte), i)
    token = SOURCE.set(source)
    try:
        refs = typed_receivers(tree.root_node, tree.language, language, walked.symbols, walked.references)
    finally:
        SOURCE.reset(token)
    return Extraction(symbols=walked.symbols, references=refs,
                      chunks=code_chunks(tree.root_node, source, symbol_at))
