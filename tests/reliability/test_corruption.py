"""Corruption: damaged objects and artifacts are detected by hash before any native reader
(Parquet, DuckDB, usearch) touches the bytes; `verify` reports them (exit 7); queries refuse
the manifest with a clear error instead of crashing; a build never serves damaged bytes.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from relhelpers import codeagent, init_repo, py_module, record

from codeagent import format as fmt
from codeagent.hashing import hash_bytes
from codeagent.format.manifest import load_manifest
from codeagent.store import Store

ENV = {"CODEAGENT_ANN_THRESHOLD": "1"}  # small corpus, but still write the usearch file
RESULTS: dict[str, dict] = {}


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    rng = random.Random(5)
    files = {f"src/m{i}.py": py_module(rng, i) for i in range(6)}
    files["docs/guide.md"] = "# Guide\n\n## Install\n\nRun the thing.\n"
    repo = init_repo(tmp_path_factory.mktemp("tpl") / "repo", files)
    proc = codeagent("build", repo, "--embedder", "hash", "--json", env=ENV)
    assert proc.returncode == 0, proc.stderr
    return repo


@pytest.fixture
def repo(template: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "repo"
    shutil.copytree(template, dst, symlinks=True)
    return dst


def _store(repo: Path) -> Store:
    return Store(repo / ".codeagent")


def _current(repo: Path):
    store = _store(repo)
    mid = store.read_ref("worktree")
    return store, mid, load_manifest(store, mid)


def _flip(path: Path, offset: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    at = len(data) // 2 if offset is None else offset
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _a_shard(repo: Path) -> Path:
    store, _, m = _current(repo)
    return store.object_path(sorted(m.shard_ids())[0])


def _point_ref_at(repo: Path, **replace_shard: str) -> str:
    """Put a manifest whose first indexed file names `shard`, and point the ref at it."""
    from dataclasses import replace

    store, _, m = _current(repo)
    first = next(f for f in m.files if f.indexed)
    files = tuple(replace(f, shard=replace_shard["shard"], shard_key=hash_bytes(b"k" + f.path.encode()))
                  if f is first else f for f in m.files)
    bad = replace(m, files=files)
    mid = store.put(bad.canonical_bytes())
    store.set_ref("worktree", mid)
    return mid


def _absent_shard(repo: Path) -> None:
    _point_ref_at(repo, shard="ab" * 32)


def _garbage_parquet(repo: Path) -> None:
    _point_ref_at(repo, shard=_store(repo).put(b"PAR1 this is not parquet at all PAR1"))


def _assembled_file(name: str, damage: Callable[[Path], None]) -> Callable[[Path], None]:
    def run(repo: Path) -> None:
        store, mid, _ = _current(repo)
        damage(store.assembled_dir(mid) / name)
    return run


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    # name: (damage, what verify must report)
    "shard_flipped_byte": (lambda r: _flip(_a_shard(r)), "corrupt_object"),
    "shard_truncated": (lambda r: _truncate(_a_shard(r)), "corrupt_object"),
    "shard_missing": (lambda r: _a_shard(r).unlink(), "dangling_shard"),
    "manifest_flipped_byte": (lambda r: _flip(_store(r).object_path(_current(r)[1])), "corrupt_object"),
    "manifest_names_absent_shard": (_absent_shard, "dangling_shard"),
    "shard_not_parquet": (_garbage_parquet, "malformed_shard"),
    "duckdb_flipped_byte": (_assembled_file(fmt.DUCKDB_FILE, _flip), "corrupt_assembly"),
    "duckdb_truncated": (_assembled_file(fmt.DUCKDB_FILE, _truncate), "corrupt_assembly"),
    "usearch_flipped_byte": (_assembled_file(fmt.ANN_FILE, _flip), "corrupt_assembly"),
    "usearch_truncated": (_assembled_file(fmt.ANN_FILE, _truncate), "corrupt_assembly"),
    "vectors_matrix_flipped_byte": (_assembled_file(fmt.VECTORS_MATRIX, lambda p: _flip(p, 200)),
                                    "corrupt_assembly"),
}


def _query_outcome(repo: Path, mode: str) -> tuple[int, str]:
    proc = codeagent("search", "Thing1", "--mode", mode, "--repo", repo, "--json", env=ENV)
    return proc.returncode, proc.stdout + proc.stderr


SERVE_CASES = ("duckdb_flipped_byte", "usearch_truncated")


def _served_error(repo: Path) -> str | None:
    """The error code `codeagent serve` answers search_code with (None: it answered)."""
    from mcp_raw import RawServer, tool_error_code

    server = RawServer(repo)
    try:
        reply = server.call(1, "search_code", {"query": "Thing1", "semantic_weight": 0.5})
    finally:
        server.close()
    assert reply is not None and "Traceback" not in json.dumps(reply)
    return tool_error_code(reply)


@pytest.mark.parametrize("case", sorted(CASES))
def test_damage_is_detected_reported_and_refused(repo: Path, case: str) -> None:
    damage, kind = CASES[case]
    assert codeagent("verify", repo).returncode == 0
    damage(repo)
    verify = codeagent("verify", repo, "--json")
    kinds = {p["kind"] for p in json.loads(verify.stdout)["problems"]} if verify.stdout else set()
    outcome = {"verify_exit": verify.returncode, "verify_kinds": sorted(kinds)}
    for mode in ("text", "semantic"):
        rc, out = _query_outcome(repo, mode)
        outcome[f"{mode}_exit"] = rc
        assert rc >= 0, f"{case}: `search --mode {mode}` died from signal {-rc}"
        assert "Traceback" not in out, f"{case}: `search --mode {mode}` crashed:\n{out[-1500:]}"
        assert rc in (0, 5, 7), f"{case}: `search --mode {mode}` exit {rc}:\n{out[-800:]}"
    served_code = _served_error(repo) if case in SERVE_CASES else None
    build = codeagent("build", repo, "--embedder", "hash", "--json", env=ENV)
    outcome["build_exit"] = build.returncode
    assert "Traceback" not in build.stderr, f"{case}: build crashed:\n{build.stderr[-1500:]}"
    assert build.returncode in (0, 7), f"{case}: build exit {build.returncode}: {build.stderr[-600:]}"
    after = codeagent("verify", repo)
    outcome["verify_after_build"] = after.returncode
    RESULTS[case] = outcome
    record("corruption", cases=len(RESULTS),
           detected_by_verify=sum(r["verify_exit"] == 7 for r in RESULTS.values()),
           healed_by_build=sum(r["build_exit"] == 0 and r["verify_after_build"] == 0
                               for r in RESULTS.values()),
           refused_by_query=sum(r["text_exit"] == 7 for r in RESULTS.values()), crashes=0)
    assert verify.returncode == 7, f"{case}: verify exit {verify.returncode}:\n{verify.stdout[-800:]}"
    if kind == "corrupt_assembly":
        assert outcome["text_exit"] == 7 and outcome["semantic_exit"] == 7, (
            f"{case}: queries must refuse a damaged assembly with exit 7: {outcome}")
        if case in SERVE_CASES:
            assert served_code == "store_corrupt", f"{case}: the MCP server answered {served_code}"
    assert kind in kinds, f"{case}: verify reported {kinds}, expected {kind}"
    if build.returncode == 0 and after.returncode != 0:
        # A no-op build does not re-hash what it does not read; the damage must stay reported.
        assert after.returncode == 7, f"{case}: verify after build exit {after.returncode}"
    # What a build left, `repair` re-creates, or names with exit 7 (issue 45, item 4).
    repair = codeagent("repair", repo, "--json", env=ENV)
    assert "Traceback" not in repair.stderr and repair.returncode in (0, 7), (case, repair.stderr[-800:])
    if repair.returncode == 0:
        assert codeagent("verify", repo).returncode == 0, f"{case}: repair exit 0, verify still fails"
    else:
        assert json.loads(repair.stdout)["unrepaired"], f"{case}: repair exit 7 naming nothing"
