"""Boosted ranking trees for the file model (train_ranker's `--kind trees`): LightGBM's
lambdarank at training time only (the `train` extra), exported as the flat arrays
`query/ranking/learned.TreeModel` walks in numpy at run time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..query.ranking.learned import FEATURES, with_derived

Cases = list[tuple[np.ndarray, np.ndarray]]
# The configuration chosen by leave-one-repository-out over the grid in docs/search-quality.md.
PARAMS: dict[str, Any] = {"trees": 100, "leaves": 7, "depth": 3, "lr": 0.05, "min_leaf": 50, "l2": 1.0}
DERIVED: tuple[str, ...] = ("hand_rr", "hand_rel")
SEED = 7


def fit_trees(cases: Cases, params: Mapping[str, Any] = PARAMS, derived: Sequence[str] = DERIVED,
              linear: np.ndarray | None = None) -> Any:
    """A LightGBM booster over the cases with a gold candidate (single-threaded and seeded, so
    the same cases give the same trees); `linear` weights, when given, are its starting score."""
    try:
        import lightgbm as lgb  # training only: the `train` extra, never needed to rank
    except ImportError:
        raise SystemExit("boosted trees need LightGBM: pip install 'codeagent[train]'") from None

    cases = [(x, y) for x, y in cases if y.any()]
    x = np.vstack([with_derived(c[0], derived) for c in cases])
    init = None if linear is None else np.concatenate([c[0] @ linear for c in cases])
    data = lgb.Dataset(x, np.concatenate([c[1] for c in cases]), group=[len(c[1]) for c in cases], init_score=init)
    cfg = {"objective": "lambdarank", "num_leaves": params["leaves"], "max_depth": params["depth"],
           "learning_rate": params["lr"], "min_data_in_leaf": params["min_leaf"], "lambda_l2": params["l2"],
           "lambdarank_truncation_level": 20, "num_threads": 1, "deterministic": True, "force_row_wise": True,
           "seed": SEED, "verbose": -1}
    return lgb.train(cfg, data, num_boost_round=params["trees"])


def export(booster: Any, derived: Sequence[str], linear: np.ndarray | None) -> dict[str, Any]:
    """The booster as learned.TreeModel's JSON: every tree's nodes in one set of flat arrays
    (a leaf's feature is -1)."""
    arrays: dict[str, list] = {"feature": [], "threshold": [], "left": [], "right": [], "value": []}
    roots, depth = [], 0

    def add(node: Mapping[str, Any], level: int) -> int:
        nonlocal depth
        i = len(arrays["feature"])
        for key in arrays:
            arrays[key].append(-1 if key in ("feature", "left", "right") else 0.0)
        if "leaf_value" in node:
            arrays["value"][i] = float(node["leaf_value"])
            depth = max(depth, level)
            return i
        if node["decision_type"] != "<=" or node["missing_type"] not in ("None",):
            raise ValueError(f"a split this export cannot walk: {node['decision_type']} {node['missing_type']}")
        arrays["feature"][i] = int(node["split_feature"])
        arrays["threshold"][i] = float(node["threshold"])
        arrays["left"][i] = add(node["left_child"], level + 1)
        arrays["right"][i] = add(node["right_child"], level + 1)
        return i

    for tree in booster.dump_model()["tree_info"]:
        roots.append(add(tree["tree_structure"], 0))
    return {"kind": "trees", "features": list(FEATURES), "derived": list(derived), "depth": depth, "roots": roots,
            **arrays, "linear": None if linear is None else [float(w) for w in linear]}
