"""The repository sandbox (codeagent.query.sandbox): escapes, symlinks, secrets, .gitignore, caps."""

from __future__ import annotations

import os
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.errors import (BinaryFile, CodeagentError, InvalidParameter, NotFound, PathEscape,
                              Withheld)
from codeagent.query.sandbox import Sandbox, is_secret, normalize


@pytest.fixture
def box(sample_repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret\n")
    return Sandbox(sample_repo.path)


@pytest.mark.parametrize("path", [
    "../x", "../../etc/passwd", "pkg/../../x", "/etc/passwd", "..", "pkg/%2e%2e/%2e%2e/x",
    "%2e%2e%2fx", "..\\..\\x", "/../x",
])
def test_escaping_paths_are_refused(box, path):
    with pytest.raises(PathEscape):
        box.read_file(path)


def test_paths_inside_normalize(box):
    assert box.normalize("") == "" and box.normalize(".") == "" and box.normalize("./") == ""
    assert box.normalize("pkg/../pkg/core.py") == "pkg/core.py"
    assert box.normalize(f"{box.root}/pkg/core.py") == "pkg/core.py"
    assert box.read_file(f"{box.root}/pkg/core.py").data.startswith(b'"""Core module')


def test_nul_bytes_and_long_paths_are_invalid(box):
    with pytest.raises(InvalidParameter, match="NUL"):
        box.read_file("pkg/core.py\x00.txt")
    with pytest.raises(InvalidParameter):
        box.read_file("a" * 5000)


@given(st.text(max_size=60))
@settings(max_examples=300, deadline=None)
def test_normalize_never_returns_an_escape(path):
    try:
        rel = normalize(path, "/srv/repo")
    except CodeagentError:
        return
    assert not rel.startswith(("/", "../")) and rel != ".."
    assert ".." not in rel.split("/")


def test_symlinks_inside_are_followed_outside_refused(sample_repo, tmp_path, box):
    outside = tmp_path / "outside"
    os.symlink("core.py", sample_repo.path / "pkg/alias.py")
    os.symlink(outside / "secret.txt", sample_repo.path / "pkg/abs_escape")
    os.symlink("../../outside", sample_repo.path / "pkg/dir_escape")
    os.symlink("../.env", sample_repo.path / "pkg/env_alias")
    got = box.read_file("pkg/alias.py")
    assert got.resolved == "pkg/core.py" and b"class Child" in got.data
    for path in ("pkg/abs_escape", "pkg/dir_escape/secret.txt"):
        with pytest.raises(PathEscape):
            box.read_file(path)
    with pytest.raises(PathEscape):
        box.list_dir("pkg/dir_escape")
    with pytest.raises(Withheld):
        box.read_file("pkg/env_alias")


def test_symlink_flipped_during_reads_never_leaks(sample_repo, tmp_path, box):
    link = sample_repo.path / "flip"
    inside, outside = "pkg/core.py", str(tmp_path / "outside" / "secret.txt")
    os.symlink(inside, link)
    stop = threading.Event()

    def flipper() -> None:
        tmp = sample_repo.path / "flip.tmp"
        while not stop.is_set():
            for target in (outside, inside):
                os.symlink(target, tmp)
                os.replace(tmp, link)

    t = threading.Thread(target=flipper)
    t.start()
    outcomes = set()
    try:
        for _ in range(400):
            try:
                data = box.read_file("flip").data
            except (PathEscape, NotFound) as exc:
                outcomes.add(type(exc).__name__)
                continue
            assert b"outside secret" not in data
            outcomes.add("inside")
    finally:
        stop.set()
        t.join()
    assert "inside" in outcomes or "PathEscape" in outcomes


def test_hardlink_to_outside_file_is_refused(sample_repo, tmp_path, box):
    try:
        os.link(tmp_path / "outside" / "secret.txt", sample_repo.path / "hard.txt")
    except OSError:
        pytest.skip("hard links not supported here")
    with pytest.raises(PathEscape, match="hard links"):
        box.read_file("hard.txt")


def test_secrets_withheld_and_unlisted(box):
    for path in (".env", "keys/server.pem"):
        with pytest.raises(Withheld):
            box.read_file(path)
    names = {e.path for e, _ in box.walk("")}
    assert ".env" not in names and "keys/server.pem" not in names
    assert all(is_secret(p) for p in ("id_rsa", "x/id_ed25519.pub", "prod.key", ".env.local",
                                      "credentials.json"))
    assert not is_secret("pkg/core.py")


def test_gitignore_respected(box, sample_repo):
    listed = {e.path for e, _ in box.walk("")}
    assert "pkg/core.py" in listed and "README.md" in listed
    assert "build/out.js" not in listed and "debug.log" not in listed and "build" not in listed
    assert not any(p.startswith(".git/") for p in listed)
    with pytest.raises(NotFound, match="ignored"):
        box.read_file("build/out.js")
    with pytest.raises(NotFound):
        box.read_file(".git/config")
    (sample_repo.path / "untracked.py").write_text("x = 1\n")
    box._listing = None
    assert box.read_file("untracked.py").data == b"x = 1\n"


def test_directories_and_non_files(box):
    with pytest.raises(InvalidParameter, match="directory"):
        box.read_file("pkg")
    with pytest.raises(InvalidParameter):
        box.list_dir("pkg/core.py")
    with pytest.raises(NotFound):
        box.read_file("missing.py")
    rel, entries = box.list_dir("pkg")
    assert rel == "pkg" and [e.name for e in entries] == ["__init__.py", "core.py"]


def test_fifo_is_not_read(sample_repo, box):
    os.mkfifo(sample_repo.path / "pipe")
    sample_repo.write(".gitignore", "build/\n*.log\n")
    box._listing = None
    with pytest.raises((InvalidParameter, NotFound)):
        box.read_file("pipe")


def test_binary_helpers():
    from codeagent.query.sandbox import looks_binary, sniff_mime

    assert looks_binary(b"a\x00b") and not looks_binary(b"plain text")
    assert sniff_mime("x.bin", b"\x89PNG\r\n") == "image/png"
    assert BinaryFile.code == "binary_file"
