"""The on-disk format: the only thing `indexer` and `query` share besides core types.

This package is the whole build/read contract: the versions below and in assembly.py, the
store layout, the shard codec (shard.py), the manifest (manifest.py) and the DDL of the
assembled DuckDB tables (assembly.py). Readers check every version they depend on.

Bump SCHEMA_VERSION when the shard or manifest layout changes, EXTRACTOR_VERSION when the
same bytes would extract differently. Both are part of every shard key, so a bump
invalidates old shards by construction (nothing is rewritten in place).

SCHEMA_VERSION history:
  1: shard = one Parquet row per file: file facts + lists of chunks, symbols, references,
     term postings. Manifest = canonical JSON, files sorted by path.
  2: a chunk's text is NULL when it is exactly its file's text from start_byte to end_byte
     (readers restore it: shard.chunk_text; query/sourcetext.chunk_slice).
  3: a chunk's, symbol's and reference's string fields stored as one fixed_size_list<string>
     and integer fields as one fixed_size_list<int64> (shard.Packed), no ordinal (the
     position in the list): 17 Parquet leaf columns instead of 52, each costing CPU to write.
EXTRACTOR_VERSION history:
  1: line-window text chunks for code, Markdown/RST sections (no tree-sitter yet).
  2: tree-sitter definitions, references and syntax-aware chunks for 15 languages, a
     generic definition rule for every other grammar.
  3: a symbol's BM25 postings cover its name, signature, doc and own body without its child
     symbols' spans (they were counted again in every enclosing symbol).
  4: shard Parquet compressed with LZ4 instead of zstd (same rows; cheaper to write).
  5: text in which detect-secrets finds a secret (a private key, a token) is a `secret` skip,
     not a shard: content indexed by 4 could hold one.
  6: Rust items inside item-level macro invocations (`cfg_rt! { pub fn f() {} }`) are
     definitions; the invocations themselves are no longer `call` references. JavaScript/
     TypeScript `export default name` is an `import` reference of `name` aliased `default`.
     A call's `module` holds its receiver's type where the source writes it (Python and
     JavaScript/TypeScript, Go, Java: `x: Foo`, `x = Foo()`, `new Foo()`, `x := &Foo{}`,
     `Foo x`, typed `self`/`this`/receiver fields).
  7: receiver types also for C#, Kotlin, Swift, Rust, PHP and Ruby (typed parameters, fields,
     properties and locals; `new Foo()`, `Foo()`, `Foo::new()`, `Foo.new`; `Arc<Foo>`/`Box<Foo>`
     as Foo; fields seen from a Rust `impl` or Swift `extension` of their type). C/C++:
     declaration-level macros blanked and parsed again (`BEGIN_NAMESPACE` lines, `class
     EXPORT_API Name`); functions that error recovery flattened into an ERROR node (an
     `#ifdef` splitting braces) are definitions.
  8: C++: a `.h` holding C++ (Linguist's markers: `namespace x`, `class X`, `template <`,
     `std::`, access labels...) is parsed with the C++ grammar (its language stays `c`);
     upper-case specifier macros (`FMT_CONSTEXPR Name(...) : init {}`) are blanked in a tree
     with errors, and so are annotation macros after a declarator (`void Lock() LOCK_FN() {`);
     conversion operators (`operator bool`) are methods; a specialization `struct is_x<char>`
     is named `is_x`; `struct Outer::Inner {` is `Inner` in `Outer`. Functions returning a
     reference (`T& f()`, `Status& Status::operator=`) are definitions (they were missed).
     C/C++: in a tree with errors, `#include`/`#define`/`#undef` lines inside a brace or
     argument list (an array of entries built with macros) are blanked: the error they caused
     swallowed the definitions after the list. PHP: `define('NAME', value)` is a constant.
  9: Kotlin: a primary constructor on the line after its class's name (`class FileSpec\n
     private constructor(...)`) no longer ends the class at the name: its modifiers and
     keyword are blanked in a tree with errors and the file parsed again (the class's members
     were read as top-level statements, and some definitions after it were lost).
 10: C, C++, C#, Swift, Objective-C: a file whose tree has errors is parsed again with its
     `#if/#elif/#else/#endif` directive lines blanked and, of a conditional whose branches
     split brackets, one branch kept (extract/preproc.py): members after such a branch keep
     their enclosing type (they were top-level or nested in the previous method). Objective-C
     `@interface`/`@implementation` are classes holding their methods. A callee's turbofish
     is dropped whole (`pool::spawn_blocking::<F>` was `pool.spawn_blocking.`, `Foo::<T>::new`
     `Foo..new`: no last name to resolve). Rust calls inside a macro's arguments
     (`assert!(f(x))`, `vec![a::g()]`) are call references. Kotlin: a next-line primary
     constructor whose annotations stand on lines of their own is blanked too.
 11: shard Parquet encodings (same rows): the postings' terms dictionary-encoded per file,
     the integer leaves delta bit-packed, the text and the symbols' and references' strings
     zstd-compressed (shard.DICTIONARY_LEAVES, DELTA_LEAVES, ZSTD_LEAVES): 0.64x the shards'
     bytes on the standard library.
 12: Java `package a.b;` and Kotlin `package a.b` are package symbols (kind `package`, not a
     scope): the symbol graph takes a JVM file's module from its declared package, not its
     path, so a file under `src/` or `app/src/` (no `src/main/java/` root) resolves imports
     and calls across packages.
 13: Scala's leading `package a.b` clauses without a body are one package symbol (chained
     clauses add up: `package a.b` then `package c` is `a.b.c`), so Scala takes its module
     from the declared package too (a Mill-style `foo/src/` layout had its path).
 14: Scala's `package a.b { ... }` is a package symbol its members are nested in (`a.b.X`;
     a nested block adds to its enclosing one, a top-level block to the leading clauses):
     members of such a block were top-level symbols and the file took its module from its path.
 15: PHP: when a file has several `namespace A;` statements, each is a scope over the
     declarations up to the next (`App.Models.User`, `App.Http.User`); they were top-level
     symbols of one module, the namespaces' shared prefix (`App.User` twice). A file with one
     such statement is unchanged.
"""

