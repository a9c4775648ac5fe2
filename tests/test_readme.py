"""Every `codeagent ...` command in the README's shell blocks (```sh) parses against the real
CLI, and the two set-up commands are the ones CI runs. Synopses go in ```text blocks."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from codeagent.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"```(?:sh|bash|console)\n(.*?)```", text, flags=re.S)


def _invocations() -> list[list[str]]:
    found = []
    for block in _code_blocks(README):
        for raw in block.replace("\\\n", " ").splitlines():
            line = raw.split("#", 1)[0] if raw.lstrip().startswith("#") else raw
            for part in re.split(r"&&|\|\||;|\|", line):
                try:
                    words = shlex.split(part)
                except ValueError:
                    continue
                for i, w in enumerate(words):
                    if w == "codeagent" or w.endswith("/codeagent"):
                        found.append(words[i + 1:])
                        break
    return found


INVOCATIONS = _invocations()


def test_readme_has_examples():
    assert len(INVOCATIONS) >= 5
    assert {args[0] for args in INVOCATIONS if args} >= {"build", "search"}


@pytest.mark.parametrize("args", INVOCATIONS, ids=[" ".join(a)[:60] for a in INVOCATIONS])
def test_example_parses(args):
    if not args or args[0] in ("-h", "--help", "--version"):
        return
    assert args[0] in COMMANDS, f"README uses unknown command {args[0]!r}"
    ctx = click.Context(main, info_name="codeagent")
    cmd = main.get_command(ctx, args[0])
    assert cmd is not None, f"command {args[0]} is not available"
    try:
        cmd.make_context(args[0], list(args[1:]), parent=ctx)
    except click.exceptions.Exit:
        pass
    except click.UsageError as exc:
        pytest.fail(f"README example `codeagent {' '.join(args)}` does not parse: {exc}")


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1].strip()
    assert ci in README, "the last line of .ci/run must be the README's test command"
    assert "pytest" in ci
