"""The ancestry of classes in the symbol graph (graph_sql.py): g_anc(cls, base, depth, conf),
each class with itself (depth 0) and what it inherits from or implements through the edges, up
to five levels; conf is 'exact' when every edge on the way is.

A full recompute closes every class (ANCESTORS, one level a statement). An incremental step
closes only the classes its statements read, each set before its reader (close_sql): the classes below a class
whose bases were resolved again (g_rebased; found by walking the inheritance edges down) and
the enclosing classes of the references resolved again, then those of the references through
self/super added after, the receiver types of typed calls, the classes of the members whose
overrides are redone. A class's rows do not depend on which other classes are closed, so each
is closed exactly as a full recompute closes it; a class closed already is not closed again.
(On 10x the stdlib closing all 131k classes took ~0.85 s of a one-file overlay build's CPU.)
"""

from __future__ import annotations

CLASS_KINDS = ("class", "struct", "interface", "trait", "enum", "object", "protocol",
               "record", "union", "extension", "impl")


def sql_in(values: tuple[str, ...]) -> str:
    """`values` as an SQL list of string literals."""
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


_CLOSE = f"""
INSERT INTO g_anc
WITH RECURSIVE anc(cls, base, depth, conf) AS (
    SELECT symbol_id, symbol_id, 0, 'exact' FROM symbol_names WHERE kind IN {sql_in(CLASS_KINDS)}$SEED
    UNION
    SELECT a.cls, e.dst_id, a.depth + 1,
        CASE WHEN a.conf = 'exact' AND e.confidence = 'exact' THEN 'exact' ELSE 'name' END
    FROM anc a JOIN $EDGES e ON e.src_id = a.base
    WHERE $INHERITS AND a.depth < 5)
SELECT cls, base, min(depth), min(conf) FROM anc GROUP BY cls, base;
"""
# A full recompute closes every class one level a statement: DuckDB keeps a recursive CTE's
# rows in memory it cannot spill, and on the stdlib they did not fit a 96 MiB limit (`build
# --memory 256M`). A level's DISTINCT does what the CTE's UNION does: rows of different levels
# never coincide.
_LEVEL = """
INSERT INTO g_anc_walk SELECT DISTINCT a.cls, e.dst_id, a.depth + 1,
    CASE WHEN a.conf = 'exact' AND e.confidence = 'exact' THEN 'exact' ELSE 'name' END
FROM g_anc_walk a JOIN edges e ON e.src_id = a.base
WHERE a.depth = $DEPTH AND e.kind IN ('inherits', 'implements') AND e.dst_id IS NOT NULL;"""
ANCESTORS = (f"""
CREATE OR REPLACE TEMP TABLE g_anc_walk AS
SELECT symbol_id AS cls, symbol_id AS base, 0 AS depth, 'exact' AS conf
FROM symbol_names WHERE kind IN {sql_in(CLASS_KINDS)};"""
             + "".join(_LEVEL.replace("$DEPTH", str(depth)) for depth in range(5)) + """
INSERT INTO g_anc SELECT cls, base, min(depth), min(conf) FROM g_anc_walk GROUP BY cls, base;
DROP TABLE g_anc_walk;
""")

# The inheritance edges, read once from edges (every step after the first ancestry closure
# leaves them as they are); g_inherits_down: the classes below g_rebased's.
_INHERITS = """
CREATE OR REPLACE TEMP TABLE g_inherits AS SELECT src_id, dst_id, confidence FROM edges
WHERE kind IN ('inherits', 'implements') AND dst_id IS NOT NULL;
CREATE OR REPLACE TEMP TABLE g_inherits_down AS
WITH RECURSIVE down(id, depth) AS (
    SELECT source_id, 0 FROM g_rebased
    UNION
    SELECT e.src_id, d.depth + 1 FROM down d JOIN g_inherits e ON e.dst_id = d.id WHERE d.depth < 5)
SELECT DISTINCT id FROM down;
"""
_SEEDED = _CLOSE.replace("$SEED", " AND symbol_id IN (SELECT id FROM g_anc_need) "
                         "AND symbol_id NOT IN (SELECT cls FROM g_anc)").replace("$EDGES", "g_inherits").replace(
    "$INHERITS", "TRUE")
FIRST_NEED = "SELECT id FROM g_inherits_down UNION SELECT encl_class FROM g_refs"
SELF_NEED = "SELECT encl_class FROM g_refs"
TYPED_NEED = "SELECT cls FROM g_rholders"
OVERRIDES_NEED = "SELECT parent_id FROM symbol_names WHERE symbol_id IN (SELECT symbol_id FROM g_over_ids)"
DROP = "DROP TABLE g_inherits; DROP TABLE g_inherits_down;\n"


def close_sql(need: str, first: bool = False) -> str:
    """Close the classes the query `need` names that are not closed yet (`first`: the first
    closure of an incremental step, which reads the inheritance edges)."""
    return ((_INHERITS if first else "") + f"CREATE OR REPLACE TEMP TABLE g_anc_need AS SELECT id FROM ({need}) n(id);\n"
            + _SEEDED + "DROP TABLE g_anc_need;\n")
