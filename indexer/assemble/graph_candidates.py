"""The symbol rows an incremental resolution can pick (graph_sql._RESOLVE): g_cand, the rows of
symbol_names whose name is the last segment of a reference resolved again, or whose fq_key is
one an import, a wildcard import or the reference's own module makes of the reference.

Every tier of _RESOLVE joins symbol_names on one of those (tiers 1, 2, 6 and 7 on the name,
3, 4 and 5 on such an fq_key), and the name-matched tier counts a name's definitions among the
rows of that name, which g_cand holds whole: resolving over g_cand gives the same edges, and
the step reads symbol_names once per resolution instead of once per tier (each read a scan
of the base's table through an overlay's copy-on-write view). A full recompute resolves
every reference, so it reads symbol_names itself.
"""

from __future__ import annotations

_CANDIDATES = """
CREATE OR REPLACE TEMP TABLE g_cand AS
WITH r AS (SELECT * FROM g_refs WHERE $FILTER),
keys AS (
    SELECT coalesce(e.target, b.fq_key || r.rest) AS k
    FROM r JOIN g_local b ON b.path = r.path AND b.local = r.head
    LEFT JOIN g_export e ON e.alias = b.fq_key || r.rest
    UNION
    SELECT coalesce(e.target, b.fq_key || '.' || r.tkey)
    FROM r JOIN g_local b ON b.path = r.path AND b.local = '*'
    LEFT JOIN g_export e ON e.alias = b.fq_key || '.' || r.tkey
    UNION
    SELECT m.mkey || '.' || r.tkey FROM r JOIN g_modules m ON m.path = r.path AND m.mkey <> '')
SELECT * FROM symbol_names WHERE name IN (SELECT last FROM r) OR fq_key IN (SELECT k FROM keys)
    OR kind IN ('module', 'namespace');  -- tier 7 reads the names of modules (graph_paths.py)
"""


def over_candidates(resolve: str, where: str) -> str:
    """`resolve` (_RESOLVE for the references `where` selects) reading g_cand instead of
    symbol_names, after the statement filling g_cand for the same references."""
    return (_CANDIDATES.replace("$FILTER", where) + resolve.replace("symbol_names", "g_cand")
            + "DROP TABLE g_cand;\n")
