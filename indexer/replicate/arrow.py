"""A remote on a pyarrow filesystem: s3://, gs://, hdfs://... through `FileSystem.from_uri`.

Object stores publish a key atomically when its upload completes, so keys are written in
place there; on file systems with a real rename (local, subtree) writes go through a
temp key and a move, like the directory backend.
"""

from __future__ import annotations

import secrets

from ...errors import RemoteError

_ATOMIC_PUT = {"s3", "gcs"}


class ArrowBackend:
    writable = True

    def __init__(self, fs, root: str = "", *, label: str | None = None) -> None:
        self.fs = fs
        self.root = root.rstrip("/")
        self.label = label or f"{fs.type_name}:{root}"

    @classmethod
    def from_uri(cls, uri: str) -> "ArrowBackend":
        from pyarrow import fs as pafs

        try:
            filesystem, path = pafs.FileSystem.from_uri(uri)
        except (OSError, ValueError, ImportError) as exc:
            raise RemoteError(f"cannot open remote {uri}: {exc}",
                              hint="check the URL and credentials (pyarrow reads the usual "
                              "AWS_* / GOOGLE_* environment variables)") from exc
        return cls(filesystem, path, label=uri)

    def _path(self, key: str) -> str:
        return f"{self.root}/{key}" if self.root else key

    def read(self, key: str) -> bytes | None:
        try:
            with self.fs.open_input_stream(self._path(key)) as stream:
                return stream.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            if not self.exists(key):
                return None
            raise RemoteError(f"cannot read {key} from {self.label}: {exc}") from exc

    def exists(self, key: str) -> bool:
        from pyarrow import fs as pafs

        try:
            return self.fs.get_file_info(self._path(key)).type == pafs.FileType.File
        except OSError as exc:
            raise RemoteError(f"cannot stat {key} on {self.label}: {exc}") from exc

    def write(self, key: str, data: bytes) -> None:
        path = self._path(key)
        try:
            parent = path.rsplit("/", 1)[0] if "/" in path else ""
            if parent:
                self.fs.create_dir(parent, recursive=True)
            if self.fs.type_name in _ATOMIC_PUT:
                with self.fs.open_output_stream(path) as out:
                    out.write(data)
                return
            tmp = f"{parent + '/' if parent else ''}.tmp-{secrets.token_hex(6)}"
            with self.fs.open_output_stream(tmp) as out:
                out.write(data)
            self.fs.move(tmp, path)
        except OSError as exc:
            raise RemoteError(f"cannot write {key} to {self.label}: {exc}") from exc

    def list(self, prefix: str) -> list[str]:
        from pyarrow import fs as pafs

        selector = pafs.FileSelector(self._path(prefix), recursive=True, allow_not_found=True)
        try:
            infos = self.fs.get_file_info(selector)
        except OSError as exc:
            raise RemoteError(f"cannot list {prefix} on {self.label}: {exc}") from exc
        cut = len(self.root) + 1 if self.root else 0
        keys = (i.path[cut:] for i in infos if i.type == pafs.FileType.File)
        return sorted(k for k in keys if not k.rsplit("/", 1)[-1].startswith("."))

    def close(self) -> None:
        pass
