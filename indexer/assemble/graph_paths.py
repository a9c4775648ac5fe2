"""Path-qualified references: `crate::a::f()`, `super::f()`, `pool::f()` (Rust), `ns::f()`
(C++), `\\Ns\\f()` (PHP). docs/graph-resolution.md states the rules.

Targets arrive folded to keys (`crate::a::f` reads `crate.a.f`, graph_sql.target_key).
Two exact tiers of graph_sql._RESOLVE read the columns made here:
  6. `path_key`: the full key the path names, made absolute from the file's module (Rust
     `crate::`, `self::`, any number of `super::`), looked up as a symbol's fq_key or as a
     re-exported name (`pub(crate) use runtime::enter_runtime;` in module a::context makes
     `a::context::enter_runtime` name it);
  7. `path_tail`: the path without its `crate`/`self`/`super` segments, when its first
     segment names a module (a segment of a module path derived from a file path, or a
     module or namespace symbol): a symbol whose fq_key ends with it (`pool::spawn_blocking`
     -> `tokio::runtime::blocking::pool::spawn_blocking`, `b::f()` inside `namespace a` ->
     `a::b::f`). Not when the first segment is bound by an import of something outside the
     repository (`io::Error::new` after `use std::io`).
"""

from __future__ import annotations

# Languages whose `::`/`\` paths are matched by their tail (tier 7).
PATH_LANGUAGES = ("rust", "cpp", "php")

# First segments of Rust paths into the standard libraries: never matched by their tail, nor
# by their last name (`std::thread::spawn` says nothing about the repository's `spawn`).
STD_HEADS = "('std', 'core', 'alloc')"

# How many `super.` segments start a Rust key (each is six characters).
_SUPERS = "(length(regexp_extract(r0.tkey, '^(super\\.)+')) // 6)"

# The full key a path-qualified target names (`crate::a::f`, `self::f`, `super::f` made
# absolute from the file's Rust module; `ns::f`, `pkg.mod.f` as written), "" for a bare name.
# A Rust `self.f` that no member of the enclosing type resolves (tier 2 comes first) is
# tried as `self::f`.
PATH_KEY = f"""CASE WHEN r0.head = r0.last THEN ''
    WHEN r0.language <> 'rust' THEN r0.tkey
    WHEN r0.head = 'crate' THEN split_part(m.mkey, '.', 1) || substr(r0.tkey, 6)
    WHEN r0.head = 'self' THEN m.mkey || substr(r0.tkey, 5)
    WHEN r0.head = 'super' THEN
        coalesce(nullif(array_to_string(string_split(m.mkey, '.')[:-1 - {_SUPERS}], '.'), ''), m.mkey)
        || substr(r0.tkey, 6 * {_SUPERS})
    ELSE r0.tkey END"""

# The tail tier 7 matches: at least two segments left once `crate`/`self`/`super` are gone.
PATH_TAIL = f"""CASE WHEN r0.head <> r0.last AND r0.language IN ('rust', 'cpp', 'php')
        AND (r0.recv = '' OR (r0.language = 'rust' AND r0.head <> 'Self'))
    THEN regexp_extract(regexp_replace(r0.tkey, '^((crate|self|super)\\.)+', ''), '^[^.]+\\.[^.].*$')
    ELSE '' END"""

# Tier 6's keys (graph_near.keyed_tier), re-exports followed.
KEYS_PATH = """SELECT r.rid, r.path, r.kind, r.last, coalesce(e.target, r.path_key) AS fq FROM r
        LEFT JOIN g_export e ON e.alias = r.path_key
        WHERE r.path_key <> '' AND (r.recv = '' OR r.language = 'rust')"""


def tail_tier(tier: int) -> str:
    """Tier 7 of _RESOLVE's cand: symbols of the reference's last name whose fq_key ends with
    its path tail (from its first segment that names a module: a crate's own name, as its
    tests and examples write it, is not one), looked up once per distinct (kind, tail)."""
    return f"""SELECT r.rid, c.symbol_id, c.dpath, c.dkind, {tier}, 0, 'exact', 0 FROM r JOIN (
        WITH seg AS (SELECT unnest(string_split(mkey, '.')) AS name FROM g_modules WHERE mkey <> ''
                     UNION SELECT name FROM symbol_names WHERE kind IN ('module', 'namespace')),
        t0 AS (SELECT DISTINCT kind, last, path_tail, substr(path_tail, strpos(path_tail, '.') + 1) AS rest
               FROM r WHERE path_tail <> '' AND split_part(path_tail, '.', 1) NOT IN {STD_HEADS}),
        t AS (SELECT kind, last, path_tail, CASE
                  WHEN split_part(path_tail, '.', 1) IN (SELECT name FROM seg) THEN path_tail
                  WHEN contains(rest, '.') AND split_part(rest, '.', 1) IN (SELECT name FROM seg) THEN rest
                  END AS tail FROM t0)
        SELECT t.kind, t.path_tail, d.symbol_id, d.path AS dpath, d.kind AS dkind
        FROM t JOIN symbol_names d ON d.name = t.last AND d.language IN {PATH_LANGUAGES + ("c",)}
        JOIN g_kinds k ON k.ref_kind = t.kind AND k.sym_kind = d.kind
        WHERE d.fq_key = t.tail OR ends_with(d.fq_key, '.' || t.tail)) c
    ON c.kind = r.kind AND c.path_tail = r.path_tail
    WHERE NOT EXISTS (SELECT 1 FROM g_local b WHERE b.path = r.path AND NOT b.internal AND b.local = r.head)"""
