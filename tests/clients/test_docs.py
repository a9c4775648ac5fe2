"""Every `codeagent ...` line in the shell blocks (```sh) of docs/install.md and
docs/context.md parses against the real CLI (synopses are in ```text blocks)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from codeagent.cli import COMMANDS, main

DOCS = [Path(__file__).resolve().parents[2] / "docs" / name for name in ("install.md", "context.md")]


def _invocations() -> list[list[str]]:
    found = []
    for doc in DOCS:
        for block in re.findall(r"```(?:sh|bash)\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.S):
            for line in block.splitlines():
                words = shlex.split(line, comments=True)
                if words and words[0] == "codeagent":
                    found.append(words[1:])
    return found


INVOCATIONS = _invocations()


def test_the_pages_have_examples():
    assert {a[0] for a in INVOCATIONS} >= {"install", "doctor", "context"}


@pytest.mark.parametrize("args", INVOCATIONS, ids=[" ".join(a)[:60] for a in INVOCATIONS])
def test_example_parses(args):
    assert args[0] in COMMANDS
    ctx = click.Context(main, info_name="codeagent")
    try:
        main.get_command(ctx, args[0]).make_context(args[0], list(args[1:]), parent=ctx)
    except click.UsageError as exc:
        pytest.fail(f"`codeagent {' '.join(args)}` does not parse: {exc}")
