"""I/O faults: ENOSPC / EIO at the store's write points, and a real full disk (tmpfs).

A failed build must exit 9 (StoreWriteFailed) with a message naming the cause, leave the
ref on the previous manifest, leave no temp file, and the previous index must stay servable:
`status` and `verify` work and its DuckDB answers.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from relhelpers import (Mutator, assembled_manifest_id, clean_manifest_id, codeagent, init_repo,
                        record, seed_files, tmp_leftovers, whole_manifest_id)
from repo_helpers import past_racy_window

from codeagent.store import Store

FAULTS = [("ENOSPC", "objects"), ("EIO", "objects"), ("ENOSPC", "actions"), ("EIO", "actions"),
          ("ENOSPC", "refs"), ("EIO", "refs"), ("ENOSPC", "cache"), ("ENOSPC", "1"), ("EIO", "2"),
          ("EIO", "4")]
STRERROR = {"ENOSPC": "No space left on device", "EIO": "Input/output error"}


def _servable(repo: Path, store_dir: Path, expected: str, ref: str = "worktree") -> list[str]:
    """Problems with serving `expected` from the store (empty when it is fully servable)."""
    problems = []
    status = codeagent("status", repo, "--store", store_dir, "--json")
    if status.returncode != 0:
        problems.append(f"status exited {status.returncode}: {status.stderr[-300:]}")
    else:
        refs = {r["ref"]: r["manifest_id"] for r in json.loads(status.stdout)["refs"]}
        if refs.get(ref) != expected:
            problems.append(f"status shows {refs.get(ref)} for {ref}, expected {expected[:12]}")
    verify = codeagent("verify", repo, "--store", store_dir)
    if verify.returncode != 0:
        problems.append(f"verify exited {verify.returncode}: {verify.stdout[-300:]}")
    store = Store(store_dir)
    if store.read_ref(ref) != expected:
        problems.append(f"ref moved to {store.read_ref(ref)}")
    if assembled_manifest_id(store, expected) != expected:
        problems.append("the previous manifest's DuckDB no longer answers")
    return problems


def _failed_cleanly(proc: subprocess.CompletedProcess, errname: str) -> list[str]:
    problems = []
    if proc.returncode != 9:
        problems.append(f"exit {proc.returncode}, expected 9: {proc.stderr[-600:]}")
        return problems
    if STRERROR[errname] not in proc.stderr or "hint:" not in proc.stderr:
        problems.append(f"unclear message: {proc.stderr[-300:]}")
    if "Traceback" in proc.stderr:
        problems.append("a traceback reached the user")
    if json.loads(proc.stdout)["error"]["code"] != "store_write_failed":
        problems.append(f"JSON error code: {proc.stdout[-200:]}")
    return problems


def test_injected_faults_fail_cleanly_and_keep_the_previous_index(tmp_path: Path) -> None:
    rng = random.Random(9)
    repo = init_repo(tmp_path / "repo", seed_files(rng, 12))
    store_dir = repo / ".codeagent"
    mutator = Mutator(repo, rng)
    first = codeagent("build", repo, "--json")
    assert first.returncode == 0, first.stderr
    current = json.loads(first.stdout)["manifest_id"]
    problems: list[str] = []
    failed = 0
    for errname, where in FAULTS:
        mutator.step()
        (repo / "pkg" / f"fault_{errname}_{where}.py").write_text(f"def f():\n    return '{where}'\n")
        past_racy_window()  # else a build started at once keeps no stat of these: no cache to write
        proc = codeagent("build", repo, "--json", env={"CODEAGENT_TEST_FAULT": f"{errname}@{where}"})
        case = f"{errname}@{where}"
        case_problems = _failed_cleanly(proc, errname)
        failed += proc.returncode == 9
        if not case_problems:
            case_problems = _servable(repo, store_dir, current)
            left = tmp_leftovers(store_dir)
            if left:
                case_problems.append(f"temp files left: {left[:3]}")
        problems += [f"{case}: {p}" for p in case_problems]
    recovered = codeagent("build", repo, "--json")
    assert recovered.returncode == 0, recovered.stderr
    expected = clean_manifest_id(repo, tmp_path / "clean")
    record("io-faults-injected", cases=len(FAULTS), failed_with_exit_9=failed,
           problems=len(problems), recovered=whole_manifest_id(store_dir, json.loads(recovered.stdout)["manifest_id"]) == expected)
    assert not problems, "\n".join(problems)
    assert whole_manifest_id(store_dir, json.loads(recovered.stdout)["manifest_id"]) == expected


@pytest.fixture
def tiny_fs(tmp_path: Path):
    """A 24 MiB tmpfs that builds can fill up (needs root/CAP_SYS_ADMIN, else skipped)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(mnt: Path, leave: int) -> None:
    filler = mnt / "filler"
    filler.unlink(missing_ok=True)
    free = shutil.disk_usage(mnt).free
    with open(filler, "wb") as fh:
        chunk = b"\0" * (1 << 20)
        remaining = max(0, free - leave)
        while remaining > 0:
            try:
                remaining -= fh.write(chunk[:min(len(chunk), remaining)])
            except OSError:
                break


def test_a_full_disk_fails_builds_cleanly_at_every_fill_level(tmp_path: Path, tiny_fs: Path) -> None:
    rng = random.Random(99)
    repo = init_repo(tmp_path / "repo", seed_files(rng, 16))
    store_dir = tiny_fs / "store"
    first = codeagent("build", repo, "--store", store_dir, "--json")
    assert first.returncode == 0, first.stderr
    current = json.loads(first.stdout)["manifest_id"]
    mutator = Mutator(repo, rng)
    levels = [0, 16 << 10, 128 << 10, 512 << 10, 2 << 20, 12 << 20]
    problems: list[str] = []
    outcomes = {"exit_9": 0, "exit_0": 0}
    started = time.monotonic()
    for leave in levels:
        mutator.step()
        (repo / "pkg" / f"big{leave}.py").write_text("".join(
            f"def g{leave}_{i}(x):\n    return x * {i}\n\n" for i in range(400)))
        _fill(tiny_fs, leave)
        proc = codeagent("build", repo, "--store", store_dir, "--json")
        (tiny_fs / "filler").unlink()
        if proc.returncode == 0:
            outcomes["exit_0"] += 1
            current = json.loads(proc.stdout)["manifest_id"]
            continue
        outcomes["exit_9"] += proc.returncode == 9
        case = _failed_cleanly(proc, "ENOSPC") or _servable(repo, store_dir, current)
        problems += [f"free {leave >> 10} KiB: {p}" for p in case]
    final = codeagent("build", repo, "--store", store_dir, "--json")
    assert final.returncode == 0, final.stderr
    expected = clean_manifest_id(repo, tmp_path / "clean")
    record("io-faults-full-disk", fill_levels=len(levels), **outcomes, problems=len(problems),
           seconds=round(time.monotonic() - started, 1))
    assert not problems, "\n".join(problems)
    assert outcomes["exit_9"] >= 3, f"the disk never filled: {outcomes}"
    assert whole_manifest_id(store_dir, json.loads(final.stdout)["manifest_id"]) == expected
    assert not tmp_leftovers(store_dir)
