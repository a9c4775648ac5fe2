"""`codeagent --help` and `codeagent CMD --help` stay cheap: they load the command modules (for
their options and short help) but none of the libraries a command drives; the few choices and
defaults a command module names itself, rather than import the read or build side for them,
are held equal to the library's."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

# What a help text must not load: the storage and parsing libraries, and our read side,
# store and formats (their import is most of a command's start-up).
HEAVY = ("duckdb", "pyarrow", "numpy", "json5", "blake3", "tree_sitter", "mcp", "tomlkit", "ruamel")
OURS = ("codeagent.query", "codeagent.store", "codeagent.format", "codeagent.sources",
        "codeagent.mcp_server", "codeagent.eval", "codeagent.indexer.build", "codeagent.indexer.fleet")

_EVERY_HELP = """
import contextlib, io, json, sys
import click
from codeagent.cli import COMMANDS, main
ctx = click.Context(main)
paths = [[]] + [[n] for n in COMMANDS]
for name in COMMANDS:
    cmd = main.get_command(ctx, name)
    if isinstance(cmd, click.Group):
        paths += [[name, sub] for sub in cmd.list_commands(ctx)]
texts = {}
for path in paths:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = main.main([*path, "--help"], prog_name="codeagent", standalone_mode=False)
    texts[" ".join(path)] = (code, out.getvalue())
print(json.dumps({"texts": texts, "modules": sorted(sys.modules)}))
"""


def test_every_help_text_loads_no_library_a_command_drives():
    proc = subprocess.run([sys.executable, "-c", _EVERY_HELP], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    texts = out["texts"]
    assert {"", "search", "impact", "org", "org search", "org build", "daemon start"} <= set(texts)
    assert {p: code for p, (code, text) in texts.items() if code != 0 or "Usage: codeagent" not in text} == {}
    assert "search  " in texts[""][1] and "impact  " in texts[""][1]  # the short help of each command
    assert "[default: 2; 1<=x<=6]" in texts["impact"][1]
    loaded = [m for m in out["modules"] if m.split(".")[0] in HEAVY or m.startswith(OURS)]
    assert loaded == []


def test_the_choices_a_command_module_names_are_the_librarys():
    from codeagent.cli import impact as impact_cli, org, org_search, search as search_cli
    from codeagent.indexer.fleet.engines import ENGINES

    # the package exports functions of these names: the modules, by name
    search, impact, query_org = (importlib.import_module(f"codeagent.query.{m}") for m in ("search", "impact", "org"))

    assert tuple(search_cli.MODE_CHOICES) == search.MODES
    assert set(org_search.MODES) <= set(search.MODES)
    assert org_search.FUSIONS == query_org.FUSIONS
    assert org.ENGINES == ENGINES
    assert (impact_cli.DEFAULT_DEPTH, impact_cli.MAX_DEPTH) == (impact.DEFAULT_DEPTH, impact.MAX_DEPTH)
