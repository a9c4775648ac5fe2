"""The learned file model: the shipped file loads from the package alone and ranks the same
way every time; a tree model walked in numpy scores exactly as the library that trained it."""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.query.ranking import learned
from codeagent.query.ranking.learned import FEATURES, Candidate, TreeModel, model_from_json, with_derived


def _candidates(seed: int, n: int = 40) -> list[Candidate]:
    rng = np.random.default_rng(seed)
    return [Candidate(path=f"pkg/mod_{i}.py", hand=float(rng.random() * 2), body=float(rng.random()),
                      history=float(rng.random()), chunk_rank=int(rng.integers(0, 9)) if rng.random() < .5 else None,
                      named=bool(rng.random() < .1), prior=float(rng.random()), length=float(rng.integers(10, 5000)),
                      coverage=float(rng.random()), last_change=int(rng.integers(0, 400)), touches=int(rng.integers(0, 30)),
                      defines=float(rng.random() < .05)) for i in range(n)]


def test_the_shipped_model_loads_offline_and_ranks_deterministically(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args, **kwargs):
        raise AssertionError("the file model tried to open a socket")

    monkeypatch.setattr(socket, "socket", no_network)
    learned.shipped_model.cache_clear()
    model = learned.shipped_model()
    kind = json.loads(learned.MODEL_FILE.read_text(encoding="utf-8")).get("kind", "linear")
    assert isinstance(model, TreeModel if kind == "trees" else learned.FileModel)
    cands = _candidates(3)
    first = learned.rank(cands, model)
    assert [p for p, _ in learned.rank(list(reversed(cands)), model)] == [p for p, _ in first]
    assert learned.rank(cands, learned.shipped_model()) == first
    # the model is not the hand-set score under another name: it reorders these candidates
    assert [p for p, _ in first] != [p for p, _ in learned.rank(cands, None)]


def test_a_model_file_for_other_features_is_not_used() -> None:
    assert model_from_json({"features": ["hand", "body"], "weights": [1.0, 0.0]}) is None
    assert model_from_json({"features": list(FEATURES), "derived": ["nonesuch"], "kind": "trees"}) is None
    linear = model_from_json({"features": list(FEATURES), "weights": [1.0] + [0.0] * (len(FEATURES) - 1)})
    assert linear.score([[2.0] + [5.0] * (len(FEATURES) - 1)]) == [2.0]


def test_a_hand_built_tree_walks_as_written() -> None:
    """One tree of depth 2 whose left side is a leaf at depth 1 (so it is padded), plus a
    linear part; values checked by hand."""
    hand, body = FEATURES.index("hand"), FEATURES.index("body")
    model = model_from_json({"kind": "trees", "features": list(FEATURES), "depth": 2, "roots": [0],
                             "feature": [hand, -1, body, -1, -1], "threshold": [0.5, 0, 0.25, 0, 0],
                             "left": [1, -1, 3, -1, -1], "right": [2, -1, 4, -1, -1],
                             "value": [0, 10.0, 0, 20.0, 30.0], "linear": [0.0, 1.0] + [0.0] * (len(FEATURES) - 2)})
    rows = [[0.5, 0.1] + [0.0] * 11, [0.9, 0.25] + [0.0] * 11, [0.9, 0.3] + [0.0] * 11]
    assert model.score(rows) == pytest.approx([10.1, 20.25, 30.3])
    assert model.score([]) == []


def _synthetic_cases() -> list[tuple[np.ndarray, np.ndarray]]:
    """Lists of 30 candidates whose gold follows a nonlinear rule (an interaction of two features)."""
    rng = np.random.default_rng(11)
    cases = []
    for _ in range(60):
        x = rng.random((30, len(FEATURES)))
        y = np.zeros(30)
        y[int(np.argmax(x[:, 0] + x[:, 2] * x[:, 4] + 0.3 * rng.random(30)))] = 1.0
        cases.append((x, y))
    return cases


@pytest.fixture(scope="module")
def booster_and_model():
    """A small lambdarank booster trained here (the `train` extra) and its exported numpy model."""
    pytest.importorskip("lightgbm", reason="the train extra is not installed (pip install 'codeagent[train]')")
    from codeagent.eval import train_trees

    params = {**train_trees.PARAMS, "trees": 40, "min_leaf": 5}
    booster = train_trees.fit_trees(_synthetic_cases(), params)
    exported = json.loads(json.dumps(train_trees.export(booster, train_trees.DERIVED, None)))
    return booster, model_from_json(exported), params


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 50))
def test_numpy_trees_equal_the_training_library(booster_and_model, data: st.DataObject, n: int) -> None:
    """On random rows, some of whose values sit exactly on a split's threshold."""
    booster, model, _ = booster_and_model
    cuts = sorted({float(t) for t in model.threshold if np.isfinite(t)})
    value = st.one_of(st.floats(-3, 3, allow_nan=False, width=32), st.sampled_from(cuts))
    rows = np.asarray(data.draw(st.lists(st.lists(value, min_size=len(FEATURES), max_size=len(FEATURES)),
                                         min_size=n, max_size=n)), dtype=np.float64)
    expected = booster.predict(with_derived(rows, model.derived))
    assert np.allclose(model.score(rows.tolist()), expected, rtol=0, atol=1e-9)


def test_training_trees_twice_gives_the_same_file(booster_and_model) -> None:
    from codeagent.eval import train_trees

    booster, _, params = booster_and_model
    again = train_trees.fit_trees(_synthetic_cases(), params)
    assert train_trees.export(again, train_trees.DERIVED, None) == train_trees.export(booster, train_trees.DERIVED, None)
