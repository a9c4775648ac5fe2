"""Assembled artifacts of a manifest: where they live, and the sizes and hashes that say
whether they are still what was written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from .. import format as fmt
from ..errors import InvalidParameter
from ..hashing import hash_stream, is_object_id


class AssemblyMixin:
    """Store's assembled-artifact methods."""

    root: Path

    def assembled_dir(self, manifest_id: str) -> Path:
        if not is_object_id(manifest_id):
            raise InvalidParameter(f"not a manifest id: {manifest_id!r}")
        return self.root / fmt.ASSEMBLED_DIR / manifest_id

    def is_assembled(self, manifest_id: str) -> bool:
        """The manifest's query artifacts exist, complete, in this codeagent's layout."""
        try:
            marker = (self.assembled_dir(manifest_id) / fmt.COMPLETE_MARKER).read_text()
        except OSError:
            return False
        return marker == complete_marker(manifest_id)

    def assembly_base(self, manifest_id: str) -> str | None:
        """The manifest whose database an overlay assembly reads with its own (format/overlay.py);
        None for a full assembly (or none), "" for an unreadable overlay marker."""
        try:
            marker = json.loads((self.assembled_dir(manifest_id) / fmt.OVERLAY_MARKER).read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return ""
        return str(marker.get("base", "")) if isinstance(marker, dict) else ""

    def assembly_problems(self, manifest_id: str, *, deep: bool = True, trust_mtime: bool = False,
                          which: Callable[[str], bool] | None = None) -> list[str]:
        """Why a manifest's assembled files cannot be trusted ([] when intact): each file is
        checked against the size (and, when `deep`, the blake3) recorded in SUMS. With
        `trust_mtime`, a file whose mtime is still the one recorded is not re-hashed (this
        catches every rewrite, not bit rot: `verify` and readers re-hash). `which`: check
        only the files it accepts (by name)."""
        directory = self.assembled_dir(manifest_id)
        try:
            sums = json.loads((directory / fmt.ASSEMBLY_SUMS).read_bytes())
        except (OSError, ValueError):
            return [f"{fmt.ASSEMBLY_SUMS} is missing or unreadable"]
        problems = []
        for name, (size, digest, *mtime) in sorted(sums.items()):
            if which is not None and not which(name):
                continue
            try:
                st = (directory / name).stat()
                actual = st.st_size
                if actual != size:
                    problems.append(f"{name} has {actual} bytes, {size} were written")
                elif deep and not (trust_mtime and mtime == [st.st_mtime_ns]):
                    with open(directory / name, "rb") as fh:
                        if hash_stream(fh) != digest:
                            problems.append(f"{name} does not match the hash recorded when it was written")
            except OSError:
                problems.append(f"{name} is missing")
        return problems


def write_assembly_sums(directory: Path, known: dict[str, tuple[int, int, str]] | None = None) -> None:
    """Record size, blake3 and mtime of every file of an assembly being built (before
    COMPLETE). `known`: name -> (size, mtime_ns, blake3) of files copied from a verified
    assembly; a file whose size and mtime are still those is not hashed again."""
    sums = {}
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.name not in (fmt.ASSEMBLY_SUMS, fmt.COMPLETE_MARKER):
            st = path.stat()
            size, mtime, digest = (known or {}).get(path.name, (-1, -1, ""))
            if (size, mtime) != (st.st_size, st.st_mtime_ns):
                with open(path, "rb") as fh:
                    digest = hash_stream(fh)
            sums[path.name] = [st.st_size, digest, st.st_mtime_ns]
    (directory / fmt.ASSEMBLY_SUMS).write_text(json.dumps(sums, sort_keys=True))


def complete_marker(manifest_id: str) -> str:
    """Content of an assembled directory's COMPLETE file (names the assembly and graph
    layouts: a bump of either makes the next build assemble again)."""
    return f"{manifest_id} assembly {fmt.ASSEMBLY_VERSION} graph {fmt.GRAPH_VERSION}\n"


