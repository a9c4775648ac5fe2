"""Regex and literal search over file contents (RE2, linear time), compared with ripgrep."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from codeagent.errors import InvalidParameter
from codeagent.query import grep


def test_regex_with_context_lines(poly):
    resp = grep(poly, r"def \w+_rate_limit\(", context=1)
    assert [(m.path, m.line_number) for m in resp.matches] == [("app/server.py", 13), ("app/server.py", 19)]
    first = resp.matches[0]
    assert first.line == "    def check_rate_limit(self, request):"
    assert first.before == [""] and first.after == ['        """Return True when the request may pass."""']
    assert (resp.total_matches, resp.files_matched, resp.truncated) == (2, 1, False)


def test_literal_escapes_metacharacters(poly):
    resp = grep(poly, "helper(request)", regex=False)
    assert [(m.path, m.line_number) for m in resp.matches] == [("app/server.py", 15)]
    with pytest.raises(InvalidParameter):
        grep(poly, "helper(request")


def test_case_sensitivity(poly):
    assert grep(poly, "connectionreseterror").total_matches == 0
    insensitive = grep(poly, "connectionreseterror", case_sensitive=False)
    assert {m.path for m in insensitive.matches} == {"app/server.py", "docs/guide.md", "notes.txt"}
    assert grep(poly, "CONNECTIONRESET", regex=False, case_sensitive=False).total_matches == 3


def test_glob_and_language_filters(poly):
    assert {m.path for m in grep(poly, "Error", glob="docs/**").matches} == {"docs/guide.md"}
    assert {m.path for m in grep(poly, "Error", glob="*.{txt,md}").matches} == {"docs/guide.md", "notes.txt"}
    assert {m.path for m in grep(poly, "fn |func ", language="go").matches} == {"cmd/main.go"}
    assert grep(poly, "Error", glob="nothing/**").files_searched == 0


def test_result_and_byte_caps_truncate(poly):
    capped = grep(poly, "e", max_results=3, context=0)
    assert len(capped.matches) == 3 and capped.truncated
    assert capped.metadata.completeness == "truncated"
    small = grep(poly, "e", max_results=100, max_bytes=200, context=0)
    assert small.truncated and 1 <= len(small.matches) < 10


def test_no_catastrophic_backtracking(poly):
    started = time.process_time()  # CPU seconds (every thread's): load stretches wall time only
    grep(poly, r"(a+)+$", max_results=5)
    grep(poly, r"(x+x+)+y", max_results=5)
    assert time.process_time() - started < 10


def test_bad_arguments(poly):
    for kwargs in ({"pattern": ""}, {"pattern": "x", "context": 11}, {"pattern": "x", "max_results": 0}):
        with pytest.raises(InvalidParameter):
            grep(poly, **kwargs)
    with pytest.raises(InvalidParameter, match="RE2"):
        grep(poly, r"(a)\1")


def test_line_numbers_agree_with_ripgrep(poly, poly_repo):
    if shutil.which("rg") is None:
        pytest.skip("ripgrep not installed")
    for pattern in [r"return \w+", "rate", r"^\s*$", r"[A-Z][a-z]+Error"]:
        ours = {(m.path, m.line_number) for m in grep(poly, pattern, max_results=1000, context=0).matches}
        out = subprocess.run(["rg", "-n", "--no-heading", "--color=never", pattern, "."],
                             cwd=poly_repo.path, capture_output=True, text=True).stdout
        theirs = set()
        for line in out.splitlines():
            path, n, _ = line.split(":", 2)
            theirs.add((path.removeprefix("./"), int(n)))
        assert ours == theirs, pattern


def test_context_survives_more_files_than_the_line_cache(tmp_path):
    from codeagent.query import open_index

    from .conftest import build_repo

    files = {f"f{n:03d}.txt": f"one\nneedle {n}\ntwo\n" for n in range(80)}
    repo = build_repo(tmp_path / "repo", files)
    with open_index(repo.path, ref="main") as view:
        resp = grep(view, "needle", context=1, max_results=100)
    assert len(resp.matches) == 80
    assert all(m.before == ["one"] and m.after == ["two"] for m in resp.matches)


def test_timeout_interrupts_a_slow_scan(tmp_path):
    from codeagent.errors import Timeout
    from codeagent.query import open_index

    from .conftest import build_repo

    line = "ab" * 50 + "\n"
    files = {f"big{n}.txt": line * 19000 for n in range(2)}  # ~1.9 MB each, under the size cap
    repo = build_repo(tmp_path / "repo", files)
    with open_index(repo.path, ref="main") as view:
        started = time.process_time()  # the work the timeout let run, not the machine's load
        with pytest.raises(Timeout):
            grep(view, r"(a|b)*a(a|b){20}x", timeout=0.001)
        assert time.process_time() - started < 5
        assert grep(view, "abab", max_results=1).matches  # the view still answers afterwards


def test_in_memory_text_copy_answers_like_the_index(poly_repo):
    from codeagent.query import find_symbols, open_index

    with open_index(poly_repo.path, ref="main") as disk, open_index(poly_repo.path, ref="main") as mem:
        mem.keep_text_in_memory = True
        for pattern in [r"def \w+\(", "Error", r"^\s*$", "fetch"]:
            a, b = grep(disk, pattern, context=2), grep(mem, pattern, context=2)
            assert [m.to_dict() for m in a.matches] == [m.to_dict() for m in b.matches]
        assert [h.snippet for h in find_symbols(disk, "parse", match="prefix").results] == \
            [h.snippet for h in find_symbols(mem, "parse", match="prefix").results]


def _text_answers(view) -> list:
    """What a reader answers from the files' texts: grep (matches, counts), symbol snippets
    and a file's lines."""
    from codeagent.query import find_symbols
    from codeagent.query.sourcetext import file_lines

    out = []
    for pattern, regex, case_sensitive in [(r"def \w+\(", True, True), ("error", False, False),
                                           (r"^\s*$", True, True), (r"(?i)FETCH\w*", True, True)]:
        r = grep(view, pattern, regex=regex, case_sensitive=case_sensitive, context=2, max_results=3)
        out.append(([m.to_dict() for m in r.matches], r.total_matches, r.files_matched, r.files_searched,
                     r.truncated))
    out.append([h.snippet for h in find_symbols(view, "parse", match="prefix").results])
    out.append({p: list(lines) for p, lines in file_lines(view, ["app/server.py", "cmd/main.go", "docs/guide.md"]).items()})
    return out


