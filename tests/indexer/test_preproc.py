"""Conditional-compilation branches (`#if/#else/#endif`, `#ifdef`, Swift `#if os(...)`) keep
every member in its type, in each language that has them (indexer/extract/preproc.py)."""

from __future__ import annotations


from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.indexer.extract import extract
from codeagent.indexer.extract.preproc import _blank, _groups
from codeagent.types import NO_PARENT

# A C# reader in the shape of Newtonsoft.Json's JsonTextReader: two headers of one class, two
# opening lines of one `if` (each branch opens a brace its `#endif` does not close), and a
# member wrapped whole.
CSHARP = """using System;
#if HAVE_ASYNC
using System.Threading.Tasks;
#endif

namespace Json.Lite
{
#if HAVE_ASYNC
    public partial class TextReader : ReaderBase
#else
    public class TextReader : ReaderBase
#endif
    {
        private int _pos;

        public override bool Read()
        {
#if DEBUG
            if (_pos < 0) {
#else
            if (_pos < -1) {
#endif
                return false;
            }
            return ReadInternal();
        }

        private bool ReadInternal() { return true; }

#if HAVE_BIG_INTEGER
        public object ParseBig() { return null; }
#endif

        public void Close() { }
    }
}
"""

SWIFT = """import Foundation

public class Session {
    public let name: String
    #if os(iOS) || os(tvOS)
    public func iosOnly() {}
    #elseif os(macOS)
    public func macOnly() {}
    #else
    public func other() {}
    #endif
    public func after() {}
}

extension Session {
    #if canImport(Combine)
    func combine() {
    #else
    func noCombine() {
    #endif
        print("x")
    }
    func tail() {}
}
"""

C = """struct point {
    int x;
#ifdef HAVE_Z
    int z;
#endif
    int y;
};

#ifdef _WIN32
static int open_file(const char *p) {
#else
static int open_file(const char *p, int flags) {
#endif
    return 0;
}

#if 0
static int dead(void) {
#else
static int alive(void) {
#endif
    return 1;
}

int after(void) { return open_file("a"); }
"""

CPP = """namespace ns {
class Widget {
public:
    void a();
#ifdef FEATURE
    void b(int x) {
#else
    void b() {
#endif
    }
    void d() { }
};
}
"""

OBJC = """#import <Foundation/Foundation.h>

@interface Widget : NSObject
- (void)draw;
@end

@implementation Widget
#if TARGET_OS_IPHONE
- (void)tap {
#else
- (void)click {
#endif
    [self draw];
}
- (void)draw {
}
@end
"""


def _outline(source: str, language: str) -> list[tuple[str, str]]:
    """(qualified name, parent's qualified name) of each symbol."""
    symbols = extract(source.encode(), language).symbols
    return [(s.qualified_name, symbols[s.parent].qualified_name if s.parent != NO_PARENT else "")
            for s in symbols]


def test_csharp_members_after_if_else_stay_in_their_class() -> None:
    assert _outline(CSHARP, "csharp") == [
        ("Json.Lite", ""),
        ("Json.Lite.TextReader", "Json.Lite"),
        ("Json.Lite.TextReader._pos", "Json.Lite.TextReader"),
        ("Json.Lite.TextReader.Read", "Json.Lite.TextReader"),
        ("Json.Lite.TextReader.ReadInternal", "Json.Lite.TextReader"),
        ("Json.Lite.TextReader.ParseBig", "Json.Lite.TextReader"),
        ("Json.Lite.TextReader.Close", "Json.Lite.TextReader"),
    ]


def test_swift_if_os_inside_a_class_keeps_every_branch_in_the_class() -> None:
    assert _outline(SWIFT, "swift") == [
        ("Session", ""), ("Session.name", "Session"), ("Session.iosOnly", "Session"),
        ("Session.macOnly", "Session"), ("Session.other", "Session"), ("Session.after", "Session"),
        ("Session", ""), ("Session.combine", "Session"), ("Session.tail", "Session"),
    ]


def test_c_ifdef_around_fields_and_a_split_function_header() -> None:
    symbols = extract(C.encode(), "c").symbols
    assert _outline(C, "c") == [
        ("point", ""), ("point.x", "point"), ("point.z", "point"), ("point.y", "point"),
        ("open_file", ""), ("alive", ""), ("after", ""),
    ]
    spans = {s.name: (s.span.start_line, s.span.end_line) for s in symbols}
    assert spans["open_file"] == (10, 15) and spans["alive"] == (20, 23)   # `#if 0` is dead code


def test_cpp_methods_after_a_split_ifdef_stay_in_their_class() -> None:
    assert _outline(CPP, "cpp") == [
        ("ns", ""), ("ns.Widget", "ns"), ("ns.Widget.a", "ns.Widget"), ("ns.Widget.b", "ns.Widget"),
        ("ns.Widget.d", "ns.Widget"),
    ]


def test_objc_methods_after_a_split_if_stay_in_their_implementation() -> None:
    assert _outline(OBJC, "objc") == [
        ("Widget", ""), ("Widget.draw", "Widget"),
        ("Widget", ""), ("Widget.tap", "Widget"), ("Widget.draw", "Widget"),
    ]


def test_a_file_that_parses_keeps_both_branches() -> None:
    clean = "class W {\npublic:\n#ifdef F\n    void b() { }\n#else\n    void c() { }\n#endif\n};\n"
    assert _outline(clean, "cpp") == [("W", ""), ("W.b", "W"), ("W.c", "W")]


def test_python_comments_that_look_like_directives_are_not_touched() -> None:
    source = "class A:\n#if X\n    def f(self):\n        pass\n#else\n    def g(self):\n        pass\n#endif\n"
    assert _outline(source, "python") == [("A", ""), ("A.f", "A"), ("A.g", "A")]


_LINES = st.lists(st.sampled_from(["#if A", "#ifdef B", "#elif C", "#else", "#endif", "#if 0",
                                   "int x;", "void f() {", "}", "  #  else", "#define M 1 \\", ""]),
                  max_size=30)


@settings(max_examples=200, deadline=None)
@given(_LINES, st.sets(st.integers(0, 30)))
def test_blanking_keeps_every_offset_and_line(lines: list[str], reduced: set[int]) -> None:
    source = "\r\n".join(lines).encode() if len(lines) % 3 == 0 else "\n".join(lines).encode()
    blanked = _blank(source, [g for g in _groups(source) if g.closed], reduced)
    assert len(blanked) == len(source)
    assert [i for i, c in enumerate(blanked) if c in b"\r\n"] == [i for i, c in enumerate(source) if c in b"\r\n"]
    assert all(b == c or b == 32 for b, c in zip(blanked, source))


def test_show_finds_a_member_after_if_else_by_its_qualified_name(git_repo, cli) -> None:
    git_repo.write_many({"src/TextReader.cs": CSHARP})
    git_repo.commit("reader")
    cli("build", "--ref", "HEAD", cwd=git_repo.path, check=True)
    shown = cli("show", "TextReader.Read", "--json", "--no-source", cwd=git_repo.path, check=True)
    assert "Json.Lite.TextReader.Read" in shown.stdout
    outline = cli("show", "src/TextReader.cs", "--json", cwd=git_repo.path, check=True)
    assert "Json.Lite.TextReader.Close" in outline.stdout
