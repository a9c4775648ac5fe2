"""A progress bar on a terminal, none when piped."""

from __future__ import annotations

import os
import re
import subprocess
import sys


def _screen(raw: str) -> list[str]:
    """The lines a terminal shows for `raw`: each carriage return rewrites its line from the
    left, leaving what a shorter text does not cover."""
    lines = []
    for line in raw.replace("\r\n", "\n").split("\n"):
        shown = ""
        for part in line.split("\r"):
            shown = part + shown[len(part):]
        lines.append(shown.rstrip())  # padding shows as blanks
    return [line for line in lines if line]


def _on_a_terminal(args: list[str]) -> tuple[int, str]:
    master, slave = os.openpty()
    try:
        proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=slave, timeout=300)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    return proc.returncode, b"".join(chunks).decode()


def test_progress_bar_only_on_a_terminal(git_repo):
    git_repo.write_many({f"m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(30)})
    git_repo.write_many({f"copy{i}.py": "def same():\n    return 0\n" for i in range(3)})
    code, terminal = _on_a_terminal([sys.executable, "-m", "codeagent", "build", str(git_repo.path)])
    assert code == 0
    shown = _screen(terminal)
    # every file counts, copies of one content too; each stage ends full, on a line of its own
    assert len(shown) == 2, shown
    assert re.fullmatch(r"parse +\[#{30}\] 33/33", shown[0]), shown
    steps = re.fullmatch(r"assemble +\[#{30}\] (\d+)/(\d+)", shown[1])
    assert steps and steps[1] == steps[2] and int(steps[2]) > 2, shown
    assert "assemble  [---" in terminal  # and it moved before it was full
    piped = subprocess.run([sys.executable, "-m", "codeagent", "build", str(git_repo.path)],
                           capture_output=True, text=True, timeout=300)
    assert piped.stderr == ""


def test_a_shorter_line_is_padded_over_a_longer_one(capsys, monkeypatch):
    from codeagent.cli.build import TerminalProgress

    monkeypatch.setattr("time.monotonic", iter(range(0, 1000, 10)).__next__)  # no throttling
    progress = TerminalProgress(True)
    progress("parse", 1234, 5678)
    progress("assemble", 0, 3)
    progress("assemble", 3, 3)
    progress("walk", 0, 0)
    assert _screen(capsys.readouterr().err) == [
        "assemble  [##############################] 3/3", "walk      ..."]
