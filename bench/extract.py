"""Extraction throughput and ctags recall on the Python standard library.

    python bench/extract.py [--limit N] [--misses K] [--repeat R]
    python bench/extract.py --stages [--limit N] [--repeat R]   # CPU per parse-worker step

Measures, in one run on the same .py files: our tree-sitter extraction (symbols/s, refs/s)
and universal-ctags (`ctags --languages=Python --output-format=json --fields=+n`), then the
recall of ctags' definitions by (file, name, line) among ours.

Counting: recall is over ctags' class (c), function (f) and member (m) tags, matched against
our class/function/method/constructor symbols by name line. ctags' variables (v) are reported
separately (matched against our module- and class-level variable/constant/field symbols);
ctags' import tags (I, i, x) are not definitions (we record imports as references) and are
left out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import STDLIB, stdlib_sources  # noqa: E402

from codeagent.indexer.extract import extract  # noqa: E402

CALLABLE_TAGS = {"class": "class", "function": "function", "member": "function"}
OURS_CALLABLE = {"class": "class", "function": "function", "method": "function",
                 "constructor": "function"}
OURS_VARIABLE = {"variable", "constant", "field"}


def load(limit: int | None) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for path, data in stdlib_sources():
        files[str(path.relative_to(STDLIB))] = data
        if limit and len(files) >= limit:
            break
    return files


def run_ours(files: dict[str, bytes]) -> tuple[float, dict[str, list], int]:
    defs: dict[str, list] = {}
    refs = 0
    start = time.perf_counter()
    for rel, data in files.items():
        ex = extract(data, "python")
        defs[rel] = ex.symbols
        refs += len(ex.references)
    return time.perf_counter() - start, defs, refs


def run_ctags(files: dict[str, bytes]) -> tuple[float, list[dict]]:
    start = time.perf_counter()
    proc = subprocess.run(
        ["ctags", "--languages=Python", "--output-format=json", "--fields=+nK", "-f", "-", "-L", "-"],
        input="\n".join(files), cwd=STDLIB, capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - start
    tags = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return elapsed, [t for t in tags if t.get("_type") == "tag"]


def stage_times(files: dict[str, bytes], repeat: int) -> dict[str, float]:
    """CPU seconds (median over `repeat` runs) of each step a parse worker takes per file."""
    from codeagent.hashing import hash_bytes
    from codeagent.format.shard import encode_table
    from codeagent.indexer import shard
    from codeagent.indexer.extract import treesitter
    from codeagent.indexer.extract.chunks import code_chunks
    from codeagent.indexer.extract.rules import SOURCE
    from codeagent.indexer.extract.walk import walk
    from codeagent.types import Extraction

    rules = treesitter.rules_for("python")
    runs: dict[str, list[float]] = {}
    for _ in range(repeat):
        spent: Counter[str] = Counter()

        def timed(stage: str, fn, *args):
            start = time.process_time()
            out = fn(*args)
            spent[stage] += time.process_time() - start
            return out

        for data in files.values():
            tree = timed("tree-sitter parse", treesitter.parse, data, "python")
            SOURCE.set(data)
            walked = timed("walk (rules)", walk, tree.root_node, rules, tree.language)
            symbol_at: dict[tuple[int, int], int] = {}
            for i, (sym, node) in enumerate(zip(walked.symbols, walked.nodes)):  # as extract_tree
                symbol_at.setdefault(node.byte_range, i)
                symbol_at.setdefault((sym.span.start_byte, sym.span.end_byte), i)
            chunks = timed("chunks", code_chunks, tree.root_node, data, symbol_at)
            ex = Extraction(walked.symbols, walked.references, chunks)
            timed("postings", shard._postings, ex, data)
            timed("rows (symbols, chunks, refs)", lambda: (
                shard._symbols(data, "python", ex.symbols), shard._chunks(data, ex.chunks), shard._refs(ex.references)))
            table = shard.shard_table(data, "python", hash_bytes(data), ex)
            timed("Parquet write", encode_table, table)
            timed("Arrow IPC", shard.table_to_ipc, table)
        for stage, seconds in spent.items():
            runs.setdefault(stage, []).append(seconds)
    return {stage: statistics.median(v) for stage, v in runs.items()}


def print_stages(files: dict[str, bytes], repeat: int) -> None:
    stages = stage_times(files, repeat)
    ctags_t = statistics.median([run_ctags(files)[0] for _ in range(repeat)])
    total = sum(stages.values())
    print(f"parse-worker steps on {len(files)} .py files, {sum(map(len, files.values())) / 1e6:.1f} MB, "
          f"CPU s, median of {repeat} (the first run tokenises every word: workers start cold)")
    for stage, seconds in stages.items():
        print(f"  {stage:<30}{seconds:>8.2f}{seconds / total:>8.0%}")
    print(f"  {'total':<30}{total:>8.2f}   ctags wall {ctags_t:.2f} s: {total / ctags_t:.1f}x")


def recall(tags: list[dict], defs: dict[str, list], kinds: set[str], ours: set[str]) -> tuple[int, int, list]:
    have = {(rel, s.name, s.name_span.start_line) for rel, syms in defs.items() for s in syms
            if s.kind in ours}
    wanted = [(t["path"], t["name"], t["line"]) for t in tags if t.get("kind") in kinds]
    missed = [w for w in wanted if w not in have]
    return len(wanted) - len(missed), len(wanted), missed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=None, help="only the first N files")
    ap.add_argument("--misses", type=int, default=10, help="print up to K missed ctags tags")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs (median reported)")
    ap.add_argument("--stages", action="store_true", help="CPU per parse-worker step instead")
    args = ap.parse_args()
    files = load(args.limit)
    if args.stages:
        return print_stages(files, args.repeat)
    lines = sum(d.count(b"\n") for d in files.values())
    ours_times, ctags_times = [], []
    for _ in range(args.repeat):
        t, defs, n_refs = run_ours(files)
        ours_times.append(t)
        t, tags = run_ctags(files)
        ctags_times.append(t)
    ours_t, ctags_t = statistics.median(ours_times), statistics.median(ctags_times)
    n_syms = sum(len(s) for s in defs.values())
    hit, total, missed = recall(tags, defs, set(CALLABLE_TAGS), set(OURS_CALLABLE))
    vhit, vtotal, _ = recall(tags, defs, {"variable"}, OURS_VARIABLE)
    print(f"corpus: {len(files)} .py files, {lines} lines, {sum(map(len, files.values())) / 1e6:.1f} MB ({STDLIB})")
    print(f"{'tool':<12}{'seconds':>10}{'symbols':>10}{'symbols/s':>12}{'refs':>10}{'refs/s':>10}")
    print(f"{'codeagent':<12}{ours_t:>10.2f}{n_syms:>10}{n_syms / ours_t:>12.0f}{n_refs:>10}{n_refs / ours_t:>10.0f}")
    print(f"{'ctags':<12}{ctags_t:>10.2f}{len(tags):>10}{len(tags) / ctags_t:>12.0f}{'-':>10}{'-':>10}")
    print(f"time ratio codeagent/ctags: {ours_t / ctags_t:.1f}x")
    ours_kinds = Counter(s.kind for syms in defs.values() for s in syms)
    print("ours by kind:", dict(ours_kinds.most_common()))
    print("ctags by kind:", dict(Counter(t.get("kind") for t in tags).most_common()))
    print(f"recall of ctags class/function/member by (file, name, line): {hit}/{total} = {hit / max(total, 1):.2%}")
    print(f"recall of ctags variables (module/class level):             {vhit}/{vtotal} = {vhit / max(vtotal, 1):.2%}")
    for m in missed[:args.misses]:
        print("  missed:", *m)


if __name__ == "__main__":
    main()
