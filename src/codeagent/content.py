"""What kind of content a file holds, decided the same way by the index and the server."""

from __future__ import annotations

import fnmatch
import posixpath
import re

# Basename patterns (case-insensitive) of files whose contents are never indexed or served.
SECRET_PATTERNS = (
    ".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.ppk", "credentials", "credentials.*",
    ".netrc", ".git-credentials", ".pypirc", ".npmrc", ".htpasswd", "secrets.yml", "secrets.yaml",
    "secrets.json", "*.kdbx",
)


_SECRET = re.compile("|".join(fnmatch.translate(p) for p in SECRET_PATTERNS))


def is_secret(rel: str) -> bool:
    """Does this path name a file whose contents we withhold (keys, .env, credentials)?"""
    return _SECRET.match(posixpath.basename(rel).lower()) is not None


def looks_binary(data: bytes) -> bool:
    """A NUL byte in the first 8 KiB, as git decides."""
    return b"\x00" in data[:8192]
