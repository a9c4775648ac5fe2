"""A remote in a local (or mounted network) directory: atomic writes, listable."""

from __future__ import annotations

import os
from pathlib import Path

from ...errors import RemoteError
from ...store import atomic_write

_TMP = ".tmp"


class DirectoryBackend:
    """Keys are files under `root`; writes go through a temp file in `root/.tmp` and a rename."""

    writable = True

    def __init__(self, root: Path, *, create: bool = False) -> None:
        self.root = root
        self.label = str(root)
        if create:
            try:
                (root / _TMP).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise RemoteError(f"cannot create remote directory {root}: {exc.strerror}") from exc
        elif not root.is_dir():
            raise RemoteError(f"no remote at {root} (not a directory)",
                              hint="check the path, or publish to it first with `codeagent publish --to`")

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*key.split("/"))

    def read(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as exc:
            raise RemoteError(f"cannot read {key} from {self.root}: {exc.strerror}") from exc

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def write(self, key: str, data: bytes) -> None:
        path = self._path(key)
        tmp_dir = self.root / _TMP
        try:
            tmp_dir.mkdir(parents=True, exist_ok=True)
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RemoteError(f"cannot write {key} to {self.root}: {exc.strerror}") from exc
        atomic_write(path, data, tmp_dir, durable=True)

    def list(self, prefix: str) -> list[str]:
        base = self._path(prefix)
        out = []
        for dirpath, dirs, files in os.walk(base):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            rel = Path(dirpath).relative_to(self.root).as_posix()
            out.extend(f"{rel}/{name}" for name in files if not name.startswith("."))
        return sorted(out)

    def close(self) -> None:
        pass
