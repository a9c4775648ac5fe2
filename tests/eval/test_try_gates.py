"""The query-gate trial: the query properties, and the interaction columns they give."""

from __future__ import annotations

import numpy as np

from codeagent.eval import try_gates
from codeagent.eval.try_features import Case
from codeagent.query.ranking.learned import FEATURES


def test_query_properties() -> None:
    assert try_gates.PROPS["ident"]("Fix `can_omit` in the parser") == 1.0
    assert try_gates.PROPS["ident"]("Fix parseHeaders for empty values") == 1.0
    assert try_gates.PROPS["ident"]("Fix the parser for empty values") == 0.0
    assert try_gates.PROPS["one"]("Fix the parser") == 1.0
    assert try_gates.PROPS["len"]("one two three four five six seven eight") == 0.0


def test_a_gate_scales_the_features_it_names_by_the_query_property() -> None:
    rows = np.arange(2 * len(FEATURES), dtype=float).reshape(2, len(FEATURES))
    case = Case({"id": "t1", "gold": ["a.py"], "features": list(FEATURES), "paths": ["a.py", "b.py"],
                 "rows": rows.tolist()})
    text = {"t1": "Fix parseHeaders"}
    got = try_gates.gate_columns("ident:hand+recency", text)(case)
    assert got.tolist() == rows[:, [FEATURES.index("hand"), FEATURES.index("recency")]].tolist()
    assert try_gates.gate_columns("one:core", text)(case).shape == (2, len(try_gates.CORE))
    assert not try_gates.gate_columns("ident:all", {"t1": "fix the parser"})(case).any()
