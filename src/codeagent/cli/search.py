"""CLI commands of the read side: search, show, callers, callees, refs.

Thin: parse options, open the index, call one query function, print. `--json` prints the
same data the MCP tools return.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from . import run_command
from ..errors import NotFound

# query.search.MODES, named here: importing the read side (~300 ms) is not for `--help`
# (tests/core/test_cli_help.py holds the copies equal).
MODE_CHOICES = ["auto", "symbol", "text", "regex", "path", "semantic", "hybrid"]


def _index_options(fn):
    fn = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(fn)
    fn = click.option("--store", "store_dir", type=click.Path(path_type=Path), default=None,
                      help="Store directory (default: REPO/.codeagent).")(fn)
    fn = click.option("--ref", "ref", default=None, metavar="REV",
                      help="Branch, tag, ref name or manifest id (default: the work-tree index, "
                           "else the current branch's).")(fn)
    fn = click.option("--repo", "repo", type=click.Path(path_type=Path), default=Path("."),
                      show_default=True, help="Repository whose index to query.")(fn)
    return fn


def _open(repo: Path, store_dir: Path | None, ref: str | None):
    from ..query.index import open_index  # the read side loads when a command runs, not for `--help`

    return open_index(repo, store_dir, ref)


def _footer(meta, shown: int, total: int | str, extra: str = "") -> str:
    ref = meta.ref or "manifest"
    return (f"-- {shown} of {total} {extra}· {ref} @ {meta.manifest_id[:12]} "
            f"({meta.freshness}, {meta.completeness})")


def _print_hit(hit, n: int) -> None:
    span = f"{hit.path}:{hit.line_start}" + (f"-{hit.line_end}" if hit.line_end != hit.line_start else "")
    label = hit.qualified_name or hit.name
    handle = f"  [{hit.symbol_id}]" if hit.symbol_id else ""
    click.echo(f"{n:>2}. {click.style(span, fg='cyan')}  {hit.kind} {click.style(label, bold=True)}"
               f"  ({hit.result_type}, {hit.score:.3f}){handle}")
    for line in hit.snippet.splitlines()[:4]:
        click.echo(f"      {line}")


def _print_skipped(resp) -> None:
    """The files the answer did not search (the index holds no text of them), named."""
    if resp.skipped_count:
        named = ", ".join(f"{f.path} ({f.reason})" for f in resp.skipped)
        more = f" and {resp.skipped_count - len(resp.skipped)} more" if resp.skipped_count > len(resp.skipped) else ""
        click.echo(f"-- not searched: {resp.skipped_count} file{'s' if resp.skipped_count != 1 else ''} "
                   f"the index holds no text of: {named}{more}")


def _print_files(resp) -> None:
    for n, f in enumerate(resp.files, 1):
        click.echo(f"{n:>2}. {click.style(f.path, fg='cyan', bold=True)}  ({f.role}, {f.score:.3f}; "
                   f"{', '.join(f.why)}; {f.hits} hit{'s' if f.hits != 1 else ''})")
        for hit in f.spans:
            click.echo(f"      {hit.line_start}-{hit.line_end} {hit.kind} {hit.qualified_name or hit.name}")
            for line in hit.snippet.splitlines()[:2]:
                click.echo(f"        {line}")
    click.echo(_footer(resp.metadata, len(resp.files), resp.total_count,
                       f"files · intent {resp.query_intent} "))


def _search(repo: Path, store_dir: Path | None, ref: str | None, req):
    """The answer of the daemon's warm reader for this repository when there is one, else of
    an index opened here."""
    from ..query.search import search  # the read side loads when a command runs, not for `--help`
    from ..runtime.warm import search_warm

    answer = search_warm(repo, store_dir, ref, req)
    if answer is not None:
        return answer
    with _open(repo, store_dir, ref) as view:
        return search(view, req)


@click.command("search")
@click.argument("query")
@click.option("--mode", type=click.Choice(MODE_CHOICES), default="auto", show_default=True,
              help="auto: steered by the query's intent; symbol: names; text: BM25; regex: RE2 "
                   "over file contents; path: file paths; semantic/hybrid: vectors (needs an "
                   "index built with --embedder).")
@click.option("--lang", "language", default=None, metavar="L", help="Only this language.")
@click.option("--kind", default=None, metavar="K", help="Only symbols of this kind (function, class, fn...).")
@click.option("--path", "path_glob", default=None, metavar="GLOB",
              help="Only files matching this glob (`*.py`, `src/**/*.ts`).")
@click.option("--ext", "extension", default=None, metavar="EXT", help="Only these extensions (py,pyi).")
@click.option("--role", "roles", default=None, metavar="ROLES",
              help="Only files of these roles, comma-separated: source, test, mock, fixture, "
                   "benchmark, example, vendored, generated, docs, translated_docs, config. "
                   "Without it every file is searched; for a task or an error in words, source "
                   "ranks above the other roles unless the query names them.")
@click.option("--group", "group", type=click.Choice(["files", "symbols"]), default=None,
              help="files: answer ranked files (at most --limit), each with its best 1-3 spans "
                   "and how it matched; symbols: the functions and methods to look at, ranked.")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option("--case-sensitive/--ignore-case", default=True, show_default=True,
              help="Regex mode only.")
@click.option("--semantic-weight", type=click.FloatRange(0, 1), default=None, metavar="W",
              help="auto/hybrid: share of the vector list in the fusion (0 lexical only, 1 vectors only).")
@_index_options
def search_cmd(query: str, mode: str, language: str | None, kind: str | None, path_glob: str | None,
               extension: str | None, roles: str | None, group: str | None, limit: int,
               case_sensitive: bool, semantic_weight: float | None,
               repo: Path, store_dir: Path | None, ref: str | None, as_json: bool) -> None:
    """Search the index for QUERY: symbols, full text, regex or paths.

    In auto mode a task or an error written in words is answered in the order of a file
    ranking (whole-file BM25 over path, symbols and body, the chunk and symbol hits each file
    holds, files the query names, and the file's role); an identifier or a path is answered
    by its definitions and files first."""
    from ..query.search import SearchRequest  # the read side loads when a command runs, not for `--help`

    req = SearchRequest(query=query, mode=mode, language=language, kind=kind, path=path_glob,
                        extension=extension, limit=limit, case_sensitive=case_sensitive,
                        semantic_weight=semantic_weight,
                        roles=tuple(r.strip() for r in (roles or "").split(",") if r.strip()),
                        group_by={"files": "file", "symbols": "symbol"}.get(group or ""))

    resp = run_command(as_json, lambda: _search(repo, store_dir, ref, req))
    if as_json:
        click.echo(json.dumps(resp.to_dict(), indent=2))
        return
    if not resp.results:
        click.echo(f"no results for {query!r} (mode {mode}, intent {resp.query_intent})")
    if resp.files is not None:
        _print_files(resp)
    else:
        for n, hit in enumerate(resp.results, 1):
            _print_hit(hit, n)
        click.echo(_footer(resp.metadata, len(resp.results), resp.total_count,
                           f"· intent {resp.query_intent} "))
    _print_skipped(resp)


@click.command("show")
@click.argument("handle", metavar="SYMBOL")
@click.option("--no-source", is_flag=True, help="Print metadata only.")
@_index_options
def show_cmd(handle: str, no_source: bool, repo: Path, store_dir: Path | None, ref: str | None,
             as_json: bool) -> None:
    """Show one symbol (by symbol_id, stable id or qualified name), or a file's outline
    when SYMBOL is an indexed path."""
    from ..query.navigate import file_outline, get_symbol  # the read side: not for `--help`

    def run():
        with _open(repo, store_dir, ref) as view:
            try:
                return get_symbol(view, handle)
            except NotFound:
                if "/" in handle or "." in handle:
                    try:
                        return file_outline(view, handle)
                    except NotFound:
                        pass
                raise

    data = run_command(as_json, run)
    if as_json:
        click.echo(json.dumps(data.to_dict(), indent=2))
        return
    if hasattr(data, "symbols"):
        click.echo(f"{data.path} ({data.language}, {data.line_count} lines)")
        for s in data.symbols:
            click.echo(f"  {s.line_start:>5}-{s.line_end:<5} {s.kind:<12} {s.fq_name}  [{s.symbol_id}]")
        return
    s = data.symbol
    click.echo(click.style(f"{s.kind} {s.fq_name}", bold=True) + f"  [{s.symbol_id}]")
    click.echo(f"  {s.path}:{s.line_start}-{s.line_end}  {s.language}  stable id {s.symbol_stable_id}")
    if s.signature:
        click.echo(f"  signature: {s.signature}")
    click.echo(f"  referenced {data.reference_count} times; {len(data.children)} members")
    for span in data.spans if not no_source else []:
        tag = "primary" if span.is_primary else "also"
        click.echo(f"--- {span.path}:{span.line_start}-{span.line_end} ({tag})")
        click.echo(span.text)


def _graph_command(name: str, fn_name: str, doc: str):
    @click.command(name, help=doc)
    @click.argument("handle", metavar="SYMBOL")
    @click.option("--depth", type=click.IntRange(1, 10), default=1, show_default=True,
                  help="Follow edges this many hops.")
    @click.option("--limit", type=click.IntRange(1, 10000), default=100, show_default=True,
                  help="Node budget.")
    @click.option("--no-tests", is_flag=True,
                  help="Leave out symbols in test, mock and fixture files (their file role).")
    @_index_options
    def command(handle: str, depth: int, limit: int, no_tests: bool, repo: Path,
                store_dir: Path | None, ref: str | None, as_json: bool) -> None:
        from ..query import graph  # the read side loads when a command runs, not for `--help`

        def run():
            with _open(repo, store_dir, ref) as view:
                direction, kinds = graph.PRESETS[fn_name]
                return graph.traverse(view, handle, direction=direction, edge_types=kinds,
                                      depth=depth, max_nodes=limit, include_tests=not no_tests)

        resp = run_command(as_json, run)
        if as_json:
            click.echo(json.dumps(resp.to_dict(), indent=2))
            return
        root = resp.root
        click.echo(click.style(f"{name} of {root.kind} {root.fq_name}", bold=True)
                   + f"  ({root.path}:{root.line_start})")
        for node, e in graph.tree_order(resp):
            where = f"{e.path}:{e.line}" if e else f"{node.path}:{node.line_start}"
            conf = f" ({e.confidence})" if e else ""
            indent = "  " * node.depth
            click.echo(f"{indent}{node.kind:<10} {node.qualified_name}  at {where}{conf}"
                       + (f"  [{node.symbol_id}]" if node.symbol_id else ""))
        shown = len(resp.nodes)
        click.echo(_footer(resp.metadata, shown, f"more than {shown}" if resp.truncated else shown,
                           "(truncated: raise --limit) " if resp.truncated else ""))

    return command


callers_cmd = _graph_command("callers", "callers", "Symbols that call SYMBOL (exact edges first).")
callees_cmd = _graph_command("callees", "callees", "Symbols that SYMBOL calls.")
refs_cmd = _graph_command("refs", "references",
                          "Everything that uses SYMBOL: calls, imports, inheritance, type references.")
