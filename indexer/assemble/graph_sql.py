"""The bulk SQL of the symbol graph (graph.py documents the tables and the resolution tiers).

Inputs registered by graph.py: g_modules (one row per file), g_kinds (which symbol kinds a
reference kind may resolve to), g_changed (paths whose rows are recomputed: every path on a
full recompute), g_bind_new (one binding per import reference of those paths).

Incremental rule: a reference outside the changed paths is resolved again when its last
name segment is an "affected" name or one of its edges pointed to a symbol row that changed.
Affected: the names of the changed paths' symbol_names rows that differ (start_line aside,
which no resolution outside the row's own file reads) and the locals of their import
bindings that differ, old or new; an edit that leaves every definition and import as it
was affects no other file's references. Every other edge stays as it was.
Imports and overrides edges are recomputed for the files and members an affected name or a
changed ancestry may reach (_REDONE).
"""

from __future__ import annotations

import re

from .graph_ancestry import (ANCESTORS, CLASS_KINDS, DROP as DROP_INHERITS, FIRST_NEED, OVERRIDES_NEED,
                             SELF_NEED, TYPED_NEED, close_sql, sql_in)
from .graph_bounded import one_tier_a_statement
from .graph_candidates import over_candidates
from .graph_near import NAMED_PICK, keyed_tier, pick_sql
from .graph_paths import KEYS_PATH, PATH_KEY, PATH_TAIL, STD_HEADS, tail_tier

MEMBER_KINDS = ("method", "constructor", "property")
_CALLABLE = ("function", "method", "constructor", "class", "struct", "macro", "record", "object")
_TYPES = ("class", "struct", "interface", "trait", "enum", "type_alias", "type", "union",
          "protocol", "record", "typedef", "object", "delegate")
_ANY = tuple(sorted(set(_CALLABLE + _TYPES + (
    "field", "property", "constant", "variable", "module", "namespace", "package", "enum_member"))))
# Receiver types no repository defines: a method call on one is not name-matched either.
# Languages whose files see each other's types without an import or a module name (a Swift
# module is its target's directory, which the index does not know).
SHARED_NAMESPACE = ("swift",)
BUILTIN_TYPES = ("str", "int", "float", "bool", "bytes", "list", "dict", "set", "tuple", "object",
                 "string", "number", "boolean", "any", "unknown", "Array", "Map", "Set", "Promise",
                 "Date", "RegExp", "Error", "String", "Object", "Integer", "Long", "List",
                 "HashMap", "ArrayList", "StringBuilder", "error", "byte", "rune", "int64",
                 # the standard collections and scalars of Rust, C#, Kotlin and Swift
                 "Vec", "VecDeque", "HashSet", "BTreeMap", "BTreeSet", "Option", "Dictionary",
                 "MutableList", "MutableMap", "MutableSet", "Int", "Boolean", "Double", "Bool")

# Variables a call names (`export const got = create(...)`, `handler = partial(...)`) resolve
# through scopes and imports only: by name alone a variable is too weak a guess.
_CALLED_VALUES = ("variable", "constant")
REF_KINDS = {"call": _CALLABLE + _CALLED_VALUES, "type_ref": _TYPES, "inherit": _TYPES, "implement": _TYPES,
             "reference": _ANY}
EDGE_KIND = {"call": "calls", "inherit": "inherits", "implement": "implements"}


def kind_rows() -> list[tuple[str, str]]:
    return [(r, s) for r, kinds in REF_KINDS.items() for s in kinds]


_in = sql_in


def target_key(expr: str) -> str:
    """Separator-neutral form (module_names.key); a JS/Java `new ` before a callee is dropped."""
    folded = f"replace(replace(replace({expr}, '::', '.'), '\\', '.'), '->', '.')"
    return f"trim(CASE WHEN starts_with({expr}, 'new ') THEN substr({folded}, 5) ELSE {folded} END, '.')"


RESOLVE_KINDS = ('calls', 'references', 'inherits', 'implements')


# Names a module re-exports: `pkg.f` -> `pkg.impl.f` when pkg/__init__ imports f from .impl
# (or `from .impl import *`); chains are followed by repeating the update.
_EXPORT_HOP = """
UPDATE g_export SET target = e2.target FROM g_export e2
WHERE g_export.target = e2.alias AND e2.target <> g_export.target;
"""

