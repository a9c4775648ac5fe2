"""A repository at a glance: how many files, directories and bytes it has, and its languages
(from the index's manifest when there is one, else by file extension)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..format.manifest import load_manifest
from .sandbox import Entry
from .index import IndexView

MAX_LANGUAGES = 20


@dataclass(frozen=True)
class LanguageCount:
    language: str
    files: int
    bytes: int


@dataclass(frozen=True)
class Overview:
    total_files: int = 0
    total_directories: int = 0
    total_bytes: int = 0
    languages: list[LanguageCount] = field(default_factory=list)


def overview(entries: Iterable[Entry], view: IndexView | None) -> Overview:
    """Counts over the visible `entries` (the caller walks the tree); languages from `view`'s
    manifest, or by extension without an index, biggest first."""
    files = dirs = size = 0
    by_ext: dict[str, list[int]] = {}
    for e in entries:
        if e.type == "directory":
            dirs += 1
            continue
        files += 1
        size += e.size or 0
        stat = by_ext.setdefault(posixpath.splitext(e.name)[1].lower() or e.name, [0, 0])
        stat[0] += 1
        stat[1] += e.size or 0
    counts = _indexed_languages(view) if view is not None else None
    langs = [LanguageCount(k, *v) for k, v in (counts if counts is not None else by_ext).items()]
    langs.sort(key=lambda s: (-s.bytes, s.language))
    return Overview(files, dirs, size, langs[:MAX_LANGUAGES])


def _indexed_languages(view: IndexView) -> dict[str, list[int]] | None:
    try:
        manifest = load_manifest(view.store, view.manifest_id)
    except Exception:  # an unreadable manifest: fall back to extensions
        return None
    stats: dict[str, list[int]] = {}
    for f in manifest.files:
        if f.indexed:
            s = stats.setdefault(f.language, [0, 0])
            s[0] += 1
            s[1] += f.size
    return stats
