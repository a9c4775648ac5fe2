"""The benchmark corpus every machine has: the Python standard library's .py files in a git repo.

`stdlib_repo(dest)` copies them (site-packages, __pycache__ left out) into DEST, commits,
and returns DEST. Reused when DEST already holds the commit. Shared by every bench script.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from collections.abc import Iterator
from pathlib import Path

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# For the `codeagent` processes a bench starts: byte-code caching on, as on a user's machine
# (some sandboxes export PYTHONDONTWRITEBYTECODE), and no daemon unless a row says so.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "CODEAGENT_DAEMON": "0"}


def stdlib_files() -> list[Path]:
    out = []
    for dirpath, dirs, files in os.walk(STDLIB):
        dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "__pycache__"))
        out.extend(Path(dirpath) / f for f in sorted(files) if f.endswith(".py"))
    return out


def stdlib_sources() -> Iterator[tuple[Path, bytes]]:
    """(path, bytes) of every stdlib .py file that decodes as UTF-8 (what the build parses)."""
    for path in stdlib_files():
        data = path.read_bytes()
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        yield path, data


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def stdlib_repo(dest: Path) -> Path:
    """A git repository at DEST holding the stdlib .py files as one commit on `main`."""
    if (dest / ".git").exists() and git(dest, "rev-list", "--count", "HEAD").strip() == "1":
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for src in stdlib_files():
        target = dest / src.relative_to(STDLIB)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "add", "-A")
    git(dest, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", "stdlib")
    return dest


def median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def percentile(values: list[float], p: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    k = min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))
    return s[k]


def print_table(headers: list[str], rows: list[list[object]]) -> None:
    cells = [headers] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for n, r in enumerate(cells):
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))
        if n == 0:
            print("-|-".join("-" * w for w in widths))