from __future__ import annotations

SCHEMA_VERSION = 3
EXTRACTOR_VERSION = "15"
MANIFEST_FORMAT = "codeagent-manifest"
# The assembled DuckDB file's layout and versions: assembly.py (re-exported here).
from .assembly import ASSEMBLY_VERSION, GRAPH_VERSION  # noqa: E402,F401

# Why a file was not parsed. Recorded in the manifest, never silently dropped.
SKIP_BINARY = "binary"
SKIP_INVALID_UTF8 = "invalid_utf8"
SKIP_TOO_LARGE = "too_large"
SKIP_MINIFIED = "minified"
SKIP_PARSER_TIMEOUT = "parser_timeout"
SKIP_UNREADABLE = "unreadable"
SKIP_SYMLINK_ESCAPE = "symlink_outside_repo"
SKIP_SYMLINK = "symlink"
SKIP_NON_UTF8_PATH = "non_utf8_path"
SKIP_NOT_REGULAR = "not_a_regular_file"
SKIP_SUBMODULE = "submodule"
SKIP_SECRET = "secret"  # .env, private keys, credentials: never read, never indexed
SKIP_MISSING_OBJECT = "missing_object"  # the tree names a blob the object database lacks (partial clone)
SKIP_HARD_LINK = "hard_link"  # a work-tree file with several links may alias one outside the repo
SKIP_REASONS = (
    SKIP_BINARY, SKIP_INVALID_UTF8, SKIP_TOO_LARGE, SKIP_MINIFIED, SKIP_PARSER_TIMEOUT,
    SKIP_UNREADABLE, SKIP_SYMLINK_ESCAPE, SKIP_SYMLINK, SKIP_NON_UTF8_PATH, SKIP_NOT_REGULAR,
    SKIP_SUBMODULE, SKIP_SECRET, SKIP_MISSING_OBJECT, SKIP_HARD_LINK,
)

STATUS_INDEXED = "indexed"
STATUS_SKIPPED = "skipped"

DEFAULT_MAX_FILE_BYTES = 2 * 1024 * 1024
MINIFIED_LINE_BYTES = 5000  # a file whose mean line is longer than this is treated as minified

# Store layout, relative to the store root.
OBJECTS_DIR = "objects"
ACTIONS_DIR = "actions"  # shard key -> object id (like Bazel's action cache)
ACTION_PACKS_DIR = "packs"  # under ACTIONS_DIR: entries written in batches (store._ActionCache)
REFS_DIR = "refs"
ASSEMBLED_DIR = "assembled"
CACHE_DIR = "cache"
TMP_DIR = "tmp"
LOGS_DIR = "logs"
# <commit>.json: search quality measured on the history below a published commit (store.scores)
SCORES_DIR = "scores"
SCORES_FORMAT = 1
LOCK_FILE = "lock"
STORE_MARKER = "STORE"
DUCKDB_FILE = "index.duckdb"
DUCKDB_WAL = DUCKDB_FILE + ".wal"  # uncheckpointed changes: assemblies of older code left one
COMPLETE_MARKER = "COMPLETE"
# JSON {file name: [size, blake3, mtime_ns]} of every file in an assembled directory, written
# before COMPLETE; readers check it before DuckDB/usearch/numpy touch the bytes (a missing SUMS
# means an assembly from before SUMS existed: the next build re-assembles it; SUMS from before
# mtime_ns was recorded have two fields).
ASSEMBLY_SUMS = "SUMS"
# JSON {file name: [st_dev, st_ino, size, mtime_ns, ctime_ns, blake3]}: the stat of each file
# when its hash was last found to match SUMS (by the build that wrote it or a reader), written
# atomically beside SUMS. A reader whose stat of a file is the same skips re-hashing it: every
# write moves the ctime. Optional (absent: every file is hashed); `verify` never trusts it.
ASSEMBLY_STAMPS = "VERIFIED"
# An overlay assembly (overlay.py) holds OVERLAY_FILE and OVERLAY_MARKER instead of DUCKDB_FILE.
from .overlay import GRAPH_PART, OVERLAY_FILE, OVERLAY_MARKER  # noqa: E402,F401

# Vectors (indexer/assemble/vectors.py writes the objects, indexer/assemble/ann.py the assembled files).
# Object: VECTORS_MAGIC, one line of canonical JSON {embedder_id, dim, items: [[doc_kind,
# ordinal, item_hash]...]}, then count x dim little-endian float16. Keyed in the action
# cache by (embedder id, shard id); listed in the manifest's extras["objects"].
VECTORS_MAGIC = b"codeagent-vectors 1\n"
# Assembled: VECTORS_META (JSON: embedder_id, dim, count, ann...), VECTORS_MATRIX (float16
# .npy, one row per item, files in path order, a file's items in its object's order),
# VECTOR_ROWS (.npy records key int64, kind uint8 0=symbol 1=chunk, ordinal int32, one per
# row), VECTOR_FILES (JSON {"files": [[path, vector object id, first row, row count]...]})
# and ANN_FILE (usearch, cosine, keyed by `key`) when there are enough rows.
VECTORS_META = "vectors.json"
VECTORS_MATRIX = "vectors.npy"
VECTOR_ROWS = "vector_rows.npy"
VECTOR_FILES = "vector_files.json"
ANN_FILE = "vectors.usearch"
