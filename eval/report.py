"""The eval report: per dataset and mode, each metric's mean with a bootstrap CI, latency
percentiles; rendered as JSON (the gate's input) and as a Markdown table."""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict

from .cases import dump_jsonl
from .metrics import FILE_METRICS, QUALITY_METRICS, SYMBOL_METRICS, bootstrap_ci, percentile
from .retrievers import ALL_MODES, BASELINE
from .runner import QueryRecord, RunResult

FORMAT = "codeagent-eval"
VERSION = 1


def _mode_summary(records: list[QueryRecord], seed: int, resamples: int) -> dict:
    metrics = {}
    for name in QUALITY_METRICS:
        values = [r.metrics[name] for r in records if name in r.metrics]
        if values:
            mean, low, high = bootstrap_ci(values, seed, resamples)
            metrics[name] = {"value": round(mean, 4), "low": round(low, 4), "high": round(high, 4),
                             "n": len(values)}
    latencies = [r.latency_ms for r in records if not r.error]
    return {"n": len(records), "errors": sum(1 for r in records if r.error), "metrics": metrics,
            "latency_ms": {"p50": round(percentile(latencies, 50), 3) if latencies else None,
                           "p95": round(percentile(latencies, 95), 3) if latencies else None}}


def summarize(run: RunResult, seed: int, resamples: int = 1000, per_query: bool = True) -> dict:
    """One dataset's section of the report."""
    by_mode: dict[str, list[QueryRecord]] = defaultdict(list)
    for r in run.records:
        by_mode[r.mode].append(r)
    order = [m for m in ALL_MODES if m in by_mode] + sorted(m for m in by_mode if m not in ALL_MODES)
    section = {
        "cases": len(run.cases),
        "kinds": dict(sorted(Counter(c.kind for c in run.cases).items())),
        "fingerprint": hashlib.blake2b(dump_jsonl(run.cases).encode(), digest_size=12).hexdigest(),
        "build": {"refs": run.builds, "seconds": round(run.build_seconds, 2)},
        "modes": {m: _mode_summary(by_mode[m], seed, resamples) for m in order},
        "unavailable": dict(sorted(run.unavailable.items())),
    }
    if per_query:
        section["queries"] = [r.to_dict() for r in run.records]
    return section


def report(repo: str, sections: dict[str, dict], seed: int, resamples: int, depth: int,
           modes: list[str], embedder: str | None = None) -> dict:
    return {"format": FORMAT, "version": VERSION, "repo": repo, "seed": seed, "resamples": resamples,
            "depth": depth, "modes": modes, "embedder": embedder, "datasets": sections}


def _cell(entry: dict | None) -> str:
    if not entry:
        return "—"
    return f"{entry['value']:.3f} ({entry['low']:.2f}–{entry['high']:.2f})"


def markdown(rep: dict) -> str:
    """One table per dataset: modes as rows (baseline last), metrics as columns."""
    out = [f"# codeagent eval: {rep['repo']} (embedder: {rep.get('embedder') or 'none'})", ""]
    for name, section in rep["datasets"].items():
        kinds = ", ".join(f"{k} {n}" for k, n in section["kinds"].items())
        out.append(f"## {name}: {section['cases']} queries ({kinds}); {section['build']['refs']} "
                   f"refs indexed in {section['build']['seconds']:.1f}s")
        out.append("")
        modes = section["modes"]
        has_symbols = any(m in s["metrics"] for s in modes.values() for m in SYMBOL_METRICS)
        columns = list(FILE_METRICS) + (list(SYMBOL_METRICS) if has_symbols else [])
        out.append("| mode | " + " | ".join(columns) + " | p50 ms | p95 ms | errors |")
        out.append("|---" * (len(columns) + 4) + "|")
        ordered = [m for m in modes if m != BASELINE] + ([BASELINE] if BASELINE in modes else [])
        for mode in ordered:
            s = modes[mode]
            lat = s["latency_ms"]
            label = f"{mode} (baseline)" if mode == BASELINE else mode
            out.append(f"| {label} | " + " | ".join(_cell(s["metrics"].get(c)) for c in columns)
                       + f" | {_ms(lat['p50'])} | {_ms(lat['p95'])} | {s['errors']} |")
        for mode, why in section.get("unavailable", {}).items():
            out.append(f"\n{mode}: not scored ({why})")
        out.append("")
    out.append(f"Values are means over queries with 95% bootstrap CIs ({rep['resamples']} resamples, "
               f"seed {rep['seed']}); ties in scores count as their expected value.")
    return "\n".join(out) + "\n"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"
