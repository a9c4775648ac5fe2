"""format/texts: the resident texts in compressed blocks read back as they were written, per
file and whole, however the rows were fed to the builder."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import HealthCheck, given, settings, strategies as st

from codeagent.format import texts

TEXT = st.text(alphabet=st.sampled_from(["a", "b", "\n", "é", "\u4e2d", " ", "\r"]), max_size=60)


def _table(rows: list[tuple[str, str]]) -> pa.Table:
    return pa.table({"path": pa.array([p for p, _ in rows], pa.string()),
                     "text": pa.array([t for _, t in rows], pa.string())})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.text(alphabet="abc/", min_size=1, max_size=6), TEXT, max_size=25),
       st.sampled_from([1, 7, 64, 1 << 18]), st.integers(1, 5))
def test_blocks_read_back_the_texts_whatever_the_batches(monkeypatch, files, block_bytes, batch):
    monkeypatch.setattr(texts, "BLOCK_BYTES", block_bytes)
    rows = sorted(files.items())
    whole = texts.text_parts(_table(rows))
    fed = texts.TextBlocks()
    for i in range(0, len(rows), batch):
        fed.add(_table(rows[i:i + batch]))
    parts = fed.parts()
    assert {k: v.to_pylist() for k, v in parts.items()} == {k: v.to_pylist() for k, v in whole.items()}
    store = texts.TextStore(parts)
    assert [store.text(i) for i in range(len(rows))] == [t for _, t in rows]
    assert store.texts().to_pylist() == [t for _, t in rows]
    assert [store.raw(i) for i in range(len(rows))] == [t.encode() for _, t in rows]  # now from the whole array
    texts.forget_decompressed()
    assert [store.text(i) for i in reversed(range(len(rows)))] == [t for _, t in reversed(rows)]
