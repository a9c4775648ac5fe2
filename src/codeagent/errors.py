"""Every error codeagent raises on purpose; each message says what to do next.

`code` is the stable machine-readable name shared by the CLI (`--json`) and the MCP server.
`exit_code` is what the CLI exits with (documented in the README and docs/cli/index.md).
"""

from __future__ import annotations


class CodeagentError(Exception):
    code = "error"
    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "hint": self.hint}


class InvalidParameter(CodeagentError):
    code = "invalid_parameter"
    exit_code = 2


class NotARepository(CodeagentError):
    code = "not_a_repository"
    exit_code = 3


class RefNotFound(CodeagentError):
    code = "not_found"
    exit_code = 4


class NotFound(CodeagentError):
    code = "not_found"
    exit_code = 4


class IndexMissing(CodeagentError):
    code = "index_missing"
    exit_code = 5


class IndexIncompatible(CodeagentError):
    code = "index_incompatible"
    exit_code = 6


class StoreCorrupt(CodeagentError):
    """An object does not re-hash to its name, or a manifest names an absent object."""

    code = "store_corrupt"
    exit_code = 7


class StoreLocked(CodeagentError):
    code = "store_locked"
    exit_code = 8


class StoreWriteFailed(CodeagentError):
    """The disk refused a write (ENOSPC, EIO...); the previous index is untouched."""

    code = "store_write_failed"
    exit_code = 9


class PathEscape(CodeagentError):
    code = "path_escape"
    exit_code = 10


class BinaryFile(CodeagentError):
    code = "binary_file"
    exit_code = 11


class TooLarge(CodeagentError):
    code = "too_large"
    exit_code = 12


class Timeout(CodeagentError):
    code = "timeout"
    exit_code = 13


class RemoteError(CodeagentError):
    code = "remote_error"
    exit_code = 14


class Withheld(CodeagentError):
    """A file that looks like a secret (keys, .env, credentials): never served."""

    code = "withheld"
    exit_code = 15


class OutOfMemory(CodeagentError):
    """A build needed more memory than its budget (`build --memory`) gives it."""

    code = "out_of_memory"
    exit_code = 16


class QualityRegression(CodeagentError):
    """`codeagent eval --compare`: a retrieval metric fell below the old report's CI."""

    code = "quality_regression"
    exit_code = 20


class ArgumentError(InvalidParameter):
    """An MCP tool's argument it cannot take, named so the model can correct it
    (`error.arguments` in the answer)."""

    def __init__(self, argument: str, expected: str, detail: str | None = None,
                 hint: str | None = None) -> None:
        super().__init__(f"invalid argument `{argument}`: {detail or 'expected ' + expected}",
                         hint=hint or f"pass `{argument}` as {expected}")
        self.arguments = [argument]


class InternalError(CodeagentError):
    """What the MCP server answers for an unexpected exception: details only in its log."""

    code = "internal_error"


# Signals between modules: raised and caught inside codeagent, never shown to a user as they
# are (no code, no exit code of their own).

class ExtractTimeout(Exception):
    """Raised by an extractor that ran past its time budget (the file becomes a
    `parser_timeout` skip)."""


class AssemblyVanished(Exception):
    """The assembled directory is gone (a newer build pruned it) or not there yet: a reader
    opens the ref's newer manifest instead."""


class CopyOnWriteUnsupported(Exception):
    """The overlay's graph step ran a statement its copy-on-write views cannot carry: the
    build consolidates instead."""


class ModeUnavailable(Exception):
    """`codeagent eval`: this index cannot answer the mode (no vectors for semantic, no query
    engine...); the mode is reported as not scored."""

class ClientConfigInvalid(CodeagentError):
    """`codeagent install`/`doctor`: an MCP client's settings file cannot be read or edited
    safely (not JSON/TOML/YAML, or the servers key holds something else); it is left as is."""

    code = "client_config_invalid"
    exit_code = 31


class ClientCheckFailed(CodeagentError):
    """`codeagent doctor`: the configured server command does not start, does not answer MCP,
    or speaks a protocol version the SDK does not."""

    code = "client_check_failed"
    exit_code = 32


class IndexStale(CodeagentError):
    """`codeagent doctor`: the server answers, but its index is older than the work tree."""

    code = "index_stale"
    exit_code = 33
