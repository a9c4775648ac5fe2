"""Try semantic similarity from the static word-piece table as a 14th column of the file
model, leave-one-repository-out, before building anything for it.

    python -m codeagent.eval.try_semantic --work DUMPDIR [--cache DIR] [--per-repo] [--only sem_all,a+b]
    python -m codeagent.eval.try_semantic --work DUMPDIR --minilm --only mini_names,mini_names_rank

For every task `train_ranker dump` kept (DUMPDIR/features/<repo>.jsonl, its query and the
commit its index was built at from DUMPDIR/out/<repo>/commits.jsonl, the clone in
DUMPDIR/clones/<repo>) it reads every file at that commit with git and gives each candidate
file one small vector per FORM: the mean of the MiniLM word-piece vectors
(embedders/static.py's table, no model runs) of the words of some of the file's text
(identifier sub-words), weighted by 1 + log tf and the idf over the commit's files; the
query gets one the same way, and the column is their cosine (or its rank among the task's
candidates). `--minilm` adds one form from the real sentence model (the `neural` extra),
for the top candidates only: what a model, not a table, knows. Then it judges each column as
`try_features` does (same options). The columns are cached under --cache (computed once,
minutes of one core); nothing here belongs in a commit.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from ..embedders.hashing import _STOP
from ..embedders.static import _ENGLISH_STOP, _load_table, word_pieces
from ..tokenize import _WORD, split_identifier
from .train_ranker import fit_folds, metrics
from .try_features import HAND, Case, attach, judge, load, options, pending, saved_tasks

FORMS = ("sem_all", "sem_all_tf", "sem_all_c", "sem_prose", "sem_names", "sem_soft", "sem_block")
BLOCK_LINES = 40
MINI_FORM, MINI_TOP, MINI_TOKENS = "mini_names", 20, 64
MAX_BYTES = 1 << 20
PROSE_SUFFIXES = (".md", ".rst", ".txt", ".adoc", ".markdown")
_COMMENT = re.compile(r"^\s*(?:#(?!\s*(?:include|define|if|ifdef|ifndef|endif|else|elif|pragma|import)\b)"
                      r"|//+|/\*+|\*(?!/)|--|\"\"\"|''')")
_TRAILING = re.compile(r"\s(?://|#)\s(.*)$")
_DOCSTRING = re.compile(r"\"\"\"|'''")
_DEFINES = re.compile(r"\b(?:def|class|func|fn|function|struct|enum|trait|interface|type|module|protocol|"
                      r"extension|impl|record|object|macro_rules!)\s+([A-Za-z_]\w*)"
                      r"|\b(?:const|let|var)\s+([A-Za-z_]\w*)\s*=\s*(?:async\s*)?(?:function|\()"
                      r"|^\s*(?:(?:public|private|protected|internal|static|final|override|abstract|async|"
                      r"virtual|open|fileprivate)\s+)+[\w<>\[\],.? ]*?\b([A-Za-z_]\w*)\s*\(", re.M)


def prose_lines(path: str, text: str) -> str:
    """The natural-language part of a file: all of a document; comments and docstrings of code."""
    if path.lower().endswith(PROSE_SUFFIXES):
        return text
    out: list[str] = []
    in_doc = False
    for line in text.splitlines():
        quotes = len(_DOCSTRING.findall(line))
        if in_doc or _COMMENT.match(line):
            out.append(line)
        else:
            m = _TRAILING.search(line)
            if m:
                out.append(m.group(1))
        if quotes % 2:
            in_doc = not in_doc
    return "\n".join(out)


def defined_names(path: str, text: str) -> str:
    """The file's path words and the names it defines (functions, classes, methods ...)."""
    names = [n for groups in _DEFINES.findall(text) for n in groups if n]
    return path + "\n" + " ".join(names)


