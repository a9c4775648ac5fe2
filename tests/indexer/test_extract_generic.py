"""Languages without their own rules: chunks for every grammar, definitions where the generic
rule recognises them, line windows when there is no grammar at all."""

from __future__ import annotations

import pytest

from codeagent.indexer.extract import extract

CASES = [
    ("bash", "#!/bin/bash\nbuild() {\n  make all\n}\nfunction clean { rm -rf out; }\nbuild\n",
     {("function", "build"), ("function", "clean")}),
    ("lua", "local M = {}\nfunction M.add(a, b)\n  return a + b\nend\nlocal function helper() end\n",
     {("function", "M.add"), ("function", "helper")}),
    ("proto", 'syntax = "proto3";\nmessage Foo { int32 a = 1; }\nservice S { rpc Get(Foo) returns (Foo); }\n',
     {("struct", "Foo"), ("interface", "S"), ("method", "S.Get")}),
    ("dart", "class A { int f() => 1; }\nvoid main() { print(1); }\n",
     {("class", "A"), ("method", "A.f"), ("function", "main")}),
    ("perl", "sub foo { return 1; }\n", {("function", "foo")}),
    ("elisp", '(defun foo (x) "doc" (+ x 1))\n', {("function", "foo")}),
    ("haskell", "module Main where\nadd :: Int -> Int -> Int\nadd a b = a + b\n", {("function", "add")}),
]


@pytest.mark.parametrize(("language", "source", "expected"), CASES, ids=[c[0] for c in CASES])
def test_generic_definitions(language: str, source: str, expected: set) -> None:
    ex = extract(source.encode(), language)
    assert {(s.kind, s.qualified_name) for s in ex.symbols} == expected
    assert ex.chunks and ex.chunks[0].kind == "code"


@pytest.mark.parametrize("language", ["yaml", "css", "sql", "toml", "json", "hcl"])
def test_grammar_without_definitions_still_chunks(language: str) -> None:
    ex = extract(b"a: 1\n" * 200, language)
    assert ex.chunks
    assert all(c.kind == "code" for c in ex.chunks)


def test_big_file_is_split_into_bounded_chunks() -> None:
    src = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y\n\n" for i in range(200))
    ex = extract(src.encode(), "python")
    sizes = [c.span.end_line - c.span.start_line + 1 for c in ex.chunks]
    assert len(ex.chunks) > 5 and max(sizes) <= 80
    covered = {n for c in ex.chunks for n in range(c.span.start_line, c.span.end_line + 1)}
    code_lines = {i + 1 for i, line in enumerate(src.splitlines()) if line.strip()}
    assert code_lines <= covered
    assert all(ex.symbols[c.symbol].kind == "function" for c in ex.chunks)


def test_big_class_is_split_by_members() -> None:
    methods = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(60))
    src = f"class Big:\n    '''Many methods.'''\n\n{methods}"
    ex = extract(src.encode(), "python")
    assert len(ex.chunks) >= 2
    assert ex.chunks[0].span.start_line == 1
    assert ex.chunks[-1].span.end_line >= src.count("\n") - 1
