"""The offline feature trial: the vectorised leave-one-out fit is `train_ranker.fit` on each
training set, and the candidate-list features say what their names say on hand-made cases."""

from __future__ import annotations

import numpy as np
import pytest

from codeagent.eval import try_features
from codeagent.eval.train_ranker import fit, fit_folds
from codeagent.query.ranking.learned import FEATURES

HAND, RECENCY = FEATURES.index("hand"), FEATURES.index("recency")


def _cases(seed: int, n: int, extra: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(3, 25))
        x = rng.random((k, len(FEATURES) + extra))
        y = np.zeros(k)
        if rng.random() < 0.9:  # some cases have no gold candidate: they teach nothing
            y[int(np.argmax(x[:, 0] + x[:, -1] + 0.2 * rng.random(k)))] = 1.0
        out.append((x, y))
    return out


@pytest.mark.parametrize("extra", [0, 2])
def test_each_fold_is_fit_on_the_other_folds(extra: int) -> None:
    cases = _cases(3, 30, extra)
    fold = [i % 3 for i in range(len(cases))]
    w = fit_folds(cases, fold, 3, l2=0.03, steps=60)
    for j in range(3):
        alone = fit([c for c, f in zip(cases, fold) if f != j], steps=60, l2=0.03)
        assert np.allclose(w[j], alone, rtol=0, atol=1e-9)
    assert w.shape == (3, len(FEATURES) + extra)


def _case(paths: list[str], hand: list[float], edges: list[list] = (), recency: list[float] | None = None,
          prior: list[float] | None = None) -> try_features.Case:
    rows = np.zeros((len(paths), len(FEATURES)))
    rows[:, HAND] = hand
    if recency is not None:
        rows[:, RECENCY] = recency
    if prior is not None:
        rows[:, FEATURES.index("log_prior")] = prior
    return try_features.Case({"gold": [paths[0]], "features": list(FEATURES), "paths": paths,
                              "rows": rows.tolist(), "edges": list(edges)})


def test_graph_features_follow_the_edges_to_the_top_candidates() -> None:
    # the seeds weigh 1, 1/2, 1/3, 1/4 by rank; b.py calls a.py (exact), a.py imports c.py
    case = _case(["a.py", "b.py", "c.py", "d.py"], [3.0, 2.0, 1.0, 0.5],
                 [[1, 0, "calls", 1, 2], [0, 2, "imports", 0, 1]])
    assert try_features.EXTRA["graph_out"](case).tolist() == pytest.approx([1 / 3, 1.0, 0.0, 0.0])
    assert try_features.EXTRA["graph_in"](case).tolist() == [0.5, 0.0, 1.0, 0.0]  # a uses b (rank 1); c is used by a
    assert try_features.EXTRA["graph_calls"](case).tolist() == [0.5, 1.0, 0.0, 0.0]
    assert try_features.EXTRA["graph_both_exact"](case).tolist() == [0.5, 1.0, 0.0, 0.0]


def test_a_source_file_sees_its_test_and_the_test_its_source() -> None:
    case = _case(["pkg/parser.py", "tests/test_parser.py", "pkg/lexer.py", "src/Foo.java", "test/FooTest.java"],
                 [1.0, 2.0, 0.5, 1.0, 1.0], prior=[0.0, -0.8, 0.0, 0.0, -0.8])
    assert try_features.EXTRA["test_pair"](case).tolist() == [1.0, 0.0, 0.0, 0.5, 0.0]
    assert try_features.EXTRA["test_pair_rev"](case).tolist() == [0.0, 0.5, 0.0, 0.0, 0.5]


def test_folder_evidence_comes_from_the_other_files_of_the_folder() -> None:
    case = _case(["a/x.py", "a/y.py", "b/z.py"], [1.0, 2.0, 3.0])
    assert try_features.EXTRA["dir_top10"](case).tolist() == [0.1, 0.1, 0.0]


def test_recency_features_recover_the_commits_since_the_last_change() -> None:
    since = [0, 3, 3, 120, None]  # recency as dumped: 1 / (1 + n / 50), 6 decimals; 0 outside the window
    rec = [0.0 if n is None else round(1.0 / (1.0 + n / 50.0), 6) for n in since]
    case = _case([f"f{i}.py" for i in range(5)], [1.0] * 5, recency=rec)
    assert try_features.EXTRA["recent_0"](case).tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert try_features.EXTRA["recent_rank"](case).tolist() == pytest.approx([1.0, 0.5, 0.5, 1 / 3, 0.0])
    assert try_features.EXTRA["recent_1"](case).tolist() == pytest.approx([1.0, 0.25, 0.25, 1 / 121, 0.0], abs=1e-4)
