"""Which of several equally good targets a reference means: the nearest to its file.

A repository holding one package twice (a monorepo whose projects each vendor `json`, a
test tree beside the source tree declaring the same Java package) gives an import or a
qualified name several definitions that every exact tier ranks alike. An import system with
per-project roots resolves each project's import to its own copy, so of the best-ranked
candidates of a reference (graph_sql._RESOLVE's cand) only those sharing the most leading
directories with the referencing file are kept (the same file is nearest of all); equally
near ones stay tied, up to the cap. The by-name tier does the same among copies of one
definition only (NAMED_PICK). Without this, N copies of a tree gave every such reference N
edges: the graph grew as N squared (0.40M edges on the standard library, 13.8M on ten copies).

The exact tiers compute nearness on their tied rows only, once per (file, target file) pair:
the tied rows of a file mostly point to a few target files (on three copies of the standard
library, 808k tied rows held 44k pairs). The by-name tier has at most $CAP candidates per
reference and computes it on each.
"""

from __future__ import annotations

# 1-based position of the first leading path component the two paths do not share (the same
# path shares all: ranked above any other).
NEARNESS = ("coalesce(list_position(list_transform(list_zip(string_split(rpath, '/'), string_split(dpath, '/')),"
            " lambda x: x[1] = x[2]), false), 1000000)")

# The by-name tier's candidates (_RESOLVE's m: rid, symbol_id, path, start_line, qkey, base,
# upath): of copies of one definition (the same in-file qualified name in files of the same
# name) only the nearest, then at most $CAP, those of the reference's own file first. Copies
# still count one by one towards the name cap: counted once, N copies of a name with a few
# definitions each would let N times as many candidates per reference in, N squared rows.
NAMED_PICK = f"""
SELECT rid, symbol_id, 'name' AS conf FROM (
    SELECT rid, symbol_id, path, start_line, upath FROM (SELECT *, upath AS rpath, path AS dpath FROM m)
    QUALIFY rank() OVER (PARTITION BY rid, qkey, base ORDER BY {NEARNESS} DESC) = 1)
QUALIFY row_number() OVER (PARTITION BY rid ORDER BY path = upath DESC, path, start_line) <= $CAP"""


def pick_sql(source: str, weak: str) -> str:
    """The CTEs after _RESOLVE's `cand` (each begins with a comma) and the SELECT of g_exact:
    of the candidates in `source`, the best ranked (tier, then specificity, `weak`, then how far
    back a Python module-level name was bound), then the nearest, at most $CAP of them."""
    return f""",
best AS MATERIALIZED (
    SELECT *, count(*) OVER (PARTITION BY rid) AS ties FROM (
        SELECT rid, symbol_id, dpath, conf FROM (SELECT *, {weak} AS weak FROM {source})
        QUALIFY rank() OVER (PARTITION BY rid ORDER BY tier, spec DESC, weak, late) = 1)),
tied AS MATERIALIZED (
    SELECT b.rid, b.symbol_id, b.dpath, b.conf, r.path AS rpath FROM best b JOIN g_refs r USING (rid)
    WHERE b.ties > 1),
near AS (SELECT rpath, dpath, {NEARNESS} AS near FROM (SELECT DISTINCT rpath, dpath FROM tied))
SELECT rid, symbol_id, conf FROM best WHERE ties = 1
UNION ALL
SELECT rid, symbol_id, conf FROM (
    SELECT t.rid, t.symbol_id, t.conf, n.near FROM tied t JOIN near n USING (rpath, dpath)
    QUALIFY rank() OVER (PARTITION BY t.rid ORDER BY n.near DESC) = 1
        AND row_number() OVER (PARTITION BY t.rid ORDER BY n.near DESC, t.symbol_id) <= $CAP)"""
