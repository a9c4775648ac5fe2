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

The exact tiers 1 and 2 compute nearness on their tied rows only, once per (file, target
file) pair (pick_sql). Tiers 3 to 6 look one key up per reference and pick per distinct key
(keyed_tier), the by-name tier per distinct (file, kind, shape, name) (NAMED_PICK): on ten
copies of the standard library, ranking every reference's candidates cost the graph step
58.4 s CPU (16x the one copy's 3.7 s), picking per key 52.5 s (1x: 3.7 s), the same edges.
"""

from __future__ import annotations

# 1-based position of the first leading path component the two paths do not share (the same
# path shares all: ranked above any other).
NEARNESS = ("coalesce(list_position(list_transform(list_zip(string_split(rpath, '/'), string_split(dpath, '/')),"
            " lambda x: x[1] = x[2]), false), 1000000)")
# Whether NEARNESS is above 1: the nearest of several rows share their first component with
# the reference's file when any row does, so ranking by this first (two string cuts a row)
# leaves NEARNESS (lists built a row) to the rows still tied, mostly none.
SAME_TOP = "split_part(rpath, '/', 1) = split_part(dpath, '/', 1)"

# The by-name tier's candidates (_RESOLVE's m: the distinct (upath, kind, shape, last) of its
# references, symbol_id, path, start_line, qkey, base): of copies of one definition (the same
# in-file qualified name in files of the same name) only the nearest, then at most $CAP, those
# of the reference's own file first. They depend on a reference through those four columns
# only, so they are picked once per distinct four (the references of a file name one target
# many times over) and joined back to the references (u).
# Copies still count one by one towards the name cap: counted once, N copies of a name with a
# few definitions each would let N times as many candidates per reference in, N squared rows.
_NAME_KEY = "upath, kind, shape, last"
NAMED_PICK = f""",
top AS (
    SELECT *, count(*) OVER (PARTITION BY {_NAME_KEY}, qkey, base) AS n FROM (
        SELECT *, upath AS rpath, path AS dpath FROM m)
    QUALIFY rank() OVER (PARTITION BY {_NAME_KEY}, qkey, base ORDER BY {SAME_TOP} DESC) = 1),
pick AS (
    SELECT {_NAME_KEY}, symbol_id FROM (
        SELECT * FROM top QUALIFY rank() OVER (
            PARTITION BY {_NAME_KEY}, qkey, base ORDER BY CASE WHEN n = 1 THEN 0 ELSE {NEARNESS} END DESC) = 1)
    QUALIFY row_number() OVER (PARTITION BY {_NAME_KEY} ORDER BY path = upath DESC, path, start_line) <= $CAP)
SELECT u.rid, p.symbol_id, 'name' AS conf FROM u JOIN pick p
    ON p.upath = u.path AND p.kind = u.kind AND p.shape = u.shape AND p.last = u.last"""

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


def keyed_tier(tier: int, keys: str, weak: str, match: str = "") -> str:
    """An exact tier of _RESOLVE's cand that looks one key up per reference (3 to 6: a symbol's
    fq_key): `keys` gives (rid, path, kind, last, fq) for the tier's references. Its candidates
    depend on a reference through (path, kind, last, fq) only, and of them the tie-break
    (pick_sql) keeps the least `weak`, then the nearest (SAME_TOP first): picked here once per distinct key (on
    N copies of a tree, N references of N files each find N copies: N squared rows to rank
    otherwise), the rest never reach the tie-break. `match`: a further condition on the
    symbol row d and the key row k."""
    cond = f" AND {match}" if match else ""
    return f"""SELECT rid, symbol_id, dpath, dkind, {tier}, 0, 'exact', 0 FROM (
        WITH x AS MATERIALIZED ({keys}),
        c0 AS (
            SELECT k.path, k.kind, k.last, k.fq, d.symbol_id, d.path AS dpath, d.kind AS dkind, k.path AS rpath
            FROM (SELECT DISTINCT path, kind, last, fq FROM x) k
            JOIN symbol_names d ON d.fq_key = k.fq{cond}
            JOIN g_kinds gk ON gk.ref_kind = k.kind AND gk.sym_kind = d.kind
            QUALIFY rank() OVER (PARTITION BY k.path, k.kind, k.last, k.fq ORDER BY {weak},
                                 {SAME_TOP.replace("rpath", "k.path").replace("dpath", "d.path")} DESC) = 1),
        c AS (
            SELECT * FROM (SELECT *, count(*) OVER (PARTITION BY path, kind, last, fq) AS n FROM c0)
            QUALIFY rank() OVER (PARTITION BY path, kind, last, fq
                                 ORDER BY CASE WHEN n = 1 THEN 0 ELSE {NEARNESS} END DESC) = 1)
        SELECT x.rid, c.symbol_id, c.dpath, c.dkind FROM x JOIN c USING (path, kind, last, fq))"""
