"""The HTML report: one self-contained page (inline SVG and CSS, nothing fetched), a bar chart
per mode with CI whiskers and the whole-file baseline marked on every bar."""

from __future__ import annotations

from html import escape

from .metrics import FILE_METRICS, SYMBOL_METRICS
from .retrievers import BASELINE

COLORS = {"symbol": "#4e79a7", "text": "#f28e2b", "semantic": "#59a14f", "hybrid": "#b07aa1",
          "auto": "#e15759", BASELINE: "#9c9c9c"}
LABEL_W, BAR_W, VALUE_W, ROW_H = 80, 260, 56, 24

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1200px;color:#222;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.3rem}
.charts{display:flex;flex-wrap:wrap;gap:1.2rem}
.chart{border:1px solid #e3e3e3;border-radius:8px;padding:.6rem .8rem;background:#fcfcfc}
.chart h3{margin:.1rem 0 .3rem;font-size:1rem}.chart p{margin:.2rem 0 0;color:#666;font-size:12px}
table{border-collapse:collapse;font-size:12px;margin-top:1rem;display:block;overflow-x:auto}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}
td:first-child,th:first-child{text-align:left}.legend{color:#666;font-size:12px}
"""


def _bar_chart(mode: str, summary: dict, baseline: dict | None, metrics: list[str]) -> str:
    color = COLORS.get(mode, "#76b7b2")
    height = ROW_H * len(metrics) + 26
    width = LABEL_W + BAR_W + VALUE_W
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="{escape(mode)} metrics">']
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = LABEL_W + tick * BAR_W
        parts.append(f'<line x1="{x:.1f}" y1="4" x2="{x:.1f}" y2="{height - 20}" stroke="#eee"/>'
                     f'<text x="{x:.1f}" y="{height - 6}" font-size="10" text-anchor="middle" fill="#999">{tick:g}</text>')
    for row, metric in enumerate(metrics):
        y = 6 + row * ROW_H
        entry = summary["metrics"].get(metric)
        parts.append(f'<text x="{LABEL_W - 6}" y="{y + 14}" font-size="12" text-anchor="end" fill="#333">{metric}</text>')
        if entry is None:
            parts.append(f'<text x="{LABEL_W + 4}" y="{y + 14}" font-size="11" fill="#aaa">not measured</text>')
            continue
        value, low, high = entry["value"], entry["low"], entry["high"]
        parts.append(f'<rect x="{LABEL_W}" y="{y + 3}" width="{value * BAR_W:.1f}" height="{ROW_H - 8}" '
                     f'rx="2" fill="{color}"><title>{metric} {value:.3f} (95% CI {low:.3f}–{high:.3f})</title></rect>')
        cy = y + ROW_H / 2 - 1
        parts.append(f'<line x1="{LABEL_W + low * BAR_W:.1f}" y1="{cy}" x2="{LABEL_W + high * BAR_W:.1f}" '
                     f'y2="{cy}" stroke="#222" stroke-width="1.2"/>')
        for end in (low, high):
            x = LABEL_W + end * BAR_W
            parts.append(f'<line x1="{x:.1f}" y1="{cy - 4}" x2="{x:.1f}" y2="{cy + 4}" stroke="#222" stroke-width="1.2"/>')
        base = (baseline or {}).get("metrics", {}).get(metric) if mode != BASELINE else None
        if base is not None:
            x = LABEL_W + base["value"] * BAR_W
            parts.append(f'<line x1="{x:.1f}" y1="{y + 1}" x2="{x:.1f}" y2="{y + ROW_H - 3}" stroke="#000" '
                         f'stroke-dasharray="3,2" stroke-width="1.5"><title>baseline {base["value"]:.3f}</title></line>')
        parts.append(f'<text x="{LABEL_W + BAR_W + 6}" y="{y + 14}" font-size="12" fill="#333">{value:.3f}</text>')
    parts.append("</svg>")
    return "".join(parts)


OVERVIEW = ("acc@1", "acc@10", "mrr@10", "recall@10", "ndcg@10")


def _overview_chart(modes: dict) -> str:
    """Grouped vertical bars: one group per headline metric, one bar per mode."""
    metrics = [m for m in OVERVIEW if any(m in s["metrics"] for s in modes.values())]
    bar, gap, plot_h = 14, 18, 160
    group_w = bar * len(modes) + gap
    width, height = 40 + group_w * len(metrics) + 150, plot_h + 44
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="all modes side by side">']
    for tick in (0, 0.5, 1.0):
        y = 10 + plot_h * (1 - tick)
        parts.append(f'<line x1="34" y1="{y}" x2="{40 + group_w * len(metrics)}" y2="{y}" stroke="#eee"/>'
                     f'<text x="30" y="{y + 4}" font-size="10" text-anchor="end" fill="#999">{tick:g}</text>')
    for g, metric in enumerate(metrics):
        x0 = 40 + g * group_w
        for b, (mode, summary) in enumerate(modes.items()):
            entry = summary["metrics"].get(metric)
            if entry is None:
                continue
            h = entry["value"] * plot_h
            parts.append(f'<rect x="{x0 + b * bar}" y="{10 + plot_h - h:.1f}" width="{bar - 2}" height="{h:.1f}" '
                         f'fill="{COLORS.get(mode, "#76b7b2")}"><title>{escape(mode)} {metric} '
                         f'{entry["value"]:.3f}</title></rect>')
        parts.append(f'<text x="{x0 + (group_w - gap) / 2}" y="{plot_h + 26}" font-size="11" '
                     f'text-anchor="middle" fill="#333">{metric}</text>')
    for n, mode in enumerate(modes):
        y = 14 + n * 18
        lx = 50 + group_w * len(metrics)
        parts.append(f'<rect x="{lx}" y="{y}" width="12" height="12" fill="{COLORS.get(mode, "#76b7b2")}"/>'
                     f'<text x="{lx + 18}" y="{y + 10}" font-size="12" fill="#333">{escape(mode)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _table(modes: dict, metrics: list[str]) -> str:
    head = "".join(f"<th>{m}</th>" for m in metrics)
    rows = []
    for mode, s in modes.items():
        cells = "".join(
            f"<td>{e['value']:.3f} <small>({e['low']:.2f}–{e['high']:.2f})</small></td>" if (e := s["metrics"].get(m))
            else "<td>—</td>" for m in metrics)
        lat = s["latency_ms"]
        p50 = "—" if lat["p50"] is None else f"{lat['p50']:.1f}"
        p95 = "—" if lat["p95"] is None else f"{lat['p95']:.1f}"
        rows.append(f"<tr><td>{escape(mode)}</td>{cells}<td>{p50}</td><td>{p95}</td><td>{s['errors']}</td></tr>")
    return (f"<table><tr><th>mode</th>{head}<th>p50 ms</th><th>p95 ms</th><th>errors</th></tr>"
            f"{''.join(rows)}</table>")


def _section(name: str, section: dict) -> str:
    modes = section["modes"]
    baseline = modes.get(BASELINE)
    has_symbols = any(m in s["metrics"] for s in modes.values() for m in SYMBOL_METRICS)
    metrics = list(FILE_METRICS) + (list(SYMBOL_METRICS) if has_symbols else [])
    charts = []
    for mode, summary in modes.items():
        lat = summary["latency_ms"]
        latency = (f"latency p50 {lat['p50']:.1f} ms · p95 {lat['p95']:.1f} ms"
                   if lat["p50"] is not None else "no latency")
        charts.append(f'<div class="chart"><h3 style="color:{COLORS.get(mode, "#333")}">{escape(mode)}</h3>'
                      f'{_bar_chart(mode, summary, baseline, metrics)}'
                      f'<p>{summary["n"]} queries · {latency} · {summary["errors"]} errors</p></div>')
    missing = "".join(f"<p class=legend>{escape(m)}: not scored ({escape(why)})</p>"
                      for m, why in section.get("unavailable", {}).items())
    kinds = ", ".join(f"{k} {n}" for k, n in section["kinds"].items())
    return (f"<h2>{escape(name)}: {section['cases']} queries ({escape(kinds)})</h2>"
            f'<div class="chart" style="display:inline-block">{_overview_chart(modes)}</div>'
            f'<div class="charts" style="margin-top:1rem">{"".join(charts)}</div>{missing}'
            f"{_table(modes, metrics)}")


def html_report(rep: dict) -> str:
    """The whole page as a string."""
    sections = "".join(_section(name, s) for name, s in rep["datasets"].items())
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f"<title>codeagent eval: {escape(rep['repo'])}</title><style>{CSS}</style></head><body>"
            f"<h1>codeagent eval: {escape(rep['repo'])}</h1>"
            f'<p class="legend">Bars: mean over queries; whiskers: 95% bootstrap CI '
            f"({rep['resamples']} resamples, seed {rep['seed']}); dashed mark: the whole-file "
            f"BM25 baseline on the same queries. Ties in scores count as their expected value."
            f"</p>{sections}</body></html>\n")
