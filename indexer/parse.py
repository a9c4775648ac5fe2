"""Turn one file's bytes into a shard (pure apart from the caller's store write)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import format as fmt
from ..content import looks_binary, secret_in
from ..errors import ExtractTimeout


@dataclass(frozen=True)
class ParseResult:
    status: str
    reason: str
    shard: bytes | None  # Parquet bytes when indexed
    # The same shard as Arrow IPC stream bytes, so a build can assemble it without decoding
    # Parquet (shard.table_from_ipc reads it).
    table: bytes | None = field(default=None, compare=False, repr=False)


def classify(data: bytes, max_bytes: int = fmt.DEFAULT_MAX_FILE_BYTES) -> str:
    """The skip reason for these bytes, or "" when they can be parsed."""
    if len(data) > max_bytes:
        return fmt.SKIP_TOO_LARGE
    if looks_binary(data):
        return fmt.SKIP_BINARY
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return fmt.SKIP_INVALID_UTF8
    if len(data) > 65536 and len(data) / (data.count(b"\n") + 1) > fmt.MINIFIED_LINE_BYTES:
        return fmt.SKIP_MINIFIED
    return ""


def parse_bytes(data: bytes, language: str, blob: str,
                max_bytes: int = fmt.DEFAULT_MAX_FILE_BYTES, path: str = "") -> ParseResult:
    """Parse one file's bytes; `path` (any path the content has) picks the secret detectors."""
    reason = classify(data, max_bytes)
    if not reason and secret_in(data, path):
        reason = fmt.SKIP_SECRET
    if reason:
        return ParseResult(fmt.STATUS_SKIPPED, reason, None)
    from .extract import extract  # with pyarrow, +~120 ms: a no-op build parses nothing
    from ..format.shard import encode_table
    from .shard import shard_table, table_to_ipc

    try:
        extraction = extract(data, language)
    except ExtractTimeout:
        return ParseResult(fmt.STATUS_SKIPPED, fmt.SKIP_PARSER_TIMEOUT, None)
    table = shard_table(data, language, blob, extraction)
    return ParseResult(fmt.STATUS_INDEXED, "", encode_table(table), table_to_ipc(table))


def parse_job(args: tuple[bytes, str, str, int, str]) -> ParseResult:
    """Picklable entry point for worker processes."""
    return parse_bytes(*args)


def warm() -> None:
    """Parse a line of each language with rules: grammars loaded, queries compiled, the shard
    writer used once. A resident process (codeagent.runtime.daemon) pays this once, not per command."""
    from .extract.treesitter import RULE_MODULES  # tree-sitter, +~60 ms: only a resident process warms

    for language in (*RULE_MODULES, "markdown", "text"):
        parse_bytes(b"a = b(c)\n", language, "0" * 64)
