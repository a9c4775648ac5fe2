"""A remote in one uncompressed tar file (a CI artifact): the remote layout as members.

Shards are Parquet (already compressed), so the tar is not compressed: members are read
in place by offset. Writes append members; a key written twice resolves to its last
member, so re-pointing a ref appends a few bytes. `codeagent bundle` writes a new bundle
to a temp file and renames it into place.
"""

from __future__ import annotations

import io
import tarfile
import threading
import time
from pathlib import Path

from ...errors import RemoteError


class BundleBackend:
    def __init__(self, path: Path, *, create: bool = False) -> None:
        self.path = path
        self.label = str(path)
        self.writable = create or path.exists()
        self._lock = threading.Lock()
        self._tar: tarfile.TarFile | None = None
        self._index: dict[str, tuple[int, int]] = {}
        if path.exists():
            self._load_index()
        elif not create:
            raise RemoteError(f"no bundle at {path}", hint="make one with `codeagent bundle -o FILE`")

    def _load_index(self) -> None:
        try:
            with tarfile.open(self.path, "r:") as tar:
                for m in tar.getmembers():
                    if m.isfile():
                        self._index[m.name] = (m.offset_data, m.size)
        except (tarfile.TarError, OSError) as exc:
            raise RemoteError(f"{self.path} is not a readable tar bundle: {exc}",
                              hint="download the bundle again") from exc

    def read(self, key: str) -> bytes | None:
        with self._lock:
            where = self._index.get(key)
            if where is None:
                return None
            if self._tar is not None:
                self._tar.fileobj.flush()
        offset, size = where
        try:
            with open(self.path, "rb") as fh:
                fh.seek(offset)
                return fh.read(size)
        except OSError as exc:
            raise RemoteError(f"cannot read {key} from bundle {self.path}: {exc.strerror}") from exc

    def exists(self, key: str) -> bool:
        return key in self._index

    def write(self, key: str, data: bytes) -> None:
        if not self.writable:
            raise RemoteError(f"bundle {self.path} is read-only")
        info = tarfile.TarInfo(key)
        info.size = len(data)
        info.mtime = int(time.time())
        info.mode = 0o644
        with self._lock:
            try:
                if self._tar is None:
                    self._tar = tarfile.open(self.path, "a:" if self.path.exists() else "w:",
                                             format=tarfile.PAX_FORMAT)
                self._tar.addfile(info, io.BytesIO(data))
            except (tarfile.TarError, OSError) as exc:
                raise RemoteError(f"cannot append {key} to bundle {self.path}: {exc}") from exc
            padded = -(-len(data) // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
            self._index[key] = (self._tar.offset - padded, len(data))

    def list(self, prefix: str) -> list[str]:
        return sorted(k for k in self._index if k.startswith(prefix.rstrip("/") + "/"))

    def close(self) -> None:
        with self._lock:
            if self._tar is not None:
                self._tar.close()
                self._tar = None
