"""What kind of content a file holds, decided the same way by the index and the server."""

from __future__ import annotations

import fnmatch
import posixpath
import re

from .roles import is_code_path

# Basename patterns (case-insensitive) of files whose contents are never indexed or served.
SECRET_PATTERNS = (
    ".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.ppk", "credentials", "credentials.*",
    ".netrc", ".git-credentials", ".pypirc", ".npmrc", ".htpasswd", "secrets.yml", "secrets.yaml",
    "secrets.json", "secrets.toml", "*.kdbx",
)


# Patterns that also name ordinary source files (botocore's credentials.py, OkHttp's
# Credentials.kt): a match in a programming language's extension is source code, which the
# content detectors still read like any other file.
SOURCE_NAMED_LIKE_SECRETS = ("credentials.*",)

_SECRET = re.compile("|".join(fnmatch.translate(p) for p in SECRET_PATTERNS))
_SOURCE_LIKE = re.compile("|".join(fnmatch.translate(p) for p in SOURCE_NAMED_LIKE_SECRETS))


def is_secret(rel: str) -> bool:
    """Does this path name a file whose contents we withhold (keys, .env, credentials)?"""
    name = posixpath.basename(rel).lower()
    if _SECRET.match(name) is None:
        return False
    return not (_SOURCE_LIKE.match(name) and is_code_path(name))


def looks_binary(data: bytes) -> bool:
    """A NUL byte in the first 8 KiB, as git decides."""
    return b"\x00" in data[:8192]


# Content detection is Yelp's detect-secrets (its plugins' patterns and its false-positive
# filters), in two tiers to keep a build's cost small: its detectors are regexes run in
# Python, ~1 s per MB all together. Every text file is searched for private keys (plain
# strings) and GitHub tokens, which cost ~2% of a stdlib build; configuration and data files,
# where credentials are kept, and files without a suffix (deploy_key) get the wider set.
SECRET_DETECTORS_EVERYWHERE = ("PrivateKeyDetector", "GitHubTokenDetector")
SECRET_DETECTORS_IN_CONFIG = SECRET_DETECTORS_EVERYWHERE + (
    "AWSKeyDetector", "AzureStorageKeyDetector", "BasicAuthDetector", "DiscordBotTokenDetector",
    "GitLabTokenDetector", "JwtTokenDetector", "KeywordDetector", "MailchimpDetector",
    "NpmDetector", "OpenAIDetector", "PypiTokenDetector", "SendGridDetector", "SlackDetector",
    "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
)
CONFIG_SUFFIXES = frozenset({
    "", ".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".config", ".properties",
    ".env", ".xml", ".tfvars", ".tfstate", ".txt", ".pub", ".secret", ".secrets", ".token",
    ".plist", ".npmrc", ".cnf",
})
CONFIG_SCAN_MAX_BYTES = 256 << 10  # larger configuration files get the everywhere tier only


def _detector_tier(path: str, size: int) -> tuple[str, ...]:
    suffix = posixpath.splitext(posixpath.basename(path))[1].lower()
    if suffix in CONFIG_SUFFIXES and size <= CONFIG_SCAN_MAX_BYTES:
        return SECRET_DETECTORS_IN_CONFIG
    return SECRET_DETECTORS_EVERYWHERE


_Prefilter = tuple[tuple[bytes, ...], tuple[re.Pattern, ...]]
_prefilters: dict[tuple[str, ...], _Prefilter] = {}


def secret_patterns() -> dict:
    """The detectors' own patterns, per tier, as JSON data: {"everywhere"|"config": {"plain":
    [str], "regex": [[pattern, flags]]}}. A line none of them matches cannot be reported, so
    detect-secrets itself runs only on the lines they match. (Importing it costs 0.2-0.3 s, so
    a build keeps these in its store's cache and imports it only for a candidate line.)"""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins import keyword

    classes = {c.__name__: c for c in get_mapping_from_secret_type_to_class().values()}
    out = {}
    for tier, names in (("everywhere", SECRET_DETECTORS_EVERYWHERE), ("config", SECRET_DETECTORS_IN_CONFIG)):
        plain, regexes = [], []
        for name in names:
            for rx in getattr(classes[name](), "denylist", ()):
                if re.escape(rx.pattern) == rx.pattern:
                    plain.append(rx.pattern)
                else:
                    regexes.append([rx.pattern, int(rx.flags & ~re.UNICODE)])
        if "KeywordDetector" in names:
            regexes.append([keyword.DENYLIST_REGEX, int(re.IGNORECASE)])
        out[tier] = {"plain": plain, "regex": regexes}
    return out


def use_secret_patterns(patterns: dict) -> None:
    """Install `secret_patterns()` output (e.g. read from a cache) for this process."""
    for tier, names in (("everywhere", SECRET_DETECTORS_EVERYWHERE), ("config", SECRET_DETECTORS_IN_CONFIG)):
        spec = patterns[tier]
        _prefilters[names] = (tuple(p.encode() for p in spec["plain"]),
                              tuple(re.compile(p.encode(), f) for p, f in spec["regex"]))


def _prefilter(names: tuple[str, ...]) -> _Prefilter:
    if names not in _prefilters:
        use_secret_patterns(secret_patterns())
    return _prefilters[names]


def _candidate_lines(data: bytes, plain: tuple[bytes, ...], regexes: tuple[re.Pattern, ...]) -> list[bytes]:
    starts: set[int] = set()
    for needle in plain:
        at = data.find(needle)
        while at >= 0:
            starts.add(data.rfind(b"\n", 0, at) + 1)
            at = data.find(needle, at + 1)
    for rx in regexes:
        for m in rx.finditer(data):
            starts.add(data.rfind(b"\n", 0, m.start()) + 1)
    lines = []
    for start in sorted(starts):
        end = data.find(b"\n", start)
        lines.append(data[start:end if end >= 0 else len(data)])
    return lines


def secret_in(data: bytes, path: str) -> str | None:
    """The kind of secret detect-secrets finds in a file's text ("Private Key", "GitHub
    Token"...), or None. Decided the same way at build (a `secret` skip) and when serving."""
    names = _detector_tier(path, len(data))
    lines = _candidate_lines(data, *_prefilter(names))
    if not lines:
        return None
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings

    with transient_settings({"plugins_used": [{"name": n} for n in names]}):
        for line in lines:
            for found in scan_line(line.decode("utf-8", "replace")):
                if found.type == "Basic Auth Credentials" and _test_data(path):
                    continue  # a URL test corpus (WHATWG's urltestdata: user:pass@host examples)
                return found.type
    return None


_TEST_DIRS = frozenset({"test", "tests", "testdata", "test-data", "test_data", "fixtures",
                        "__tests__", "spec", "specs"})


def _test_data(path: str) -> bool:
    """Is the file under a test directory (tests/, testdata/, src/jvmTest/...)?"""
    dirs = path.split("/")[:-1]
    return any(d.lower() in _TEST_DIRS or d.endswith("Test") for d in dirs)
