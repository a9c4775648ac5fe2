"""`codeagent similar SYMBOL`: the symbols and chunks whose vectors are nearest to a symbol's."""

from __future__ import annotations

import json
from pathlib import Path

import click

from . import run_command
from .search import _footer, _index_options, _open, _print_hit


@click.command("similar")
@click.argument("handle", metavar="SYMBOL")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option("--lang", "language", default=None, metavar="L", help="Only this language.")
@click.option("--kind", default=None, metavar="K", help="Only symbols of this kind.")
@click.option("--path", "path_glob", default=None, metavar="GLOB", help="Only files matching this glob.")
@_index_options
def similar_cmd(handle: str, limit: int, language: str | None, kind: str | None,
                path_glob: str | None, repo: Path, store_dir: Path | None, ref: str | None,
                as_json: bool) -> None:
    """Find code similar to SYMBOL (symbol_id, stable id or qualified name) by embedding
    similarity; needs an index built with `--embedder`."""
    from ..query.semantic import find_similar  # numpy, the embedders: +65-140 ms on `codeagent --help`

    def run():
        with _open(repo, store_dir, ref) as view:
            return find_similar(view, handle, limit=limit, language=language, kind=kind,
                                path=path_glob)

    resp = run_command(as_json, run)
    if as_json:
        click.echo(json.dumps(resp.to_dict(), indent=2))
        return
    for n, hit in enumerate(resp.results, 1):
        _print_hit(hit, n)
    click.echo(_footer(resp.metadata, len(resp.results), resp.total_count))
