"""CPU of a reader's first grep after idle: every resident text decompressed into one array.

    python bench/texts_whole.py --before OLD_TEXTS_PY [--rounds N]

Builds the texts structure (format/texts.py) of the standard library's .py files in memory,
then times `TextStore.texts()` on a fresh store (what a server pays on its first grep after
`forget_decompressed`) with this checkout's module ("after") and with OLD_TEXTS_PY, the
previous version of src/codeagent/format/texts.py loaded in this process ("before"; e.g. a
pinned worktree's copy), alternating which goes first round by round. Prints the medians and
ranges of CPU seconds, the ratio, and the load average.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time
from pathlib import Path

import pyarrow as pa

from corpus import stdlib_sources

from codeagent.format import texts as after


def load_before(path: Path):
    """The module at `path`, as a sibling of format/texts.py (its relative imports resolve)."""
    spec = importlib.util.spec_from_file_location("codeagent.format._texts_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus() -> pa.Table:
    rows = sorted((str(p), data.decode("utf-8")) for p, data in stdlib_sources())
    return pa.table({"path": [p for p, _ in rows], "text": [t for _, t in rows]})


def first_grep(module, parts: dict) -> float:
    """CPU seconds of texts() on a store that has decompressed nothing yet."""
    store = module.TextStore(parts)
    started = time.process_time()
    got = store.texts()
    spent = time.process_time() - started
    assert len(got) == len(store)
    return spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the previous format/texts.py")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    before = load_before(args.before)
    parts = after.text_parts(corpus())
    raw = sum(parts["blocks"].column("size").to_pylist())
    assert before.TextStore(parts).texts().equals(after.TextStore(parts).texts())
    times: dict[str, list[float]] = {"before": [], "after": []}
    for r in range(args.rounds):
        order = (("before", before), ("after", after)) if r % 2 == 0 else (("after", after), ("before", before))
        for name, module in order:
            times[name].append(first_grep(module, parts))
    print(f"{len(parts['rows'])} texts, {raw / 1e6:.1f} MB in {len(parts['blocks'])} blocks; "
          f"{args.rounds} rounds, alternating; load {os.getloadavg()}")
    print("| code | texts() CPU median | range |")
    print("|---|---:|---|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values) * 1e3:.1f} ms | "
              f"{min(values) * 1e3:.1f}-{max(values) * 1e3:.1f} ms |")
    print(f"ratio after/before: {statistics.median(times['after']) / statistics.median(times['before']):.2f}")


if __name__ == "__main__":
    main()
