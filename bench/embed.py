"""Embedding and vector-search figures: embed throughput, ANN build/search, retrieval quality.

    python bench/embed.py [--items N] [--vectors N] [--queries N] [--no-eval]

1. Embed throughput (items/s) of each embedder over real items: the symbol and chunk texts
   our extractor makes from the standard library (`static` gets a quarter of the items,
   `minilm` a hundredth and only when its package is installed).
2. ANN: a usearch index (the settings indexer/assemble/ann.py uses, 2 threads) over N vectors of the
   hash embedder (stdlib items, topped up with jittered copies), build time, then search
   latency p50/p95 and recall@10 against exact numpy search, which is the peer.
3. Retrieval quality of text (BM25) / semantic / hybrid through `codeagent eval` on the
   committed datasets: the stdlib `email` package and this repository's own history.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import median, percentile, print_table, stdlib_sources  # noqa: E402

from codeagent.embedding import get_embedder  # noqa: E402
from codeagent.indexer.assemble import ann  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def stdlib_items(limit: int) -> list[str]:
    """Item texts exactly as the build embeds them (symbols and symbol-less chunks)."""
    from codeagent.indexer.extract import extract
    from codeagent.format.shard import decode_table
    from codeagent.indexer.shard import shard_table
    from codeagent.indexer.assemble.vectors import shard_items

    texts: list[str] = []
    for _path, data in stdlib_sources():
        row = decode_table(shard_table(data, "python", "", extract(data, "python")))
        texts.extend(t for _k, _o, t in shard_items(row))
        if len(texts) >= limit:
            break
    return texts[:limit]


def bench_throughput(texts: list[str]) -> list[list[object]]:
    plans = [("hash", texts), ("static", texts[:max(64, len(texts) // 4)])]
    skipped = []
    try:
        get_embedder("minilm")
        plans.append(("minilm", texts[:max(64, len(texts) // 100)]))
    except Exception as exc:  # the optional package is absent
        skipped.append(["minilm", "-", "-", f"skipped: {str(exc).splitlines()[0]}"])
    rows = []
    base = None
    for name, items in plans:
        runs = []
        for _ in range(1 if name == "minilm" else 3):
            emb = get_embedder(name)  # a fresh embedder: its memoised token tables start empty
            emb.embed(items[:8])
            start = time.perf_counter()
            for i in range(0, len(items), 256):
                emb.embed(items[i:i + 256])
            runs.append(len(items) / (time.perf_counter() - start))
        rate = median(runs)
        base = base or rate
        rows.append([emb.id, len(items), f"{rate:,.1f}",
                     "1x" if rate == base else f"{base / rate:,.0f}x slower"])
    return rows + skipped


def vectors_for(texts: list[str], n: int) -> np.ndarray:
    emb = get_embedder("hash")
    real = np.concatenate([emb.embed(texts[i:i + 512]) for i in range(0, len(texts), 512)])
    rng = np.random.default_rng(0)
    parts = [real]
    while sum(len(p) for p in parts) < n:
        jitter = real + rng.normal(0, 0.02, real.shape).astype(np.float32)
        parts.append(jitter / np.linalg.norm(jitter, axis=1, keepdims=True))
    return np.concatenate(parts)[:n].astype(np.float16)


def bench_ann(matrix: np.ndarray, queries: int) -> list[list[object]]:
    keys = np.arange(len(matrix), dtype=np.uint64)
    index = ann._ann_index(matrix.shape[1])
    start = time.perf_counter()
    index.add(keys, matrix, threads=2)
    build_s = time.perf_counter() - start
    dense = matrix.astype(np.float32)
    rng = np.random.default_rng(1)
    qs = dense[rng.choice(len(dense), queries, replace=False)]
    qs = qs + rng.normal(0, 0.05, qs.shape).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    exact_ms, ann_ms, recall = [], [], []
    for q in qs:
        t = time.perf_counter()
        scores = dense @ q
        top = np.argpartition(-scores, 10)[:10]
        exact_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        found = index.search(q, 10)
        ann_ms.append((time.perf_counter() - t) * 1000)
        recall.append(len(set(found.keys.tolist()) & set(top.tolist())) / 10)
    with tempfile.TemporaryDirectory() as tmp:
        index.save(os.path.join(tmp, "v.usearch"))
        size = os.path.getsize(os.path.join(tmp, "v.usearch"))
    return [
        ["usearch HNSW (f16, M=16, ef_add=64, ef=96)", len(matrix), f"{build_s:.1f}",
         f"{len(matrix) / build_s:,.0f}", f"{median(ann_ms):.2f}", f"{percentile(ann_ms, 95):.2f}",
         f"{np.mean(recall):.3f}", f"{size / 1e6:.0f} MB"],
        ["exact numpy (peer)", len(matrix), "0", "-", f"{median(exact_ms):.2f}",
         f"{percentile(exact_ms, 95):.2f}", "1.000", f"{matrix.nbytes / 1e6:.0f} MB"],
    ]


EVAL_RUNS = [
    ("stdlib email", "email", ["email-definitions.jsonl", "email-descriptions.jsonl"]),
    ("codeagent history", None, ["codeagent-commits.jsonl", "codeagent-definitions.jsonl",
                                 "codeagent-descriptions.jsonl"]),
]


def bench_quality(workdir: Path, embedder: str) -> list[list[object]]:
    from codeagent.eval.samples import stdlib_package_repo

    rows = []
    for label, package, files in EVAL_RUNS:
        repo = stdlib_package_repo(package, workdir / package) if package else ROOT
        cmd = [sys.executable, "-m", "codeagent", "eval", "--repo", str(repo), "--modes",
               "text,semantic,hybrid", "--embedder", embedder, "--brief", "--out", "-", "-q",
               "--resamples", "200", "--workdir", str(workdir / f"w-{package or 'self'}")]
        for f in files:
            cmd += ["--dataset", str(ROOT / "eval" / "datasets" / f)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            rows.append([label, "-", "-", "-", "-", f"eval failed: {proc.stderr.strip()[-200:]}"])
            continue
        for name, sec in json.loads(proc.stdout)["datasets"].items():
            for mode, entry in sec["modes"].items():
                m = entry.get("metrics") or {}
                cell = [f"{m[k]['value']:.3f}" if k in m else "-" for k in ("mrr@10", "ndcg@10", "recall@10")]
                rows.append([label, name, mode, *cell, sec["cases"]])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=20000, help="stdlib items to embed (hash)")
    ap.add_argument("--vectors", type=int, default=100_000, help="vectors in the ANN benchmark")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--no-eval", action="store_true", help="skip the retrieval-quality runs")
    ap.add_argument("--eval-embedder", default="static", help="embedder of the quality runs")
    args = ap.parse_args()
    texts = stdlib_items(max(args.items, 1))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"## Embed throughput ({os.cpu_count()} cores, load average {load})\n")
    print_table(["embedder", "items", "items/s (median)", "vs hash (peer)"], bench_throughput(texts))
    print(f"\n## ANN over {args.vectors:,} hash vectors, {args.queries} queries, 2 threads\n")
    matrix = vectors_for(stdlib_items(min(args.vectors, 120_000)), args.vectors)
    print_table(["search", "vectors", "build s", "vectors/s", "p50 ms", "p95 ms", "recall@10", "size"],
                bench_ann(matrix, args.queries))
    if not args.no_eval:
        print(f"\n## Retrieval quality (codeagent eval; {args.eval_embedder} embedder)\n")
        with tempfile.TemporaryDirectory() as tmp:
            print_table(["corpus", "dataset", "mode", "mrr@10", "ndcg@10", "recall@10", "cases"],
                        bench_quality(Path(tmp), args.eval_embedder))


if __name__ == "__main__":
    main()