_STAR_NAMES = """
INSERT INTO g_aff SELECT d.name FROM import_bindings b JOIN g_modules m ON m.mkey = b.fq_key
JOIN symbol_names d ON d.path = m.path
WHERE b.local = '*' AND d.parent_id IS NULL AND b.path IN (SELECT path FROM g_changed);
"""

_MODULES = """CREATE OR REPLACE TABLE modules AS
    SELECT path, language, module, package, sep, declared FROM g_modules;"""

_SYMBOL_NAMES = f"""
INSERT INTO symbol_names
SELECT s.symbol_id, s.path, m.module,
    CASE WHEN m.module = '' OR (m.declared AND (s.qualified_name = m.module
              OR starts_with(s.qualified_name, m.module || m.sep)))
         THEN s.qualified_name
         WHEN m.language = 'rust' THEN m.module || '::' || replace(s.qualified_name, '.', '::')
         ELSE m.module || m.sep || s.qualified_name END,
    CASE WHEN m.mkey = '' OR (m.declared AND (s.qk = m.mkey OR starts_with(s.qk, m.mkey || '.')))
         THEN s.qk ELSE m.mkey || '.' || s.qk END,
    s.name, s.kind, s.language, s.qk, s.parent_id, coalesce(p.kind, ''), s.start_line,
    CASE WHEN s.kind IN {_in(CLASS_KINDS)} THEN s.symbol_id WHEN p.kind IN {_in(CLASS_KINDS)} THEN p.symbol_id
         WHEN pp.kind IN {_in(CLASS_KINDS)} THEN pp.symbol_id END
FROM (SELECT *, {target_key('qualified_name')} AS qk FROM symbols $WHERE) s
JOIN g_modules m USING (path)
LEFT JOIN (SELECT path, symbol_id, parent_id, kind FROM symbols $WHERE) p
    ON p.path = s.path AND p.symbol_id = s.parent_id
LEFT JOIN (SELECT path, symbol_id, kind FROM symbols $WHERE) pp
    ON pp.path = p.path AND pp.symbol_id = p.parent_id;
"""

_NAMES_DELTA = f"""
CREATE OR REPLACE TEMP TABLE g_new_modules AS
SELECT DISTINCT split_part(k, '.', 1) AS top FROM (
    SELECT {target_key('module')} AS k FROM modules WHERE path NOT IN (SELECT path FROM g_modules)
    UNION ALL
    SELECT mkey FROM g_modules WHERE path NOT IN (SELECT path FROM modules))
WHERE k <> '';
CREATE OR REPLACE TEMP TABLE g_mod_diff AS
WITH old AS (SELECT path, language, module, package, sep, declared FROM modules
             WHERE path IN (SELECT path FROM g_changed)),
new AS (SELECT path, language, module, package, sep, declared FROM g_modules
        WHERE path IN (SELECT path FROM g_changed))
(SELECT * FROM old EXCEPT SELECT * FROM new) UNION ALL (SELECT * FROM new EXCEPT SELECT * FROM old);
{_MODULES}
CREATE OR REPLACE TEMP TABLE g_aff(name VARCHAR);
CREATE OR REPLACE TEMP TABLE g_old_names AS
SELECT * EXCLUDE (start_line) FROM symbol_names WHERE path IN (SELECT path FROM g_changed);
CREATE OR REPLACE TEMP TABLE g_old_binds AS
SELECT * FROM import_bindings WHERE path IN (SELECT path FROM g_changed);
{_STAR_NAMES}
DELETE FROM symbol_names WHERE path IN (SELECT path FROM g_changed);
DELETE FROM import_bindings WHERE path IN (SELECT path FROM g_changed);
"""

_NAMES_DIFF = """
CREATE OR REPLACE TEMP TABLE g_sym_diff AS
WITH new AS (SELECT * EXCLUDE (start_line) FROM symbol_names WHERE path IN (SELECT path FROM g_changed))
SELECT 'old' AS side, * FROM (SELECT * FROM g_old_names EXCEPT SELECT * FROM new)
UNION ALL
SELECT 'new', * FROM (SELECT * FROM new EXCEPT SELECT * FROM g_old_names);
INSERT INTO g_aff SELECT name FROM g_sym_diff;
DROP TABLE g_old_names;
"""


