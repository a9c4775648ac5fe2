"""The house rules, read from the code's AST: one-way imports (query never imports indexer;
mcp_server imports only query and the core), no import circle among product modules, and
the format package as the only home of the assembly's DDL and of the contract's versions."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[2]
# Where each installed package's code lives (pyproject.toml's package-dir).
PACKAGE_DIRS = {"codeagent": "src/codeagent", "codeagent.indexer": "indexer",
                "codeagent.query": "query", "codeagent.mcp_server": "mcp_server",
                "codeagent.eval": "eval"}


def _imports(folder: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (ROOT / folder).rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names: set[str] = set()
        depth = len(path.relative_to(ROOT / folder).parts)  # 1 = top of the package
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0:
                    names.add(node.module or "")
                elif node.level >= depth + 1:  # climbs out of the package into codeagent
                    names.add("codeagent." + (node.module or ""))
        found[str(path.relative_to(ROOT))] = names
    return found


def _offenders(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    return sorted(f"{path}: {name}" for path, names in _imports(folder).items()
                  for name in names if name.startswith(forbidden))


def test_query_never_imports_indexer():
    assert _offenders("query", ("codeagent.indexer", "indexer")) == []


def test_mcp_server_imports_only_query_and_core():
    assert _offenders("mcp_server", ("codeagent.indexer", "indexer", "codeagent.eval")) == []


# What the MCP adapter may import besides codeagent.query, codeagent.model and its own
# modules: (why, the adapter modules that may). Its reads of manifests, the store's build log
# and the repository go through codeagent.query (query.status), the file tools' sandbox is
# query.sandbox.
MCP_SERVER_MAY_IMPORT = {
    "codeagent": ("the version the server reports (__version__)",
                  {"codeagent.mcp_server.app", "codeagent.mcp_server.http"}),
    "codeagent.errors": ("the stable error codes a tool answer maps exceptions to, and the "
                         "adapter's own argument errors", None),
    "codeagent.cli": ("`serve --watch` runs `codeagent watch` as a child (child_command)",
                      {"codeagent.mcp_server.watch"}),
}


def test_mcp_server_imports_only_the_read_side():
    """mcp_server imports codeagent.query, codeagent.model, its own modules, and the few core
    modules named (with a reason, and by whom) in MCP_SERVER_MAY_IMPORT; nothing else of ours."""
    own = ("codeagent.query", "codeagent.model", "codeagent.mcp_server")
    strays = sorted(f"{module}: {target}" for module, targets in _import_graph().items()
                    if module.startswith("codeagent.mcp_server") for target in targets
                    if not (target.startswith(own) or _may_import(module, target)))
    assert strays == []


def test_the_mcp_server_allow_list_has_no_stale_entry():
    """Every exception MCP_SERVER_MAY_IMPORT grants is still taken, by each module it names:
    one the code stopped needing is dropped, so the list stays the adapter's real surface."""
    graph = _import_graph()
    stale = sorted(f"{module} -> {target}" for target, (_, importers) in MCP_SERVER_MAY_IMPORT.items()
                   for module in sorted(importers or {"any adapter module"})
                   if not (target in graph.get(module, ()) if importers else any(
                       target in t for m, t in graph.items() if m.startswith("codeagent.mcp_server"))))
    assert stale == []


def _may_import(module: str, target: str) -> bool:
    _, importers = MCP_SERVER_MAY_IMPORT.get(target, ("", set()))
    return importers is None or module in importers


# The edge of the core, above the libraries: the command modules (cli/) drive every library,
# and the process roles (runtime/) run them: only these may import a side package from inside
# src/codeagent (runtime/ only the read side: the warm reader serves searches).
EDGE = ("codeagent.cli.",)
RUNTIME = "codeagent.runtime"
EDGE_FOLDERS = ("src/codeagent/cli/", "src/codeagent/runtime/")
SIDE_PACKAGES = ("codeagent.indexer", "codeagent.query", "codeagent.mcp_server", "codeagent.eval")


def test_core_imports_no_side_package():
    absolute = [o for o in _offenders("src/codeagent", SIDE_PACKAGES)  # inside functions too
                if not o.startswith(EDGE_FOLDERS)]
    assert absolute == []
    strays = sorted(f"{module}: {target}" for module, targets in _import_graph().items()
                    if _in_core(module) and not module.startswith((*EDGE, RUNTIME))
                    for target in targets if target.startswith(SIDE_PACKAGES))
    assert strays == []


def _in_core(module: str) -> bool:
    return not any(module == p or module.startswith(p + ".") for p in PACKAGE_DIRS if p != "codeagent")


# What a process role may import besides the core: (why, the runtime modules that may).
RUNTIME_MAY_IMPORT = {
    "codeagent.query": ("the warm reader keeps an IndexFollower per ref and searches it",
                        {"codeagent.runtime.warm"}),
}


def test_runtime_imports_the_core_and_only_what_it_names():
    """runtime/ (daemon, warm reader, watch builder, pools) runs the CLI in its processes and
    names what it preloads as strings: of the side packages it imports only those
    RUNTIME_MAY_IMPORT grants, by the modules named there (never the build side: indexer
    imports the pools and the watch builder, and the two must not form a circle)."""
    graph = _import_graph()
    strays = sorted(f"{module}: {target}" for module, targets in graph.items()
                    if module.startswith(RUNTIME) for target in targets
                    if target.startswith(SIDE_PACKAGES) and not any(
                        target.startswith(p) and module in who for p, (_, who) in RUNTIME_MAY_IMPORT.items()))
    assert strays == []


