"""A progress bar on a terminal, none when piped."""

from __future__ import annotations

import os
import subprocess
import sys


def test_progress_bar_only_on_a_terminal(git_repo):
    git_repo.write_many({f"m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(30)})
    master, slave = os.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "codeagent", "build", str(git_repo.path)],
                              stdout=subprocess.PIPE, stderr=slave, timeout=300)
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
    terminal = b"".join(chunks).decode()
    assert proc.returncode == 0
    assert "parse" in terminal and "30/30" in terminal and "[#" in terminal
    assert "assemble" in terminal
    piped = subprocess.run([sys.executable, "-m", "codeagent", "build", str(git_repo.path)],
                           capture_output=True, text=True, timeout=300)
    assert piped.stderr == ""