def names_sql(full: bool) -> str:
    """modules and symbol_names; incrementally only the changed paths' rows, and what of them
    differs (g_sym_diff, g_aff, g_mod_diff, g_new_modules for the edge update)."""
    if full:
        return _MODULES + _SYMBOL_NAMES.replace("$WHERE", "")
    return (_NAMES_DELTA + _SYMBOL_NAMES.replace("$WHERE", "WHERE path IN (SELECT path FROM g_changed)")
            + _NAMES_DIFF)

# The receiver a reference's first segment names: the enclosing class (self) or its bases.
_RECV = """CASE WHEN head IN ('self', 'cls', 'this') OR (language = 'rust' AND head = 'Self')
        OR (language = 'php' AND head = 'static') THEN 'self'
        WHEN head = 'super' OR (language = 'php' AND head = 'parent')
        OR (language = 'csharp' AND head = 'base') THEN 'super' ELSE '' END"""


def _raw_refs(where: str) -> str:
    return f"""
    SELECT rowid AS rid, path, ordinal, language, kind, target, source_id, start_line, tkey, head,
        last, {_RECV} AS recv, CASE WHEN kind = 'call' THEN coalesce(module, '') ELSE '' END AS rtype
    FROM refs WHERE kind <> 'import' AND {where}"""


def _project(source: str) -> str:
    """g_refs rows (resolution inputs) for the raw references in `source`; rid is the refs
    rowid (a row is projected at most once; row_number() OVER () cost ~0.3 s on the stdlib)."""
    return f"""
SELECT r0.*, substr(tkey, length(head) + 1) AS rest,
    coalesce(src.qkey, '') AS src_qkey, src.encl_class,
    CASE WHEN r0.kind <> 'call' THEN 'a' WHEN r0.head <> r0.last THEN 'm'
         WHEN r0.language = 'python' THEN 'f' ELSE 'a' END AS shape,
    {PATH_KEY} AS path_key, {PATH_TAIL} AS path_tail
FROM (SELECT * FROM {source} WHERE last IN (SELECT name FROM symbol_names)) r0
LEFT JOIN g_modules m ON m.path = r0.path
LEFT JOIN symbol_names src ON src.symbol_id = r0.source_id"""


_BINDINGS = """
INSERT INTO import_bindings SELECT path, ordinal, local, fq_key, mkey, file FROM g_bind_new;
"""

_BIND_DIFF = f"""
CREATE OR REPLACE TEMP TABLE g_bind_diff AS
(SELECT * FROM g_old_binds EXCEPT SELECT * FROM g_bind_new)
UNION ALL (SELECT * FROM g_bind_new EXCEPT SELECT * FROM g_old_binds);
INSERT INTO g_aff SELECT local FROM g_bind_diff;
DROP TABLE g_old_binds;
{_STAR_NAMES}
CREATE OR REPLACE TEMP TABLE g_affected AS SELECT DISTINCT name FROM g_aff WHERE name <> '';
DROP TABLE g_aff;
"""

_EXPORTS = f"""
CREATE OR REPLACE TEMP TABLE g_export AS
SELECT alias, min(target) AS target FROM (
    SELECT m.mkey || '.' || b.local AS alias, b.fq_key AS target
    FROM import_bindings b JOIN g_modules m ON m.path = b.path
    WHERE b.local NOT IN ('', '*') AND m.mkey <> ''
    UNION ALL
    SELECT m.mkey || '.' || d.name, d.fq_key
    FROM import_bindings b JOIN g_modules m ON m.path = b.path
    JOIN g_modules src ON src.mkey = b.fq_key JOIN symbol_names d ON d.path = src.path
    WHERE b.local = '*' AND m.mkey <> '' AND d.parent_id IS NULL)
WHERE alias NOT IN (SELECT fq_key FROM symbol_names) GROUP BY alias;
{_EXPORT_HOP}{_EXPORT_HOP}
CREATE OR REPLACE TEMP TABLE g_local AS
SELECT b.path, b.local, min(b.fq_key) AS fq_key,
    bool_or(split_part(b.mkey, '.', 1) IN (SELECT split_part(mkey, '.', 1) FROM g_modules)) AS internal
FROM import_bindings b WHERE b.local <> '' GROUP BY b.path, b.local;
"""

_ANC_TABLE = "CREATE OR REPLACE TEMP TABLE g_anc(cls VARCHAR, base VARCHAR, depth INTEGER, conf VARCHAR);"

