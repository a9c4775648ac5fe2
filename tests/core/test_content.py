"""content.is_secret: one compiled pattern, the same answers as matching each glob."""

from __future__ import annotations

import fnmatch
import posixpath

from hypothesis import given
from hypothesis import strategies as st

from codeagent.content import SECRET_PATTERNS, is_secret

_pieces = st.sampled_from([".env", "env", ".", "pem", "key", "id_rsa", "credentials", "secrets",
                           ".yml", "json", "a", "/", "KEY", ".NPMRC", "npmrc", "x", "kdbx", "*"])


@given(st.lists(_pieces, max_size=6).map("".join))
def test_is_secret_agrees_with_the_globs(path: str) -> None:
    name = posixpath.basename(path).lower()
    assert is_secret(path) == any(fnmatch.fnmatchcase(name, p) for p in SECRET_PATTERNS)


def test_is_secret_examples() -> None:
    assert [p for p in ("a/.env", "prod.env", "k.PEM", "id_rsa.pub", "x/secrets.yml", "env.py",
                        "my.key.txt", "a.env.bak", "src/keys.py") if is_secret(p)] == [
        "a/.env", "prod.env", "k.PEM", "id_rsa.pub", "x/secrets.yml"]
