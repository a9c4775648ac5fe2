"""The fusion of per-repository rankings (query/org.py `fuse`), as properties."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from codeagent.model import SearchHit
from codeagent.query.org import fuse

SCORES = st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), max_size=8)


def _lists(scores: dict[str, list[float]]) -> dict[str, list[SearchHit]]:
    """Each repository's hits best first (as a search answers them)."""
    return {repo: [SearchHit(f"{repo}/{n}.py", 1, 1, "function", f"f{n}", f"f{n}", None, None, s, "")
                   for n, s in enumerate(sorted(values, reverse=True))]
            for repo, values in scores.items()}


@settings(deadline=None)  # pure and fast; a loaded CI machine must not fail it on time
@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), SCORES, min_size=1),
       st.integers(1, 30), st.sampled_from(["global", "score", "rank"]),
       st.lists(st.floats(min_value=0, max_value=1), min_size=3, max_size=3))
def test_fusion_keeps_each_repositorys_order_and_the_limit(scores, limit, fusion, strengths):
    lists = _lists(scores)
    fused = fuse(lists, {r: "heads/main" for r in lists}, limit, fusion, dict(zip("abc", strengths)))
    assert len(fused) == min(limit, sum(map(len, lists.values())))
    for repo, hits in lists.items():
        mine = [h.hit for h in fused if h.repo == repo]
        assert mine == hits[:len(mine)]  # a prefix of the repository's own ranking, in order
    if fusion == "score":
        assert [h.hit.score for h in fused] == sorted((h.hit.score for h in fused), reverse=True)
    elif fusion == "rank":  # no repository's n-th hit comes before another's (n-1)-th
        ranks = [lists[h.repo].index(h.hit) for h in fused]
        assert ranks == sorted(ranks)
    else:  # global: of two repositories' best hits, the one of the stronger repository comes first
        firsts = [h.repo for h in fused if h.hit is lists[h.repo][0] and h.hit.score > 0]
        order = [dict(zip("abc", strengths))[r] for r in firsts]
        assert order == sorted(order, reverse=True)
