"""The definition sources bench/graph_truth.py reads for Swift and Scala, which no ctags or
SCIP indexer here parses: Pygments' lexers, with local functions left out (as ctags leaves
out locals) and text in strings and comments ignored."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.repo_helpers import GitRepo

# Loaded by path: bench/ on sys.path would shadow the `mcp` SDK with bench/mcp.py.
_SPEC = importlib.util.spec_from_file_location(
    "lexer_defs", Path(__file__).resolve().parents[2] / "bench" / "lexer_defs.py")
lexer_defs = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(lexer_defs)

SWIFT = '''public class Session: @unchecked Sendable {
    class func make() -> Session { Session() }
    public let queue: DispatchQueue
    var computed: Int { get { 1 } }
    func request(_ url: String) -> DataRequest {
        func local() {}
        let s = "func fake() {"
        return DataRequest()
    }
    struct Inner {}
}
// func commented() {}
protocol Retrier { func retry() }
extension Session { func adapt() {} }
actor Worker { func run() async {} }
'''

SCALA = '''object Path {
  def apply(s: String): Path = {
    def local(x: Int) = x + 1
    new Path(s)
  }
}
sealed trait FilePath
case class RelPath(segments: IndexedSeq[String]) extends FilePath {
  override def toString = segments.mkString("/") // def commented = 1
}
enum Color:
  case Red
  def rgb: Int =
    def inner = 1
    inner
extension (p: Path) def size: Long = 0
'''


def test_lexer_definitions(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "r")
    repo.write_many({"Sources/Session.swift": SWIFT, "src/Path.scala": SCALA})
    repo.commit()
    assert sorted(lexer_defs.swift_lexer_defs(repo.path), key=lambda d: (d[2], d[1])) == [
        ("Sources/Session.swift", "Session", 1), ("Sources/Session.swift", "make", 2),
        ("Sources/Session.swift", "request", 5), ("Sources/Session.swift", "Inner", 10),
        ("Sources/Session.swift", "Retrier", 13), ("Sources/Session.swift", "retry", 13),
        ("Sources/Session.swift", "adapt", 14), ("Sources/Session.swift", "Worker", 15),
        ("Sources/Session.swift", "run", 15)]
    assert sorted(lexer_defs.scala_lexer_defs(repo.path), key=lambda d: (d[2], d[1])) == [
        ("src/Path.scala", "Path", 1), ("src/Path.scala", "apply", 2), ("src/Path.scala", "FilePath", 7),
        ("src/Path.scala", "RelPath", 8), ("src/Path.scala", "toString", 9), ("src/Path.scala", "Color", 11),
        ("src/Path.scala", "rgb", 13), ("src/Path.scala", "size", 16)]