# The references resolved again: those of the changed paths and those named by an affected
# name, plus those whose edge pointed to a changed symbol row and those through a name bound
# to a module that appeared or vanished (external <-> internal). Filtered before projected.
# Each reason is a semi-join of refs with a small table (an empty one ends its scan at once);
# an OR of them was a mark join per reason over every reference.
_REDO_WHY = ("path IN (SELECT path FROM g_changed)",
             "last IN (SELECT name FROM g_affected)",
             "EXISTS (SELECT 1 FROM g_dirty d WHERE d.src_path = refs.path AND d.src_line = refs.start_line"
             " AND d.target = refs.target)",
             "EXISTS (SELECT 1 FROM g_moved b WHERE b.path = refs.path AND b.local = refs.head)",
             "kind = 'call' AND split_part(replace(module, '::', '.'), '.', -1) IN (SELECT name FROM g_ctypes)")
_REDO = f"""
CREATE OR REPLACE TEMP TABLE g_dirty AS SELECT DISTINCT src_path, src_line, target FROM edges
WHERE kind IN {_in(RESOLVE_KINDS)} AND dst_id IN (SELECT symbol_id FROM g_sym_diff WHERE side = 'old');
CREATE OR REPLACE TEMP TABLE g_moved AS SELECT DISTINCT path, local FROM import_bindings
WHERE split_part(mkey, '.', 1) IN (SELECT top FROM g_new_modules);
CREATE OR REPLACE TEMP TABLE g_ctypes AS SELECT DISTINCT name FROM symbol_names  -- a typed receiver's class may have new bases
WHERE path IN (SELECT path FROM g_changed) AND kind IN {_in(CLASS_KINDS)};
CREATE OR REPLACE TEMP TABLE g_redo AS
{" UNION ".join(_raw_refs(why) for why in _REDO_WHY)};
DROP TABLE g_dirty; DROP TABLE g_moved; DROP TABLE g_ctypes;
DELETE FROM edges WHERE kind = 'contains' AND src_path IN (SELECT path FROM g_changed);
DELETE FROM edges WHERE kind IN {_in(RESOLVE_KINDS)} AND src_path IN (SELECT path FROM g_changed);
DELETE FROM edges USING (SELECT DISTINCT path, start_line, target FROM g_redo) r
WHERE edges.kind IN {_in(RESOLVE_KINDS)} AND edges.src_path = r.path
    AND edges.src_line = r.start_line AND edges.target = r.target;
CREATE OR REPLACE TEMP TABLE g_refs AS
{_project('g_redo')};
CREATE OR REPLACE TEMP TABLE g_rebased AS
SELECT DISTINCT source_id FROM g_redo WHERE kind IN ('inherit', 'implement');
DROP TABLE g_redo;
"""

_PREP = _BINDINGS + _BIND_DIFF + _EXPORTS + _REDO + _ANC_TABLE
_PREP_FULL = (_BINDINGS + _EXPORTS + f"CREATE OR REPLACE TEMP TABLE g_refs AS {_project('(' + _raw_refs('TRUE') + ')')};"
              + _ANC_TABLE)

# Among equally good exact targets, a stub (.pyi, .d.ts) or a variable rebinding a name
# (`C = decorate(C)`) gives way to the definition itself.
_WEAK = ("(CASE WHEN dkind IN " + _in(_CALLED_VALUES) + " THEN 2 ELSE 0 END"
         " + CASE WHEN ends_with(dpath, '.pyi') OR ends_with(dpath, '.d.ts') THEN 1 ELSE 0 END)")

# The keys the exact tiers 3 to 6 look up (graph_near.keyed_tier): an import binding's name
# (re-exports followed), a wildcard import's, the file's own module's, a path-qualified target.
_KEYS_IMPORTED = """SELECT r.rid, r.path, r.kind, '' AS last, coalesce(e.target, ltrim(b.fq_key || r.rest, '.')) AS fq
        FROM r JOIN g_local b ON b.path = r.path AND b.local = r.head
        LEFT JOIN g_export e ON e.alias = b.fq_key || r.rest"""
_KEYS_STAR = """SELECT r.rid, r.path, r.kind, '' AS last, coalesce(e.target, b.fq_key || '.' || r.tkey) AS fq
        FROM r JOIN g_local b ON b.path = r.path AND b.local = '*'
        LEFT JOIN g_export e ON e.alias = b.fq_key || '.' || r.tkey"""
