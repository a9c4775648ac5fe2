"""Tree-sitter extraction entry point (placeholder until per-language rules land).

Returns None when the language has no grammar, so the caller falls back to text chunks.
"""

from __future__ import annotations

from ...types import Extraction


def extract_tree(source: bytes, language: str) -> Extraction | None:
    return None
