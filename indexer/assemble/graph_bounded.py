"""The full recompute's resolution in statements DuckDB runs under a small memory limit.

One statement joining all seven exact tiers (graph_sql._RESOLVE) holds every tier's hash tables
at once; on the stdlib no DuckDB limit under ~150 MiB fitted them (`build --memory 256M` and
`384M` failed there). A full recompute therefore fills the candidates one tier a statement
and picks the best of them in another. An incremental step keeps the one statement: its
references are few, and five more statements to plan cost a one-file build ~0.1 s.
"""

from __future__ import annotations

_HEAD = "CREATE OR REPLACE TEMP TABLE g_exact AS\n"
_TIER_SEP = "\n    UNION ALL\n"


def one_tier_a_statement(resolve: str) -> str:
    """`resolve` (graph_sql._RESOLVE with its filter set) with its g_exact statement split:
    each tier inserted into g_tiers, then the best candidates taken from g_tiers (the CTEs
    that follow `cand`, graph_near.pick_sql)."""
    before, rest = resolve.split(_HEAD, 1)
    r_cte, rest = rest.split(",\ncand AS (\n", 1)
    tiers, rest = rest.split("\n),\n", 1)
    pick, after = rest.split(";\n", 1)
    parts = tiers.split(_TIER_SEP)
    if len(parts) != 7 or "FROM cand)" not in pick:
        raise ValueError("graph_sql._RESOLVE no longer has the shape one_tier_a_statement splits")
    fill = ("CREATE OR REPLACE TEMP TABLE g_tiers AS " + f";\nINSERT INTO g_tiers ".join(
        f"{r_cte}\n{tier}" for tier in parts) + ";\n")
    return (before + fill + _HEAD + "WITH " + pick.replace("FROM cand)", "FROM g_tiers)") + ";\n"
            + "DROP TABLE g_tiers;\n" + after)


def only_tiers(resolve: str, keep: set[int]) -> str:
    """`resolve` (graph_sql._RESOLVE with its filter set) with the exact tiers not in `keep`
    (numbered from 1) left out of g_exact's `cand`: for references none of whose rows such a
    tier can join, which then adds no candidate. Tier 1 stays (its SELECT names the columns)."""
    before, rest = resolve.split(_HEAD, 1)
    r_cte, rest = rest.split(",\ncand AS (\n", 1)
    tiers, rest = rest.split("\n),\n", 1)
    parts = tiers.split(_TIER_SEP)
    if len(parts) != 7:
        raise ValueError("graph_sql._RESOLVE no longer has the shape only_tiers splits")
    kept = [part for n, part in enumerate(parts, 1) if n == 1 or n in keep]
    return before + _HEAD + r_cte + ",\ncand AS (\n" + _TIER_SEP.join(kept) + "\n),\n" + rest
