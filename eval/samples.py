"""Sample repositories every machine can make offline: a standard-library package as one
commit. Fixed author and dates make the commit id depend on the files alone, so a dataset
recorded against it replays on any machine with the same Python version."""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

from ..errors import NotFound

_ENV = {"GIT_AUTHOR_NAME": "codeagent eval", "GIT_AUTHOR_EMAIL": "eval@codeagent.invalid",
        "GIT_COMMITTER_NAME": "codeagent eval", "GIT_COMMITTER_EMAIL": "eval@codeagent.invalid",
        "GIT_AUTHOR_DATE": "@0 +0000", "GIT_COMMITTER_DATE": "@0 +0000"}


def stdlib_package_repo(package: str, dest: Path) -> Path:
    """A git repository at `dest` holding the .py files of stdlib `package` under `package/`."""
    src = Path(sysconfig.get_paths()["stdlib"]) / package
    if not src.is_dir():
        raise NotFound(f"no standard-library package {package!r} at {src}")
    if dest.exists():
        shutil.rmtree(dest)
    for dirpath, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                target = dest / package / Path(dirpath).relative_to(src) / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(Path(dirpath) / name, target)
    env = {**os.environ, **_ENV}
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", f"stdlib {package}")):
        subprocess.run(["git", "-C", str(dest), "-c", "commit.gpgsign=false", *args], env=env,
                       check=True, capture_output=True)
    return dest