def test_a_reader_whose_texts_array_is_damaged_answers_from_the_shards(tmp_path):
    """The assembly keeps no copy of the texts but the resident array (ASSEMBLY_VERSION 8):
    when that array is damaged, one-shot and long-lived readers read the files' shards (which
    the store re-hashes) and answer as before, snippets included; pattern errors as well."""
    from codeagent.format import resident
    from codeagent.query import open_index
    from codeagent.query.assembly_check import _verified
    from codeagent.query.memtext import mapped_texts

    from .conftest import POLY, build_repo

    repo = build_repo(tmp_path / "repo", POLY)
    with open_index(repo.path, ref="main") as view:
        intact = _text_answers(view)
        blocks = view.path.parent / resident.file_name("texts", "blocks")
    assert intact[-1] and all(a[0] for a in intact[:4])
    data = bytearray(blocks.read_bytes())
    data[len(data) // 2:len(data) // 2 + 64] = bytes(64)
    blocks.write_bytes(bytes(data))
    _verified.clear()  # this process checked the array while it was intact
    for long_lived in (False, True):
        with open_index(repo.path, ref="main") as view:
            view.keep_text_in_memory = long_lived
            assert mapped_texts(view) is None
            assert _text_answers(view) == intact
            with pytest.raises(InvalidParameter, match="invalid regular expression"):
                grep(view, "helper(request")