_KEYS_MODULE = """SELECT r.rid, r.path, r.kind, '' AS last, m.mkey || '.' || r.tkey AS fq
        FROM r JOIN g_modules m ON m.path = r.path AND m.mkey <> ''"""

# Candidate targets of the references selected by $FILTER; the best exact tier wins, and of
# equally good targets the nearest (graph_near.py). (r is
# inlined into each tier's scan: cheaper than materialising ~290k rows for five readers.)
# Python module-level code runs top-down: of a name defined more than once in the file, a
# module-level call sees the last definition before it ("late": how far back it is).
_RESOLVE = f"""
CREATE OR REPLACE TEMP TABLE g_exact AS
WITH r AS NOT MATERIALIZED (SELECT * FROM g_refs WHERE $FILTER),
cand AS (
    SELECT r.rid, d.symbol_id, d.path AS dpath, d.kind AS dkind, 1 AS tier, length(d.qkey) AS spec, 'exact' AS conf,
        CASE WHEN r.language <> 'python' OR r.src_qkey <> '' THEN 0
             WHEN d.start_line > r.start_line THEN 1000000000 + d.start_line
             ELSE r.start_line - d.start_line END AS late
    FROM r JOIN symbol_names d ON d.path = r.path AND d.name = r.last
    JOIN g_kinds k ON k.ref_kind = r.kind AND k.sym_kind = d.kind
    WHERE r.recv = '' AND (d.qkey = r.tkey OR (
        ends_with(d.qkey, '.' || r.tkey)
        AND starts_with(r.src_qkey || '.', left(d.qkey, length(d.qkey) - length(r.tkey)))
        AND NOT (r.language = 'python' AND d.parent_kind IN {_in(CLASS_KINDS)}
                 AND (d.parent_id IS DISTINCT FROM r.source_id OR d.start_line >= r.start_line))))
    UNION ALL
    SELECT r.rid, d.symbol_id, d.path AS dpath, d.kind AS dkind, 2, 100 - a.depth, a.conf, 0
    FROM r JOIN g_anc a ON a.cls = r.encl_class
    JOIN symbol_names d ON d.parent_id = a.base AND d.name = r.last
    JOIN g_kinds k ON k.ref_kind = r.kind AND k.sym_kind = d.kind
    WHERE r.recv <> '' AND r.rest = '.' || r.last AND (a.depth > 0 OR r.recv = 'self')
    UNION ALL
    {keyed_tier(3, _KEYS_IMPORTED, _WEAK)}
    UNION ALL
    {keyed_tier(4, _KEYS_STAR, _WEAK)}
    UNION ALL
    {keyed_tier(5, _KEYS_MODULE, _WEAK, "d.path <> k.path")}
    UNION ALL
    {keyed_tier(6, KEYS_PATH, _WEAK, "d.name = k.last")}
    UNION ALL
    {tail_tier(7)}
){pick_sql("cand", _WEAK)};
CREATE OR REPLACE TEMP TABLE g_named AS
WITH u AS (
    SELECT r.* FROM g_refs r
    WHERE $FILTER AND r.last <> '' AND r.rid NOT IN (SELECT rid FROM g_exact)
      AND NOT EXISTS (SELECT 1 FROM g_local b WHERE b.path = r.path AND NOT b.internal
                      AND ((b.local = r.head AND r.recv = '')
                           OR (r.rtype <> '' AND b.local = split_part(r.rtype, '.', 1))))
      AND r.rtype NOT IN {_in(BUILTIN_TYPES)}
      AND NOT (r.language = 'rust' AND r.head IN {STD_HEADS} AND r.head <> r.last)),
uk AS (SELECT DISTINCT path AS upath, kind, shape, last FROM u),
d AS (
    SELECT g.symbol_id, g.path, g.start_line, g.name, g.qkey, split_part(g.path, '/', -1) AS base, k.ref_kind,
        sh.shape, count(*) OVER (PARTITION BY k.ref_kind, sh.shape, g.name) AS n
    FROM symbol_names g JOIN g_kinds k ON k.sym_kind = g.kind
        AND NOT (k.ref_kind = 'call' AND g.kind IN {_in(_CALLED_VALUES)})
    JOIN (VALUES ('a'), ('m'), ('f')) sh(shape) ON sh.shape = 'a' OR (k.ref_kind = 'call'
        AND (sh.shape = 'm') = (g.parent_kind IN {_in(CLASS_KINDS)} OR g.kind = 'method'))
    WHERE g.name IN (SELECT last FROM uk)),
m AS (
    SELECT uk.*, d.symbol_id, d.path, d.start_line, d.qkey, d.base FROM uk
    JOIN d ON d.ref_kind = uk.kind AND d.shape = uk.shape AND d.name = uk.last AND d.n <= $CAP
    UNION ALL
    SELECT uk.*, d.symbol_id, d.path, d.start_line, d.qkey, d.base FROM uk
    JOIN d ON d.ref_kind = uk.kind AND d.shape = uk.shape AND d.name = uk.last AND d.path = uk.upath
        AND d.n > $CAP){NAMED_PICK};
INSERT INTO edges
SELECT r.source_id, r.path, r.start_line, d.symbol_id, d.path,
    CASE r.kind WHEN 'call' THEN 'calls' WHEN 'inherit' THEN 'inherits'
                WHEN 'implement' THEN 'implements' ELSE 'references' END, x.conf, r.target
FROM (SELECT * FROM g_exact UNION ALL SELECT * FROM g_named) x
JOIN g_refs r USING (rid) JOIN symbol_names d ON d.symbol_id = x.symbol_id;
"""


