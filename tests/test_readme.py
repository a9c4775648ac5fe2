"""Every `codeagent ...` command in the shell blocks (```sh) of README.md and of the docs site
(docs/**/*.md) parses against the real CLI, the two set-up commands are the ones CI runs, and
the site builds with `mkdocs build --strict` (no broken link, no page left out of the nav).
Synopses go in ```text blocks."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from codeagent.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = {"README.md": README} | {
    str(page.relative_to(ROOT)): page.read_text(encoding="utf-8")
    for page in sorted((ROOT / "docs").rglob("*.md"))}


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"```(?:sh|bash|console)\n(.*?)```", text, flags=re.S)


def _invocations(text: str) -> list[list[str]]:
    found = []
    for block in _code_blocks(text):
        for raw in block.replace("\\\n", " ").splitlines():
            line = raw.split("#", 1)[0] if raw.lstrip().startswith("#") else raw
            for part in re.split(r"&&|\|\||;|\|", line):
                try:
                    words = shlex.split(part, comments=True)  # `codeagent build  # why` is an example too
                except ValueError:
                    continue
                for i, w in enumerate(words):
                    if w == "codeagent" or w.endswith("/codeagent"):
                        found.append(words[i + 1:])
                        break
    return found


INVOCATIONS = [(page, args) for page, text in PAGES.items() for args in _invocations(text)]


def test_readme_has_examples():
    readme = [args for page, args in INVOCATIONS if page == "README.md"]
    assert len(readme) >= 5
    assert {args[0] for args in readme if args} >= {"build", "search"}


def test_the_docs_have_examples():
    """The CLI pages carry examples too: a glob that found no page would check nothing."""
    pages = {page for page, _ in INVOCATIONS if page.startswith("docs/cli/")}
    assert len(pages) >= 5, pages


@pytest.mark.parametrize("page,args", INVOCATIONS,
                         ids=[f"{page}: {' '.join(args)}"[:80] for page, args in INVOCATIONS])
def test_example_parses(page, args):
    if not args or args[0] in ("-h", "--help", "--version"):
        return
    assert args[0] in COMMANDS, f"{page} uses unknown command {args[0]!r}"
    ctx = click.Context(main, info_name="codeagent")
    cmd = main.get_command(ctx, args[0])
    assert cmd is not None, f"command {args[0]} is not available"
    try:
        cmd.make_context(args[0], list(args[1:]), parent=ctx)
    except click.exceptions.Exit:
        pass
    except click.UsageError as exc:
        pytest.fail(f"{page} example `codeagent {' '.join(args)}` does not parse: {exc}")


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1].strip()
    assert ci in README, "the last line of .ci/run must be the README's test command"
    assert "pytest" in ci


def test_the_docs_site_builds_strictly(tmp_path: Path):
    """`mkdocs build --strict`: a broken link or anchor, or a page not in mkdocs.yml's nav,
    fails it (the `docs` extra installs mkdocs; .ci/run installs it)."""
    try:
        import mkdocs  # noqa: F401 (only whether it is installed)
    except ImportError:
        pytest.skip("mkdocs is not installed: pip install -e '.[docs]'")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                           "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (tmp_path / "site" / "cli" / "build" / "index.html").is_file()
    shutil.rmtree(tmp_path / "site")
