"""Extraction must survive hostile input: deep nesting, invalid syntax, empty files."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.indexer.extract import extract
from codeagent.indexer.extract.treesitter import extract_tree, parse, rules_for
from codeagent.indexer.extract.walk import walk
from codeagent.indexer.languages import FULL_LANGUAGES
from codeagent.errors import ExtractTimeout

NESTED = {
    "python": "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n",
    "javascript": "let x = " + "[" * 5000 + "]" * 5000 + ";\n",
    "c": "int x = " + "(" * 5000 + "1" + ")" * 5000 + ";\n",
    "rust": "fn f() { let x = " + "(" * 5000 + "1" + ")" * 5000 + "; }\n",
    "java": "class A { int x = " + "(" * 5000 + "1" + ")" * 5000 + "; }\n",
}


@pytest.mark.parametrize("language", sorted(NESTED))
def test_deeply_nested_input_does_not_crash(language: str) -> None:
    ex = extract(NESTED[language].encode(), language)
    assert ex.chunks and ex.chunks[0].span.start_line == 1


def test_deeply_nested_definitions_do_not_crash() -> None:
    depth = 2000
    src = "".join(f"function f{i}() {{\n" for i in range(depth)) + "}\n" * depth
    ex = extract(src.encode(), "javascript")
    assert len(ex.symbols) == depth
    assert ex.symbols[-1].qualified_name.count(".") == depth - 1
    py = "".join("    " * i + f"def f{i}():\n" for i in range(depth)) + "    " * depth + "pass\n"
    assert extract(py.encode(), "python").chunks


def test_invalid_syntax_still_yields_chunks_and_symbols() -> None:
    src = b"def good(a):\n    return a\n\nclass Broken(:\n    def m(self) ->:\n        pass\n)))\n"
    ex = extract(src, "python")
    assert ex.chunks
    assert "good" in [s.name for s in ex.symbols]
    covered = {line for c in ex.chunks for line in range(c.span.start_line, c.span.end_line + 1)}
    assert {1, 2} <= covered


def test_unknown_grammar_returns_none() -> None:
    assert extract_tree(b"whatever", "no-such-language") is None


@pytest.mark.parametrize("language", FULL_LANGUAGES)
def test_empty_file(language: str) -> None:
    ex = extract(b"", language)
    assert ex.symbols == [] and ex.chunks == []


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="def class():\n\t ,.=[]{}#\"'ab1", max_size=300))
def test_arbitrary_text_keeps_invariants(src: str) -> None:
    ex = extract(src.encode(), "python")
    n = len(ex.symbols)
    for i, s in enumerate(ex.symbols):
        assert -1 <= s.parent < i
        assert s.span.start_byte <= s.name_span.start_byte <= s.name_span.end_byte <= s.span.end_byte
    for r in ex.references:
        assert -1 <= r.source < n
    for c in ex.chunks:
        assert c.text == src.encode()[c.span.start_byte:c.span.end_byte].decode()


GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("language", sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()))
def test_node_type_filter_loses_nothing(language: str) -> None:
    """The walker's fast path (skip node types no hook looks at) changes no result."""
    source = next(p for p in (GOLDEN / language).iterdir() if p.name.startswith("sample.")).read_bytes()
    language = language.split(".")[0]
    rules = rules_for(language)
    unfiltered = copy.copy(rules)
    unfiltered.hook_types = None
    tree = parse(source, language)
    fast, slow = walk(tree.root_node, rules, tree.language), walk(tree.root_node, unfiltered)
    assert fast.symbols == slow.symbols
    assert fast.references == slow.references


def test_parse_past_its_budget_raises_extract_timeout() -> None:
    source = b"x = [" + b"1, " * 100_000 + b"]\n"
    with pytest.raises(ExtractTimeout):
        parse(source, "python", budget_s=0.0)
    assert parse(source, "python", budget_s=120.0).root_node.type == "module"


def test_a_parse_after_a_timeout_is_of_the_new_source() -> None:
    """tree-sitter resumes a stopped parse on the parser's next call: the next file must not
    get (part of) the stopped file's tree."""
    big = b"".join(b"def f%d(a, b):\n    return [a * b for _ in range(%d)]\n" % (i, i) for i in range(20000))
    with pytest.raises(ExtractTimeout):
        parse(big, "python", budget_s=0.0)
    small = b"x = 1\n"
    tree = parse(small, "python", budget_s=120.0)
    assert (tree.root_node.end_byte, tree.root_node.type) == (len(small), "module")


@pytest.mark.parametrize("language", sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()))
def test_truncated_and_spliced_sources_never_crash(language: str) -> None:
    """Broken trees (every hook sees ERROR/MISSING nodes) still extract with valid indexes."""
    source = next(p for p in (GOLDEN / language).iterdir() if p.name.startswith("sample.")).read_bytes()
    for cut in range(0, len(source), 53):
        for variant in (source[:cut], source[cut:], source[:cut] + source[cut + 17:]):
            ex = extract(variant.decode("utf-8", "ignore").encode(), language)
            assert all(-1 <= s.parent < len(ex.symbols) for s in ex.symbols)
            assert all(-1 <= r.source < len(ex.symbols) for r in ex.references)


def test_deeply_qualified_cpp_name_does_not_recurse() -> None:
    ex = extract(("void " + "a::" * 3000 + "f() {}\n").encode(), "cpp")
    assert [s.name for s in ex.symbols] == ["f"]


def test_c_macro_lines_are_blanked_only_at_declaration_level() -> None:
    """An upper-case line that is code (the last enumerator, an initializer, a statement in
    a body, a #define's continuation) is left alone; one at declaration level is read past."""
    src = (b"enum colour {\n    RED,\n    GREEN\n};\n"
           b"static int table[] = {\n    ONE,\n    TWO\n};\n"
           b"#define WRAP(x) \\\n    DO_WRAP\n"
           b"void run(void) {\n    begin();\n    CHECK_STATE\n    int x = end();\n}\n"
           b"BEGIN_DECLS\n"
           b"int after(void) { return 1; }\n"
           b"END_DECLS\n")
    ex = extract(src, "c")
    names = {(s.kind, s.name) for s in ex.symbols}
    assert {("constant", "RED"), ("constant", "GREEN"), ("function", "run"), ("function", "after"),
            ("macro", "WRAP"), ("variable", "table")} <= names, names
    assert not {n for _, n in names} & {"BEGIN_DECLS", "END_DECLS", "CHECK_STATE", "ONE", "TWO"}, names
    assert [r.target for r in ex.references if r.kind == "call"] == ["begin", "end"]