class Words:
    """Identifier sub-words -> ids, each with the mean vector of its MiniLM word pieces."""

    def __init__(self) -> None:
        self.table, self.vocab = _load_table()
        self.ids: dict[str, int] = {}
        self.vec = np.zeros((1 << 14, self.table.shape[1]), dtype=np.float32)
        self._sub: dict[str, list[str]] = {}

    def _add(self, sub: str) -> int:
        pieces = word_pieces(sub, self.vocab)
        if not pieces:
            self.ids[sub] = -1
            return -1
        k = len(self.ids)
        if k >= len(self.vec):
            self.vec = np.concatenate([self.vec, np.zeros_like(self.vec)])
        self.vec[k] = self.table[pieces].mean(axis=0)
        self.ids[sub] = k
        return k

    def subwords(self, word: str) -> list[str]:
        got = self._sub.get(word)
        if got is None:
            got = [s for s in (split_identifier(word) or [word.lower()])
                   if len(s) > 1 and not s.isdigit() and s not in _STOP and s not in _ENGLISH_STOP]
            self._sub[word] = got
        return got

    def counts(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(word ids, counts) of the text's sub-words that have word pieces."""
        c: Counter[int] = Counter()
        for word, n in Counter(_WORD.findall(text)).items():
            for sub in self.subwords(word):
                k = self.ids.get(sub)
                if k is None:
                    k = self._add(sub)
                if k >= 0:
                    c[k] += n
        ids = np.fromiter(c.keys(), dtype=np.int64, count=len(c))
        return ids, np.fromiter(c.values(), dtype=np.float64, count=len(c))


def git_files(clone: Path, ref: str) -> dict[str, tuple[str, int]]:
    """path -> (blob, bytes) of every file at `ref`."""
    out = subprocess.run(["git", "-C", str(clone), "ls-tree", "-r", "-l", "-z", ref],
                         capture_output=True, check=True).stdout.decode("utf-8", "replace")
    files = {}
    for rec in filter(None, out.split("\0")):
        meta, path = rec.split("\t", 1)
        _mode, kind, blob, size = meta.split()
        if kind == "blob" and size.isdigit():  # "BAD": a blob the clone lacks
            files[path] = (blob, int(size))
    return files


def read_blobs(clone: Path, blobs: Iterable[str]) -> dict[str, str]:
    """blob -> text, binaries (a NUL byte) left out."""
    wanted = list(blobs)
    if not wanted:
        return {}
    raw = subprocess.run(["git", "-C", str(clone), "cat-file", "--batch"], input="\n".join(wanted).encode() + b"\n",
                         capture_output=True, check=True).stdout
    out, pos = {}, 0
    for blob in wanted:
        head_end = raw.index(b"\n", pos)
        head = raw[pos:head_end].split()
        if len(head) < 3:  # "<blob> missing"
            pos = head_end + 1
            continue
        size = int(head[2])
        data = raw[head_end + 1: head_end + 1 + size]
        pos = head_end + 1 + size + 1
        if b"\0" not in data[:8000]:
            out[blob] = data.decode("utf-8", "replace")
    return out


class Repo:
    """One repository's files, each read and counted once per (path, blob)."""

    def __init__(self, clone: Path, words: Words) -> None:
        self.clone, self.words = clone, words
        self.docs: dict[tuple[str, str], dict[str, tuple[np.ndarray, np.ndarray]]] = {}

    def at(self, ref: str) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
        files = {p: b for p, (b, size) in git_files(self.clone, ref).items() if size <= MAX_BYTES}
        todo = {b for p, b in files.items() if (p, b) not in self.docs}
        texts = read_blobs(self.clone, sorted(todo))
        for p, b in files.items():
            if (p, b) not in self.docs and b in texts:
                t = texts[b]
                lines = t.splitlines()
                blocks = ["\n".join(lines[i:i + BLOCK_LINES]) for i in range(0, len(lines), BLOCK_LINES)]
                self.docs[p, b] = {"all": self.words.counts(p + "\n" + t),
                                   "prose": self.words.counts(prose_lines(p, t)),
                                   "names": self.words.counts(defined_names(p, t)),
                                   "blocks": [self.words.counts(p + "\n" + k) for k in blocks]}
        return {p: self.docs[p, b] for p, b in files.items() if (p, b) in self.docs}


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def _vector(words: Words, doc: tuple[np.ndarray, np.ndarray], idf: np.ndarray | None) -> np.ndarray:
    ids, tf = doc
    if not ids.size:
        return np.zeros(words.vec.shape[1])
    w = 1.0 + np.log(tf)
    if idf is not None:
        w = w * idf[ids]
    return _unit(w @ words.vec[ids].astype(np.float64))


def _soft(words: Words, q: tuple[np.ndarray, np.ndarray], doc: tuple[np.ndarray, np.ndarray],
          idf: np.ndarray) -> float:
    """How near, by meaning only, the file's words come to each query word: the idf-weighted
    mean over query words of the best cosine to a different word of the file."""
    qi, fi = q[0], doc[0]
    if not qi.size or not fi.size:
        return 0.0
    qv = words.vec[qi] / np.maximum(np.linalg.norm(words.vec[qi], axis=1, keepdims=True), 1e-9)
    fv = words.vec[fi] / np.maximum(np.linalg.norm(words.vec[fi], axis=1, keepdims=True), 1e-9)
    sim = np.where(qi[:, None] == fi[None, :], -1.0, qv @ fv.T)
    return float(np.average(sim.max(axis=1), weights=idf[qi]))


def task_columns(words: Words, files: dict, query: str, paths: list[str]) -> dict[str, list[float]]:
    """FORMS columns for the task's candidate `paths` (0 for a file not readable at the ref)."""
    n_files = len(files)
    q = words.counts(query)
    df = np.bincount(np.concatenate([d["all"][0] for d in files.values()] or [np.zeros(0, np.int64)]),
                     minlength=len(words.ids) + 1).astype(np.float64)
    df = np.concatenate([df, np.zeros(max(0, len(words.vec) - len(df)))])
    idf = np.log(1.0 + (n_files - df + 0.5) / (df + 0.5))
    qv = {"idf": _vector(words, q, idf), "tf": _vector(words, q, None)}
    mean = _unit(np.mean([_vector(words, d["all"], idf) for d in files.values()], axis=0)) if files else 0.0
    qc = _unit(qv["idf"] - mean)
    cols: dict[str, list[float]] = {f: [] for f in FORMS}
    for p in paths:
        d = files.get(p)
        if d is None:
            for f in FORMS:
                cols[f].append(0.0)
            continue
        va = _vector(words, d["all"], idf)
        cols["sem_all"].append(float(va @ qv["idf"]))
        cols["sem_all_tf"].append(float(_vector(words, d["all"], None) @ qv["tf"]))
        cols["sem_all_c"].append(float(_unit(va - mean) @ qc))
        cols["sem_prose"].append(float(_vector(words, d["prose"], idf) @ qv["idf"]))
        cols["sem_names"].append(float(_vector(words, d["names"], idf) @ qv["idf"]))
        cols["sem_soft"].append(_soft(words, q, d["all"], idf))
        cols["sem_block"].append(max((float(_vector(words, k, idf) @ qv["idf"]) for k in d["blocks"]), default=0.0))
    return cols


def compute(work: Path, cache: Path, names: Iterable[str], words: Words) -> None:
    """Write cache/<repo>.jsonl ({"id", "cols"} per dumped task) for repositories not yet done."""
    for name, dest in pending(cache, names):
        tasks = saved_tasks(work, name)
        repo, lines, missing = Repo(work / "clones" / name, words), [], 0
        for line in (work / "features" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            raw = json.loads(line)
            task = tasks[raw["id"]]
            files = repo.at(task["ref"])
            missing += sum(p not in files for p in raw["paths"])
            lines.append(json.dumps({"id": raw["id"], "cols": task_columns(words, files, task["query"], raw["paths"])}))
        dest.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{name}: {len(lines)} tasks, {len(repo.docs)} file versions read, {missing} candidates unreadable",
              flush=True)


def _summary(path: str, text: str) -> str:
    """The path and the names the file defines, as words (what MiniLM reads of a file)."""
    names = defined_names(path, text).split("\n", 1)[1].split()
    return path + ": " + " ".join(" ".join(split_identifier(n)) for n in names)


def compute_minilm(work: Path, cache: Path, data: dict[str, list[Case]]) -> None:
    """cache/<repo>.minilm.jsonl: MINI_FORM, the cosine of all-MiniLM-L6-v2 vectors (the
    `neural` extra; MINI_TOKENS word pieces) of the query and of each of the task's top
    MINI_TOP candidates by the hand-set score (path and defined names); the other candidates
    get the task's lowest. An upper bound on what a sentence model knows: ~0.1 s of CPU a text."""
    from ..embedders.minilm import load_minilm  # the `neural` extra: only this form needs it

    model = load_minilm()
    model.tokenizer.enable_truncation(max_length=MINI_TOKENS)
    for name, cases in data.items():
        dest = cache / f"{name}.minilm.jsonl"
        if dest.exists():
            continue
        tasks = saved_tasks(work, name)
        clone, vecs, lines = work / "clones" / name, {}, []
        for c in cases:
            files = git_files(clone, tasks[c.id]["ref"])
            top = [c.paths[i] for i in np.argsort(-c.x[:, HAND], kind="stable")[:MINI_TOP] if c.paths[i] in files]
            todo = [(p, files[p][0]) for p in top if (p, files[p][0]) not in vecs]
            texts = read_blobs(clone, sorted({b for _, b in todo}))
            todo = [(p, b) for p, b in todo if b in texts]
            for key, v in zip(todo, model.embed([_summary(p, texts[b]) for p, b in todo])):
                vecs[key] = v
            q = model.embed([tasks[c.id]["query"]])[0]
            got = {p: float(vecs[p, files[p][0]] @ q) for p in top if (p, files[p][0]) in vecs}
            low = min(got.values(), default=0.0)
            lines.append(json.dumps({"id": c.id, "cols": {MINI_FORM: [got.get(p, low) for p in c.paths]}}))
        dest.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{name}: {len(vecs)} files embedded", flush=True)


def rank_of(v: np.ndarray) -> np.ndarray:
    """1 / (1 + rank) of each value among the task's candidates, highest first (ties share)."""
    uniq = np.unique(-np.round(v, 6))
    return 1.0 / (1.0 + np.searchsorted(uniq, -np.round(v, 6)))


def z_of(v: np.ndarray) -> np.ndarray:
    """The value standardised among the task's candidates (0 where they are all equal)."""
    sd = float(v.std())
    return (v - v.mean()) / sd if sd > 0 else np.zeros_like(v)


def extra_columns(forms: Iterable[str] = FORMS) -> dict[str, Callable[[Case], np.ndarray]]:
    """Each form's column as its cosine, its rank among the candidates and its z-score."""
    extra: dict[str, Callable[[Case], np.ndarray]] = {}
    for f in forms:
        extra[f] = lambda c, f=f: c.cols[f]
        extra[f + "_rank"] = lambda c, f=f: rank_of(c.cols[f])
        extra[f + "_z"] = lambda c, f=f: z_of(c.cols[f])
    return extra


def diagnose(data: dict[str, list[Case]], args, forms: Iterable[str] = FORMS + (MINI_FORM,)) -> None:
    """Each form alone (its column ranks the candidates), and, where the base model held out
    puts gold at rank 2-10, how often gold's value beats that of the file it put first
    (shared with eval/try_translation)."""
    names = list(data)
    cases = [c for n in names for c in data[n]]
    w = fit_folds([(c.x, c.y) for c in cases], [k for k, n in enumerate(names) for _ in data[n]],
                  len(names), args.l2, args.steps)
    held = [w[k] for k, n in enumerate(names) for _ in data[n]]
    print("| form | alone MRR@10 | alone Acc@5 | gold above the base's top-1 (gold at 2-10) |")
    print("|---|---:|---:|---:|")
    for f in [f for f in forms if f in cases[0].cols]:
        m = metrics([(c.cols[f][:, None], c.y) for c in cases], lambda x: x[:, 0])
        wins = n = 0
        for c, wk in zip(cases, held):
            order = np.argsort(-(c.x @ wk), kind="stable")
            hits = np.nonzero(c.y[order])[0]
            if hits.size and 0 < hits[0] < 10:
                n += 1
                wins += c.cols[f][order[hits[0]]] > c.cols[f][order[0]]
        print(f"| {f} | {m['mrr@10']:.3f} | {m['acc@5']:.3f} | {wins} of {n} ({wins / max(n, 1):.0%}) |", flush=True)


def main() -> None:
    ap = options(__doc__)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/codeagent-semantic"))
    ap.add_argument("--minilm", action="store_true", help=f"also {MINI_FORM} (needs the `neural` extra)")
    args = ap.parse_args()
    data = load(args.work)
    compute(args.work, args.cache, data, Words())
    if args.minilm:
        compute_minilm(args.work, args.cache, data)
    for suffix in (".jsonl", ".minilm.jsonl") if args.minilm else (".jsonl",):
        attach(data, args.cache, suffix)
    diagnose(data, args)
    judge(data, extra_columns(FORMS + (MINI_FORM,) if args.minilm else FORMS), args)


if __name__ == "__main__":
    main()
