"""Same-name definitions: is the public, documented, source-file one the first hit?

    nice -n 5 python bench/definition_first.py REPO [MISSES]

REPO: a repository with a built index. For every name (3+ characters) that 2-5 definitions
share, of which some but not all are public (visibility public/open), carry a doc comment
and lie in a source-role file, run `search NAME` (auto mode, in process) and count the names
whose first hit is one of those. Prints the share and the first MISSES misses (name, path
and kind of the first hit). Run it with two checkouts' interpreters on the same index for a
before/after (the ranking of docs/cli/search.md, issue 45).
"""

from __future__ import annotations

import sys
from pathlib import Path

from codeagent.query.index import open_index
from codeagent.query.retrieval import SearchRequest
from codeagent.query.search import search
from codeagent.roles import SOURCE, file_role

GROUPS = """SELECT name, list(symbol_id), list(path),
                   list(coalesce(visibility IN ('public', 'open') AND doc <> '', false))
            FROM symbols WHERE length(name) >= 3 GROUP BY name HAVING count(*) BETWEEN 2 AND 5
            ORDER BY name"""


def main() -> None:
    repo = Path(sys.argv[1])
    show = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    checked, first, misses = 0, 0, []
    with open_index(repo) as view:
        for name, ids, paths, good in view.sql(GROUPS):
            best = {i for i, p, g in zip(ids, paths, good) if g and file_role(p) == SOURCE}
            if not best or len(best) == len(ids):
                continue
            checked += 1
            hits = search(view, SearchRequest(name, limit=10)).results
            if hits and hits[0].symbol_id in best:
                first += 1
            else:
                misses.append((name, hits[0].path if hits else None, hits[0].kind if hits else None))
    print(f"{repo.name}: {first}/{checked} = {100 * first / max(checked, 1):.1f}% first")
    for miss in misses[:show]:
        print("  miss", *miss)


if __name__ == "__main__":
    main()
