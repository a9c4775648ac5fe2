"""GitRepo: a real git repository in a temp dir, driven through gitpython."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import git

from codeagent.sources import RACY_NS


# Root reads any file mode: run under this prefix, it lacks the capabilities that let it and
# reads like anyone else (how the tests make an unreadable file as root, as CI runs).
NO_DAC_OVERRIDE = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]

LONG = os.environ.get("CODEAGENT_LONG") == "1"  # the long tier (README, "Reliability")


def past_racy_window() -> None:
    """Wait until files written before now are older than a build's racy window
    (sources.RACY_NS): the next build keeps their stats in its cache (a build started within
    it hashes them again next time instead, and writes no stat cache for them)."""
    time.sleep(RACY_NS / 1e9 + 0.02)


def examples(n: int, long: int | None = None) -> int:
    """Hypothesis examples for a property whose every example builds real indexes: `n` in the
    fast tier, which CI runs in its 10 minutes; with CODEAGENT_LONG=1 `long`, else five times
    as many."""
    return (long or n * 5) if LONG else n


@dataclass
class GitRepo:
    path: Path
    repo: git.Repo

    @classmethod
    def create(cls, path: Path, branch: str = "main") -> "GitRepo":
        path.mkdir(parents=True, exist_ok=True)
        repo = git.Repo.init(path, initial_branch=branch)
        with repo.config_writer() as cw:
            cw.set_value("user", "name", "Test")
            cw.set_value("user", "email", "test@example.com")
            cw.set_value("commit", "gpgsign", "false")
        return cls(path, repo)

    def write(self, rel: str, content: str | bytes) -> Path:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            p.write_text(content, encoding="utf-8")
        else:
            p.write_bytes(content)
        return p

    def write_many(self, files: dict[str, str | bytes]) -> None:
        for rel, content in files.items():
            self.write(rel, content)

    def remove(self, rel: str) -> None:
        (self.path / rel).unlink()

    def commit(self, message: str = "change") -> str:
        self.repo.git.add("-A")
        self.repo.git.commit("-m", message, "--allow-empty")
        return self.repo.head.commit.hexsha

    def checkout(self, branch: str, create: bool = False) -> None:
        if create:
            self.repo.git.checkout("-b", branch)
        else:
            self.repo.git.checkout(branch)

    def move(self, src: str, dst: str) -> None:
        (self.path / dst).parent.mkdir(parents=True, exist_ok=True)
        self.repo.git.mv(src, dst)
