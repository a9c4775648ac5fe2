"""Try a history translation signal for the file model: what the repository's own past commits
say a message word means in code, leave-one-repository-out.

    python -m codeagent.eval.try_translation --work DUMPDIR [--cache DIR] [--per-repo] [--only tr_max]

For every task `train_ranker dump` kept, the commits reachable from the commit its index was
built at (the newest `--window`, merges left out, the task's own commit never among them) each
give a record: the sub-words of its message and the identifiers on the lines its diff added or
removed (commits changing more than `MAX_IDENTS` identifiers, reformats and imports, left out).
From them, for each query word w, a(w, t) = max(0, c(w, t) / (c(w) + MU) - c(t) / N): how much
more often identifier t changes when w is in the message than at all (a smoothed, prior-corrected
P(t | w)), kept for the TOP identifiers of each word. A candidate file (its identifiers at that
commit, read with git) then scores, each query word weighted by its idf over the commits:
`tr_max` Σ_w idf(w) · max_{t in file} a(w, t) (the best translation of each word), `tr_sum`
Σ_w idf(w) · Σ_{t in file} a(w, t), `tr_norm` tr_sum / sqrt(identifiers of the file); each also
as `_rel` (its share of the best candidate's), `_rank` (1 / (1 + rank)) and `_log`; `trx_*` the
same with only the identifiers that do not hold the word itself (the vocabulary BM25 cannot match). Columns are cached
under --cache; the cost of the records (CPU per 1,000 commits) is printed. Nothing it reads
belongs in a commit.
"""

from __future__ import annotations

import json
import math
import re
import resource
import subprocess
from collections import Counter
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..embedders.hashing import _STOP
from ..embedders.static import _ENGLISH_STOP
from ..tokenize import _WORD, split_identifier
from .try_features import Case, attach, judge, load, options, pending, saved_tasks
from .try_semantic import MAX_BYTES, diagnose, git_files, rank_of, read_blobs

MU, TOP, MAX_IDENTS, WINDOW = 5.0, 50, 300, 3000
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
FORMS = ("tr_max", "tr_sum", "tr_norm", "trx_max", "trx_sum", "trx_norm")  # trx: `cross` translations
Record = tuple[frozenset[str], frozenset[str]]


def message_words(text: str) -> set[str]:
    """Sub-words of a message or query, stop words and digits left out."""
    out: set[str] = set()
    for word in set(_WORD.findall(text)):
        out.update(s for s in (split_identifier(word) or [word.lower()])
                   if len(s) > 1 and not s.isdigit() and s not in _STOP and s not in _ENGLISH_STOP)
    return out


def identifiers(text: str) -> set[str]:
    return {t.lower() for t in _IDENT.findall(text)}


def parse_log(raw: str) -> dict[str, Record]:
    """sha -> (message words, identifiers of the changed lines) from `git log -p` (the format
    of `commit_records`)."""
    out: dict[str, Record] = {}
    for chunk in ("\n" + raw).split("\n\x1e")[1:]:  # a diff line never starts with \x1e
        sha, _, rest = chunk.partition("\n")
        message, _, diff = rest.partition("\x01")
        changed: set[str] = set()
        for line in diff.splitlines():
            if line[:1] in "+-" and not line.startswith(("+++", "---")):
                changed |= identifiers(line[1:])
        if len(changed) <= MAX_IDENTS:
            out[sha] = (frozenset(message_words(message)), frozenset(changed))
    return out


def missing_paths(clone: Path, refs: list[str]) -> list[str]:
    """Paths of blobs the clone lacks (large binaries a mirror left out), which `git log -p`
    cannot diff."""
    listed = subprocess.run(["git", "-C", str(clone), "rev-list", "--objects", "--missing=print", *refs],
                            capture_output=True, check=True, text=True).stdout.splitlines()
    gone = {line[1:].strip() for line in listed if line.startswith("?")}
    if not gone:
        return []
    raw = subprocess.run(["git", "-C", str(clone), "log", "--raw", "--no-abbrev", "--no-renames", "--format=", *refs],
                         capture_output=True, text=True).stdout.splitlines()
    return sorted({line.split("\t", 1)[1] for line in raw if "\t" in line and gone & set(line.split()[2:4])})


def commit_records(clone: Path, refs: list[str]) -> dict[str, Record]:
    """The record of every commit reachable from `refs` (as far as the clone can diff them)."""
    skip = [f":(exclude){p}" for p in missing_paths(clone, refs)]
    raw = subprocess.run(["git", "-C", str(clone), "log", "--no-merges", "--no-renames", "-p", "--unified=0", "--no-color",
                          "--format=%x1e%H%n%B%x01", *refs, "--", ".", *skip], capture_output=True).stdout
    return parse_log(raw.decode("utf-8", "replace"))


