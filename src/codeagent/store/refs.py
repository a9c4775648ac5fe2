"""Ref pointers: a ref names a manifest; swapping one is the build's commit point."""

from __future__ import annotations

import os
from pathlib import Path

from .. import format as fmt
from ..errors import CodeagentError, InvalidParameter, StoreCorrupt
from ..hashing import is_object_id
from . import faults
from .atomic import TMP_PREFIX, atomic_write


class RefsMixin:
    """Store's ref methods."""

    root: Path

    def _ref_path(self, ref: str) -> Path:
        parts = ref.split("/")
        if not ref or "\x00" in ref or any(p in ("", ".", "..") or p.startswith(TMP_PREFIX) for p in parts):
            raise InvalidParameter(f"invalid ref name: {ref!r}")
        return self.root / fmt.REFS_DIR / Path(*parts)

    def read_ref(self, ref: str) -> str | None:
        try:
            value = self._ref_path(ref).read_text().strip()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        if not is_object_id(value):
            raise StoreCorrupt(f"ref {ref} does not hold a manifest id", hint="run `codeagent verify`")
        return value

    def set_ref(self, ref: str, manifest_id: str) -> None:
        """Swap the ref pointer atomically (always durable: it is the commit point)."""
        if not self.has(manifest_id):
            raise StoreCorrupt(f"refusing to point {ref} at absent manifest {manifest_id[:12]}")
        path = self._ref_path(ref)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.flush_written()  # what the ref will name must be on disk before the commit point
        atomic_write(path, f"{manifest_id}\n".encode(), self.tmp_dir, durable=True)
        faults.step(f"set ref {ref}")

    def delete_ref(self, ref: str) -> None:
        faults.step(f"delete ref {ref}")
        try:
            self._ref_path(ref).unlink()
        except FileNotFoundError:
            pass

    def list_refs(self) -> dict[str, str]:
        base = self.root / fmt.REFS_DIR
        out: dict[str, str] = {}
        if not base.exists():
            return out
        for dirpath, _dirs, files in os.walk(base):
            for name in files:
                if name.startswith(TMP_PREFIX):
                    continue
                ref = (Path(dirpath) / name).relative_to(base).as_posix()
                try:
                    value = self.read_ref(ref)
                except CodeagentError:
                    continue
                if value:
                    out[ref] = value
        return dict(sorted(out.items()))

