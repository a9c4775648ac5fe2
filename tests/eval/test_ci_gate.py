"""The CI gate on the committed datasets: this repository's own history and the stdlib `email`
package, each compared with the report committed beside it (eval/datasets/refresh.sh)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from codeagent.eval.samples import stdlib_package_repo

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "eval" / "datasets"


def _refs(paths: list[Path]) -> set[str]:
    return {json.loads(line)["ref"] for p in paths for line in p.read_text().splitlines() if line.strip()}


def _missing_commits(repo: Path, refs: set[str]) -> list[str]:
    return [r for r in sorted(refs) if subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{r}^{{commit}}"],
                                                      capture_output=True).returncode != 0]


def _gate(cli, repo: Path, datasets: list[Path], baseline: Path, tmp_path: Path) -> dict:
    args = ["eval", "--repo", repo, "--workdir", tmp_path / "work", "--compare", baseline, "--brief", "-q",
            "--out", tmp_path / "new.json"]
    for d in datasets:
        args += ["--dataset", d]
    proc = cli(*args, timeout=900)
    assert proc.returncode == 0, f"eval gate failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    assert "gate: passed" in proc.stdout
    return json.loads((tmp_path / "new.json").read_text())


def test_gate_on_this_repositorys_history(cli, tmp_path):
    datasets = sorted(DATA.glob("codeagent-*.jsonl"))
    assert datasets, "eval/datasets/codeagent-*.jsonl are missing"
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the dataset's commits cannot be indexed")
    missing = _missing_commits(ROOT, _refs(datasets))
    if missing:
        pytest.skip(f"{len(missing)} dataset commits are not in this clone (shallow?): {missing[:3]}")
    report = _gate(cli, ROOT, datasets, DATA / "baseline-codeagent.json", tmp_path)
    assert set(report["datasets"]) == {p.stem for p in datasets}


def test_gate_on_stdlib_email(cli, tmp_path):
    datasets = sorted(DATA.glob("email-*.jsonl"))
    assert datasets, "eval/datasets/email-*.jsonl are missing"
    repo = stdlib_package_repo("email", tmp_path / "email")
    if _missing_commits(repo, _refs(datasets)):
        pytest.skip("this Python's stdlib email differs from the one the dataset was mined from")
    _gate(cli, repo, datasets, DATA / "baseline-email.json", tmp_path)
