"""Try query-conditioned weights for the file model: interaction columns feature × a simple
property of the query, leave-one-repository-out, judged as `try_features` judges a column.

    python -m codeagent.eval.try_gates [--work DIR] [--only len:hand+history,ident:core] [--per-repo]

A gated linear model whose weights depend on the query, w(q) = w + Σ_p prop_p(q) · v_p, is the
linear model over FEATURES plus the columns feature × prop_p(q). Properties (PROPS), from the
task's query text alone (what the query path has): `len` (log words, centred on 8 words),
`ident` (it holds a code identifier: camelCase, snake_case, a dotted or called name, a path,
a backquoted span), `one` (8 words or fewer). A GATE `prop:features` names the property and
the features it scales (`+`-joined, or `core` for hand, body, history, recency, or `all`).
Queries come from the dump's out/<repo>/commits.jsonl. Nothing it reads belongs in a commit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..query.ranking.learned import FEATURES
from .try_features import Case, judge, load, options, saved_tasks

_IDENT = re.compile(r"`[^`]+`|\b[a-z]+[A-Z]\w*|\b[A-Za-z]+_\w+|\b\w+\.\w+\(|\b\w+\(\)|\w/\w+\.\w+|\b\w+\.[a-z]{1,4}\b")
CORE = ("hand", "body", "history", "recency")


def words(query: str) -> int:
    return len(query.split())


PROPS: dict[str, Callable[[str], float]] = {
    "len": lambda q: (math.log1p(words(q)) - math.log1p(8)) / 2.0,
    "ident": lambda q: 1.0 if _IDENT.search(q) else 0.0,
    "one": lambda q: 1.0 if words(q) <= 8 else 0.0,
}


def queries(work: Path, repos: list[str]) -> dict[str, str]:
    """Task id -> query text, from the dump's saved tasks."""
    return {i: t["query"] for name in repos for i, t in saved_tasks(work, name).items()}


def gate_columns(gate: str, text: dict[str, str]) -> Callable[[Case], np.ndarray]:
    """The interaction columns of GATE `prop:features` for a case (feature × prop(query))."""
    prop, _, which = gate.partition(":")
    feats = FEATURES if which == "all" else CORE if which in ("", "core") else tuple(which.split("+"))
    cols = [FEATURES.index(f) for f in feats]
    return lambda c: c.x[:, cols] * PROPS[prop](text[c.id])


GATES = [f"{p}:{f}" for p in PROPS for f in ("hand", "history", "recency", "core", "all")] + ["len+ident:core"]


def main() -> None:
    args = options(__doc__).parse_args()
    data = load(args.work)
    text = queries(args.work, list(data))
    extra: dict[str, Callable[[Case], np.ndarray]] = {}
    for gate in (args.only.split(",") if args.only else GATES):
        props, _, feats = gate.partition(":")
        fns = [gate_columns(f"{p}:{feats}", text) for p in props.split("+")]
        extra[gate] = lambda c, fns=fns: np.hstack([f(c) for f in fns])
    args.only = ""
    judge(data, extra, args)


if __name__ == "__main__":
    main()