# The imports and overrides edges recomputed. An imports edge looks its binding's key up in
# g_export (aliases ending in a binding's local or a star-exported name) and fq_key: it changes
# only with a module (then every file's are redone) or a name on that chain, i.e. an affected
# name closed over the bindings re-exporting it (three hops: g_export follows two). An
# overrides edge changes only with a member of its name or its class's ancestry.
_CLOSE_NAMES = """
INSERT INTO g_imp_names SELECT DISTINCT local FROM import_bindings
WHERE split_part(fq_key, '.', -1) IN (SELECT name FROM g_imp_names)
    AND local NOT IN (SELECT name FROM g_imp_names);
"""
_REDONE = f"""
CREATE OR REPLACE TEMP TABLE g_imp_names AS
SELECT name FROM g_affected UNION SELECT split_part(fq_key, '.', -1) FROM g_sym_diff;
{_CLOSE_NAMES * 3}
CREATE OR REPLACE TEMP TABLE g_redone AS
SELECT path FROM g_changed
UNION SELECT path FROM g_modules
    WHERE EXISTS (SELECT 1 FROM g_mod_diff) OR EXISTS (SELECT 1 FROM g_new_modules)
UNION SELECT path FROM import_bindings WHERE split_part(fq_key, '.', -1) IN (SELECT name FROM g_imp_names);
DELETE FROM edges WHERE kind = 'imports' AND src_path IN (SELECT path FROM g_redone);
CREATE OR REPLACE TEMP TABLE g_over_ids AS
SELECT symbol_id FROM symbol_names WHERE kind IN {_in(MEMBER_KINDS)} AND (
    path IN (SELECT path FROM g_changed) OR name IN (SELECT name FROM g_affected)
    OR parent_id IN (SELECT cls FROM g_anc WHERE base IN (SELECT source_id FROM g_rebased)));
DELETE FROM edges WHERE kind = 'overrides'
    AND (src_path IN (SELECT path FROM g_changed) OR src_id IN (SELECT symbol_id FROM g_over_ids));
"""

