"""content.is_secret: one compiled pattern, the same answers as matching each glob."""

from __future__ import annotations

import fnmatch
import posixpath

from hypothesis import given
from hypothesis import strategies as st

from codeagent.content import SECRET_PATTERNS, SOURCE_NAMED_LIKE_SECRETS, is_secret
from codeagent.roles import CODE_EXTENSIONS

_pieces = st.sampled_from([".env", "env", ".", "pem", "key", "id_rsa", "credentials", "secrets",
                           ".yml", "json", "a", "/", "KEY", ".NPMRC", "npmrc", "x", "kdbx", "*",
                           "py", "Kt", "go"])


@given(st.lists(_pieces, max_size=6).map("".join))
def test_is_secret_agrees_with_the_globs(path: str) -> None:
    name = posixpath.basename(path).lower()
    source = (any(fnmatch.fnmatchcase(name, p) for p in SOURCE_NAMED_LIKE_SECRETS)
              and name.rsplit(".", 1)[1] in CODE_EXTENSIONS)
    assert is_secret(path) == (any(fnmatch.fnmatchcase(name, p) for p in SECRET_PATTERNS) and not source)


def test_is_secret_examples() -> None:
    assert [p for p in ("a/.env", "prod.env", "k.PEM", "id_rsa.pub", "x/secrets.yml", "env.py",
                        "my.key.txt", "a.env.bak", "src/keys.py") if is_secret(p)] == [
        "a/.env", "prod.env", "k.PEM", "id_rsa.pub", "x/secrets.yml"]


def test_source_files_named_credentials_are_code() -> None:
    """credentials.py / Credentials.kt are source (content detectors still apply); the same
    name in a configuration or data format stays withheld."""
    assert [p for p in ("botocore/credentials.py", "okhttp3/Credentials.kt", "auth/credentials.go",
                        "credentials", "x/credentials.json", "credentials.yml", "credentials.txt",
                        ".env.py") if is_secret(p)] == [
        "credentials", "x/credentials.json", "credentials.yml", "credentials.txt", ".env.py"]
