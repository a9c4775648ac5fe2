"""A fixed set of answers from a built index, for comparing two versions of the store's format.

    python bench/store_answers.py REPO OUT [--resident]

Runs `codeagent search/show/callers/callees/refs ... --json` (the per-file outline is `show
PATH`) on REPO with this interpreter's codeagent and writes their answers to OUT, one per
line, each without its `metadata` (the manifest id and versions differ between formats by
design). Without --resident each command is a fresh process: the SQL path. With --resident
they run in this process on views that keep the resident arrays (as the MCP server's and the
daemon's long-lived views do), so the memory-mapped files answer. Compare two runs with `cmp`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ENV  # noqa: E402

QUERIES = [
    ["search", "parse json document"], ["search", "JSONDecoder"], ["search", "raise ValueError invalid"],
    ["search", "--mode", "symbol", "scanstring"], ["search", "--mode", "symbol", "JSONDecodr"],
    ["search", "--mode", "symbol", "decode"], ["search", "--mode", "text", "object_pairs_hook"],
    ["search", "--mode", "regex", r"def\s+loads"], ["search", "--mode", "path", "json/"],
    ["search", "http client connection timeout"], ["search", "--mode", "symbol", "HTTPConnection.request"],
    ["show", "json.loads"], ["show", "json/__init__.py"], ["show", "http/client.py"],
    ["show", "json.decoder.JSONDecoder"],
    ["callers", "json.loads"], ["callers", "json.decoder.JSONDecoder.decode", "--depth", "2"],
    ["callees", "json.decoder.JSONDecoder.raw_decode"], ["callees", "http.client.HTTPConnection.request"],
    ["refs", "json.dumps"], ["refs", "posixpath.join", "--limit", "40"],
]


def _clean(text: str) -> str:
    data = json.loads(text)
    if isinstance(data, dict):
        data.pop("metadata", None)
    return json.dumps(data, sort_keys=True)


def fresh(repo: Path, args: list[str]) -> str:
    out = subprocess.run([sys.executable, "-m", "codeagent", *args, "--repo", str(repo), "--json"],
                         capture_output=True, text=True, env=ENV)
    return _clean(out.stdout) if out.stdout.strip() else f"exit {out.returncode}: {out.stderr.strip()}"


def resident(repo: Path, args: list[str]) -> str:
    """The command run in this process on a long-lived view (keep_text_in_memory)."""
    from click.testing import CliRunner

    from codeagent import cli
    from codeagent.cli import search as commands
    from codeagent.query import index

    def open_long_lived(*a, **k):
        view = index.open_index(*a, **k)
        view.keep_text_in_memory = True
        return view

    commands._open = lambda repo_, store_dir, ref: open_long_lived(repo_, store_dir, ref)
    result = CliRunner().invoke(cli.main, [*args, "--repo", str(repo), "--json"])
    return _clean(result.stdout) if result.stdout.strip() else f"exit {result.exit_code}: {result.output}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--resident", action="store_true", help="in-process long-lived views (resident arrays)")
    args = ap.parse_args()
    answer = resident if args.resident else fresh
    with open(args.out, "w") as fh:
        for q in QUERIES:
            fh.write(" ".join(q) + "\t" + answer(args.repo, q) + "\n")


if __name__ == "__main__":
    main()