def reachable(clone: Path, ref: str | list[str], window: int) -> list[str]:
    """The newest `window` commits reachable from `ref` (or any of several), merges left out."""
    refs = [ref] if isinstance(ref, str) else ref
    out = subprocess.run(["git", "-C", str(clone), "rev-list", "--no-merges", "-n", str(window), *refs],
                         capture_output=True, check=True, text=True).stdout
    return out.split()


@lru_cache(maxsize=1 << 18)
def _subwords(ident: str) -> frozenset[str]:
    return frozenset(split_identifier(ident))


def translations(records: list[Record], query: set[str], cross: bool = False) -> dict[str, tuple[float, dict[str, float]]]:
    """Query word -> (its idf over the commits, {identifier: a(w, t)} for its TOP identifiers);
    `cross`: only identifiers that do not hold the word as a sub-word (what BM25 cannot match)."""
    n = len(records)
    c_t: Counter[str] = Counter()
    c_w: Counter[str] = Counter()
    c_wt: dict[str, Counter[str]] = {w: Counter() for w in query}
    for words, idents in records:
        c_t.update(idents)
        for w in query & words:
            c_w[w] += 1
            c_wt[w].update(idents)
    out = {}
    for w in query:
        if c_w[w] < 2:
            continue
        a = {t: k / (c_w[w] + MU) - c_t[t] / n for t, k in c_wt[w].items()
             if not (cross and w in _subwords(t))}
        best = sorted((v, t) for t, v in a.items() if v > 0)[-TOP:]
        out[w] = (math.log(n / c_w[w]), {t: v for v, t in best})
    return out


def file_scores(trans: dict[str, tuple[float, dict[str, float]]], idents: set[str]) -> tuple[float, float, float]:
    """(tr_max, tr_sum, tr_norm) of one file's identifiers."""
    mx = sm = 0.0
    for idf, a in trans.values():
        hits = [v for t, v in a.items() if t in idents]
        if hits:
            mx += idf * max(hits)
            sm += idf * sum(hits)
    return mx, sm, sm / math.sqrt(max(len(idents), 1))


def _cpu() -> float:
    """CPU seconds of this process and the git processes it waited for."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def compute(work: Path, cache: Path, names: Iterable[str], window: int) -> None:
    """Write cache/<repo>.jsonl ({"id", "cols"} per dumped task) for repositories not yet done."""
    for name, dest in pending(cache, names):
        clone = work / "clones" / name
        tasks = saved_tasks(work, name)
        raws = [json.loads(line) for line in (work / "features" / f"{name}.jsonl").read_text().splitlines()]
        refs = sorted({tasks[r["id"]]["ref"] for r in raws})
        t0 = _cpu()
        records = commit_records(clone, refs)
        cost = _cpu() - t0
        read = len(reachable(clone, refs, 1 << 30))
        lines, score_cpu = [], 0.0
        for raw in raws:
            task = tasks[raw["id"]]
            t1 = _cpu()
            shas = reachable(clone, task["ref"], window)
            past, query = [records[s] for s in shas if s in records], message_words(task["query"])
            both = (translations(past, query), translations(past, query, cross=True))
            files = {p: b for p, (b, size) in git_files(clone, task["ref"]).items() if size <= MAX_BYTES}
            texts = read_blobs(clone, sorted({files[p] for p in raw["paths"] if p in files}))
            idents = [identifiers(p + "\n" + texts.get(files.get(p, ""), "")) for p in raw["paths"]]
            rows = [file_scores(both[0], i) + file_scores(both[1], i) for i in idents]
            score_cpu += _cpu() - t1
            lines.append(json.dumps({"id": raw["id"], "cols": {f: [r[k] for r in rows] for k, f in enumerate(FORMS)}}))
        dest.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{name}: {read} commits read, {len(records)} kept, {cost:.2f} s CPU ({1000 * cost / max(read, 1):.3f} s "
              f"per 1,000 commits, git's included); {len(raws)} tasks scored in {score_cpu:.1f} s CPU", flush=True)


def _rel(v: np.ndarray) -> np.ndarray:
    best = float(v.max()) if len(v) else 0.0
    return v / best if best > 0 else v


def extra_columns() -> dict[str, Callable[[Case], np.ndarray]]:
    extra: dict[str, Callable[[Case], np.ndarray]] = {}
    for f in FORMS:
        extra[f + "_rel"] = lambda c, f=f: _rel(c.cols[f])
        extra[f + "_rank"] = lambda c, f=f: np.where(c.cols[f] > 0, rank_of(c.cols[f]), 0.0)
        extra[f + "_log"] = lambda c, f=f: np.log1p(c.cols[f])
    return extra


def main() -> None:
    ap = options(__doc__)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/codeagent-translation"))
    ap.add_argument("--window", type=int, default=WINDOW)
    args = ap.parse_args()
    data = load(args.work)
    compute(args.work, args.cache, data, args.window)
    attach(data, args.cache)
    diagnose(data, args, FORMS)
    judge(data, extra_columns(), args)


if __name__ == "__main__":
    main()