# Imports edges of the paths in $REDONE, contains edges of those in $CHANGED, overrides edges
# of the members in $OVERRIDDEN (filters).
_DERIVED = f"""
INSERT INTO edges
SELECT r.source_id, r.path, r.start_line, d.symbol_id,
    coalesce(d.path, sub.path, mf.path, nullif(b.file, '')), 'imports', 'exact', r.target
FROM (SELECT * FROM refs WHERE kind = 'import' $REDONE) r
JOIN import_bindings b ON b.path = r.path AND b.ordinal = r.ordinal
LEFT JOIN g_export e ON e.alias = b.fq_key
LEFT JOIN symbol_names d ON starts_with(b.fq_key, b.mkey || '.') AND d.fq_key = coalesce(e.target, b.fq_key)
LEFT JOIN (SELECT mkey, min(path) AS path FROM g_modules WHERE mkey <> '' GROUP BY mkey) sub
    ON starts_with(b.fq_key, b.mkey || '.') AND sub.mkey = b.fq_key
LEFT JOIN (SELECT mkey, min(path) AS path FROM g_modules WHERE mkey <> '' GROUP BY mkey) mf
    ON mf.mkey = b.mkey
WHERE r.kind = 'import' AND coalesce(d.path, sub.path, mf.path, nullif(b.file, '')) IS NOT NULL;
INSERT INTO edges
SELECT parent_id, path, start_line, symbol_id, path, 'contains', 'exact', name
FROM symbol_names WHERE parent_id IS NOT NULL $CHANGED;
$CLOSE_OVERRIDESINSERT INTO edges
SELECT m.symbol_id, m.path, m.start_line, b.symbol_id, b.path, 'overrides', a.conf, m.name
FROM (SELECT * FROM symbol_names WHERE kind IN {_in(MEMBER_KINDS)} $OVERRIDDEN) m
JOIN g_anc a ON a.cls = m.parent_id AND a.depth > 0
JOIN (SELECT * FROM symbol_names WHERE kind IN {_in(MEMBER_KINDS)}) b
    ON b.parent_id = a.base AND b.name = m.name
QUALIFY rank() OVER (PARTITION BY m.symbol_id ORDER BY a.depth) = 1;
DROP TABLE g_export; DROP TABLE g_local; DROP TABLE g_refs; DROP TABLE g_anc;
DROP TABLE g_exact; DROP TABLE g_named;
"""

_DROP_DELTA = """
DROP TABLE g_affected; DROP TABLE g_new_modules; DROP TABLE g_rebased;
DROP TABLE g_sym_diff; DROP TABLE g_bind_diff; DROP TABLE g_mod_diff;
DROP TABLE g_imp_names; DROP TABLE g_redone; DROP TABLE g_over_ids;
"""

# Member references through self/super of classes whose ancestry was just re-resolved.
_SELF_REDO = f"""
CREATE OR REPLACE TEMP TABLE g_members AS
WITH moved AS (SELECT a.cls FROM g_anc a WHERE a.base IN (SELECT source_id FROM g_rebased))
SELECT symbol_id FROM symbol_names WHERE symbol_id IN (SELECT cls FROM moved)
    OR parent_id IN (SELECT cls FROM moved)
    OR parent_id IN (SELECT symbol_id FROM symbol_names WHERE parent_id IN (SELECT cls FROM moved));
CREATE OR REPLACE TEMP TABLE g_redo AS
WITH r0 AS ({_raw_refs("source_id IN (SELECT symbol_id FROM g_members)")})
SELECT * FROM r0 WHERE recv <> ''
    AND kind NOT IN ('inherit', 'implement') AND (path, start_line, target) NOT IN (SELECT (path, start_line, target) FROM g_refs);
DELETE FROM edges WHERE kind IN {_in(RESOLVE_KINDS)}
    AND (src_path, src_line, target) IN (SELECT (path, start_line, target) FROM g_redo);
INSERT INTO g_refs {_project('g_redo')};
DROP TABLE g_redo; DROP TABLE g_members;
"""

_INHERIT_FILTER = "kind IN ('inherit', 'implement')"