def test_the_read_side_imports_no_process_role():
    """query/ and mcp_server/ import neither runtime/ nor a command module: the read side is
    a library that the warm reader, the daemon's children and `serve` run, not one that
    starts processes (the hook's warm-reader asker is passed in by the command)."""
    strays = sorted(f"{module}: {target}" for module, targets in _import_graph().items()
                    if module.startswith(("codeagent.query", "codeagent.mcp_server"))
                    for target in targets if target.startswith((RUNTIME, *EDGE)))
    assert strays == []


def test_only_the_command_table_names_the_command_modules():
    """A command module (codeagent.cli.<group>) is imported by the command table, by name, and
    by its sibling command modules; no library imports one (a library would then pull in click
    and its command's neighbours)."""
    strays = sorted(f"{module}: {target}" for module, targets in _import_graph().items()
                    if not module.startswith(EDGE) for target in targets if target.startswith(EDGE))
    assert strays == []


def _modules() -> dict[str, Path]:
    """Dotted name -> file of every product module."""
    found = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join([package, *parts])
            found.setdefault(name, path)  # src/codeagent/indexer does not exist: no clash
    return found


def _import_graph() -> dict[str, set[str]]:
    """module -> product modules it imports, at module level or inside functions alike
    (`from pkg import x` names the submodule pkg.x when there is one, else pkg); imports under
    `if TYPE_CHECKING:` are left out."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                       for n in ast.walk(block)}
        for node in ast.walk(tree):
            if id(node) in typing_only:  # read by type checkers only: no edge at run time
                continue
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets.update(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                               for a in node.names)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out




def test_the_import_graph_sees_the_imports_it_must():
    graph = _import_graph()
    assert "codeagent.format.shard" in graph["codeagent.indexer.shard"]
    assert "codeagent.indexer.assemble.graph" in graph["codeagent.indexer.assemble.pipeline"]
    assert "codeagent.format" in graph["codeagent.format.manifest"]  # `from .. import format`
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_no_import_circle_among_product_modules():
    assert [sorted(c) for c in _circles(_import_graph())] == []


def _product_files() -> list[Path]:
    return sorted(p for folder in PACKAGE_DIRS.values() for p in (ROOT / folder).rglob("*.py"))


_DDL = re.compile(r"CREATE\s+(OR\s+REPLACE\s+)?(TABLE\s+\w+\s*\(|VIEW\b)", re.IGNORECASE)


def test_only_the_format_package_declares_tables_and_versions():
    """The assembly's persisted tables and views (DDL with a column list, or a view) and the
    contract's *_VERSION constants live in codeagent/format/ and nowhere else."""
    home = ROOT / "src/codeagent/format"
    strays = []
    for path in _product_files():
        if home in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _DDL.search(node.value):
                strays.append(f"{path.relative_to(ROOT)}:{node.lineno}: DDL")
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AnnAssign) else [])
            strays += [f"{path.relative_to(ROOT)}:{node.lineno}: {t.id}" for t in targets
                       if isinstance(t, ast.Name) and t.id.endswith("_VERSION")]
    assert strays == []


def test_every_command_of_the_table_loads():
    from codeagent.cli import COMMANDS, main

    ctx = click.Context(main)
    loaded = {name: main.get_command(ctx, name) for name in COMMANDS}
    assert {n: type(c).__name__ for n, c in loaded.items() if not isinstance(c, click.Command)} == {}
    assert {n: c.name for n, c in loaded.items() if c.name != n} == {}


def test_every_preload_entry_loads():
    """The daemon's PRELOAD names modules (and "module:function"s) that exist."""
    import importlib

    from codeagent.runtime.daemon.server import PRELOAD

    for name in PRELOAD:
        module, _, function = name.partition(":")
        loaded = importlib.import_module(module)
        assert not function or callable(getattr(loaded, function, None)), name


def test_every_package_folder_is_installed():
    """pyproject.toml lists its packages explicitly: a new folder missing there would work
    in an editable install and be absent from a wheel."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    listed = set(re.findall(r'"(codeagent[\w.]*)"', text.split("packages = [", 1)[1].split("]", 1)[0]))
    folders = {name for name, path in _modules().items() if path.name == "__init__.py"}
    assert folders - listed == set()


MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60


def test_modules_and_functions_stay_small():
    """No product module over 500 lines, no function (decorators included) over 60."""
    large = set()
    for path in _product_files():
        rel = str(path.relative_to(ROOT))
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_MODULE_LINES:
            large.add(rel)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if node.end_lineno - start + 1 > MAX_FUNCTION_LINES:
                    large.add(f"{rel}:{node.name}")
    assert large == set()


def _import_blocks(tree: ast.AST):
    """Runs of consecutive import statements inside functions, as lists of nodes."""
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            for body in (getattr(node, f, None) for f in ("body", "orelse", "finalbody")):
                if not isinstance(body, list):
                    continue
                run: list[ast.stmt] = []
                for stmt in [*body, None]:
                    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                        run.append(stmt)
                    elif run:
                        yield run
                        run = []


def _is_product(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or (node.module or "").startswith("codeagent")
    return any(a.name.startswith("codeagent") for a in node.names)


def test_deferred_imports_say_why():
    """An import of our own code inside a function, instead of at the top of its module, is
    there for start-up time (what it would cost, measured) or an optional extra: the first
    line of each such run of imports says why in a comment."""
    silent = []
    for path in _product_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        for run in _import_blocks(ast.parse("\n".join(lines))):
            if not any(_is_product(n) for n in run):
                continue
            comment = lines[run[0].lineno - 1].partition("#")[2]
            if not re.sub(r"noqa\S*|type: ignore\S*", "", comment).strip():
                silent.append(f"{path.relative_to(ROOT)}:{run[0].lineno}")
    assert silent == []
