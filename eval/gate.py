"""The CI gate: compare a report with an older one; a metric that falls below the old
value's confidence interval is a regression (exit non-zero). Latency is reported, not gated:
timings on shared CI machines are too noisy to fail a build on."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidParameter
from .metrics import QUALITY_METRICS
from .report import FORMAT

TOLERANCE = 1e-6


@dataclass(frozen=True)
class Delta:
    dataset: str
    mode: str
    metric: str
    old: float
    new: float
    old_low: float
    old_high: float

    @property
    def change(self) -> float:
        return self.new - self.old

    @property
    def regression(self) -> bool:
        return self.new < self.old_low - TOLERANCE

    def to_dict(self) -> dict:
        return {"dataset": self.dataset, "mode": self.mode, "metric": self.metric,
                "old": self.old, "new": self.new, "change": round(self.change, 4),
                "old_ci": [self.old_low, self.old_high], "regression": self.regression}


@dataclass
class Comparison:
    deltas: list[Delta]
    problems: list[str]  # things that fail the gate besides metric drops (a mode vanished...)
    notes: list[str]

    @property
    def failed(self) -> bool:
        return bool(self.problems) or any(d.regression for d in self.deltas)


def check_report(obj: object, what: str) -> dict:
    if not isinstance(obj, dict) or obj.get("format") != FORMAT or not isinstance(obj.get("datasets"), dict):
        raise InvalidParameter(f"{what} is not a codeagent eval report (JSON from `codeagent eval --out`)")
    return obj


def compare(new: dict, old: dict) -> Comparison:
    """Every (dataset, mode, metric) present in both reports, plus what vanished."""
    deltas, problems, notes = [], [], []
    requested = set(new.get("modes") or [])
    for name, old_section in old["datasets"].items():
        new_section = new["datasets"].get(name)
        if new_section is None:
            notes.append(f"dataset {name}: in the old report only, not compared")
            continue
        if new_section.get("fingerprint") != old_section.get("fingerprint"):
            notes.append(f"dataset {name}: the cases differ from the old report's; deltas mix "
                         "ranking changes with dataset changes")
        for mode, old_mode in old_section["modes"].items():
            new_mode = new_section["modes"].get(mode)
            if new_mode is None:
                if requested and mode not in requested:
                    notes.append(f"{name}/{mode}: not requested this run, not compared")
                else:
                    why = new_section.get("unavailable", {}).get(mode, "not in the new report")
                    problems.append(f"{name}/{mode}: scored before, missing now ({why})")
                continue
            for metric in QUALITY_METRICS:
                o, n = old_mode["metrics"].get(metric), new_mode["metrics"].get(metric)
                if o is None or n is None:
                    continue
                deltas.append(Delta(name, mode, metric, o["value"], n["value"], o["low"], o["high"]))
    return Comparison(deltas, problems, notes)


def format_comparison(cmp: Comparison) -> str:
    lines = ["## Compared with the old report", "",
             "| dataset | mode | metric | old (95% CI) | new | change | |", "|---|---|---|---|---|---|---|"]
    for d in cmp.deltas:
        flag = "REGRESSION" if d.regression else ("up" if d.change > TOLERANCE else "")
        lines.append(f"| {d.dataset} | {d.mode} | {d.metric} | {d.old:.3f} ({d.old_low:.2f}–{d.old_high:.2f}) "
                     f"| {d.new:.3f} | {d.change:+.3f} | {flag} |")
    lines.append("")
    lines.extend(f"- {p}" for p in cmp.problems)
    lines.extend(f"- note: {n}" for n in cmp.notes)
    worst = [d for d in cmp.deltas if d.regression]
    if cmp.failed:
        lines.append(f"gate: FAILED ({len(worst)} metrics fell below the old CI, {len(cmp.problems)} other problems)")
    else:
        lines.append(f"gate: passed ({len(cmp.deltas)} metrics compared, none below the old CI)")
    return "\n".join(lines) + "\n"