# Calls on a receiver whose type the source writes (the extractor's rtype: `x: Foo`,
# `x = Foo()`, a typed field) and that no exact tier resolved: the type is what the file's
# own exact edges resolve that name to; the method is looked up in it and its ancestors.
_TYPED = f"""
CREATE OR REPLACE TEMP TABLE g_rtypes AS
SELECT path, tname, type_id, fq_key FROM (
    SELECT DISTINCT e.src_path AS path, e.target AS tname, e.dst_id AS type_id, s.fq_key, 0 AS far
    FROM edges e JOIN symbol_names s ON s.symbol_id = e.dst_id AND s.kind IN {_in(CLASS_KINDS)}
    WHERE e.confidence = 'exact' AND e.kind IN ('references', 'calls')
      AND e.src_path IN (SELECT path FROM g_refs WHERE rtype <> '')
    UNION  -- a type of the same file (Ruby's `Foo.new` names no type otherwise)
    SELECT r.path, r.rtype, s.symbol_id, s.fq_key, 0 FROM (SELECT DISTINCT path, rtype FROM g_refs) r
    JOIN symbol_names s ON s.path = r.path AND s.qkey = {target_key('r.rtype')} AND s.kind IN {_in(CLASS_KINDS)}
    WHERE r.rtype <> '' AND s.kind NOT IN ('impl', 'extension')
    UNION  -- else, where a language's files share one namespace unimported, a type of any file
    SELECT r.path, r.rtype, s.symbol_id, s.fq_key, 1
    FROM (SELECT DISTINCT path, rtype FROM g_refs WHERE rtype <> '' AND language IN {_in(SHARED_NAMESPACE)}) r
    JOIN symbol_names s ON s.qkey = {target_key('r.rtype')} AND s.language IN {_in(SHARED_NAMESPACE)}
        AND s.kind IN {_in(CLASS_KINDS)} AND s.kind NOT IN ('impl', 'extension'))
QUALIFY rank() OVER (PARTITION BY path, tname ORDER BY far) = 1
    AND count(*) OVER (PARTITION BY path, tname, far) = 1;  -- a name two classes share says nothing
-- the type and the blocks that add members to it under its name (Rust `impl S`, Swift `extension S`)
CREATE OR REPLACE TEMP TABLE g_rholders AS
SELECT path, tname, type_id AS cls FROM g_rtypes
UNION SELECT t.path, t.tname, h.symbol_id FROM g_rtypes t
JOIN symbol_names h ON h.fq_key = t.fq_key AND h.kind IN ('impl', 'extension');
$CLOSE_TYPEDCREATE OR REPLACE TEMP TABLE g_typed AS
SELECT r.rid, d.symbol_id, a.conf
FROM g_refs r JOIN g_rholders t ON t.path = r.path AND t.tname = r.rtype
JOIN g_anc a ON a.cls = t.cls
JOIN symbol_names d ON d.parent_id = a.base AND d.name = r.last
JOIN g_kinds k ON k.ref_kind = r.kind AND k.sym_kind = d.kind
WHERE r.rtype <> '' AND r.rid NOT IN (SELECT rid FROM g_exact)
QUALIFY rank() OVER (PARTITION BY r.rid ORDER BY a.depth) = 1
    AND row_number() OVER (PARTITION BY r.rid ORDER BY a.depth, d.symbol_id) <= $CAP;
DELETE FROM edges USING (SELECT DISTINCT r.path, r.start_line, r.target FROM g_typed JOIN g_refs r USING (rid)) x
WHERE edges.kind = 'calls' AND edges.confidence = 'name' AND edges.src_path = x.path
    AND edges.src_line = x.start_line AND edges.target = x.target;
INSERT INTO edges
SELECT r.source_id, r.path, r.start_line, d.symbol_id, d.path, 'calls', x.conf, r.target
FROM g_typed x JOIN g_refs r USING (rid) JOIN symbol_names d ON d.symbol_id = x.symbol_id;
DROP TABLE g_rtypes; DROP TABLE g_rholders; DROP TABLE g_typed;
"""


def edges_sql(full: bool) -> str:
    """The edge statements. A full recompute resolves every reference once (nothing to
    compare with, no self/super reference left out of g_refs); an incremental one only the
    affected ones, and the imports/overrides edges that may have changed (_REDONE)."""
    if full:
        resolve = (one_tier_a_statement(_RESOLVE.replace("$FILTER", _INHERIT_FILTER)) + ANCESTORS
                   + one_tier_a_statement(_RESOLVE.replace("$FILTER", f"NOT ({_INHERIT_FILTER})"))
                   + _TYPED.replace("$CLOSE_TYPED", ""))
        return _PREP_FULL + resolve + re.sub(r"\$(REDONE|CHANGED|OVERRIDDEN|CLOSE_OVERRIDES)", "", _DERIVED)
    inherits, others = _INHERIT_FILTER, f"NOT ({_INHERIT_FILTER})"
    resolve = (over_candidates(_RESOLVE.replace("$FILTER", inherits), inherits) + close_sql(FIRST_NEED, first=True)
               + _SELF_REDO + close_sql(SELF_NEED) + over_candidates(_RESOLVE.replace("$FILTER", others), others)
               + _TYPED.replace("$CLOSE_TYPED", close_sql(TYPED_NEED)))
    return (_PREP + resolve + _REDONE
            + _DERIVED.replace("$REDONE", "AND path IN (SELECT path FROM g_redone)")
            .replace("$CHANGED", "AND path IN (SELECT path FROM g_changed)")
            .replace("$OVERRIDDEN", "AND symbol_id IN (SELECT symbol_id FROM g_over_ids)")
            .replace("$CLOSE_OVERRIDES", close_sql(OVERRIDES_NEED)) + DROP_INHERITS + _DROP_DELTA)
