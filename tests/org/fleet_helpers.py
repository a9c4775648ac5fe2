"""A small real fleet for the org tests: two repositories, a fork of one with a commit on top, a
shared vendored file."""

from __future__ import annotations

import shutil
from pathlib import Path

import git

from repo_helpers import GitRepo

VENDORED = "".join(f"def vendored_helper_{i}(value):\n    return value * {i}\n\n" for i in range(12))


def _api_files(n: int) -> dict[str, str]:
    files = {f"api/handler_{i}.py": f"def handle_request_{i}(request):\n    return route_{i}(request)\n"
             for i in range(n)}
    files["api/server.go"] = "package api\n\nfunc StartServer(port int) error {\n\treturn nil\n}\n"
    files["vendor/helpers.py"] = VENDORED
    return files


def write_fleet(path: Path, repos: dict[str, tuple[Path, list[str]]]) -> Path:
    lines = []
    for name, (repo, refs) in repos.items():
        lines += ["[[repo]]", f'name = "{name}"', f'path = "{repo}"',
                  "refs = [" + ", ".join(f'"{r}"' for r in refs) + "]", ""]
    path.write_text("\n".join(lines))
    return path


def make_fleet(tmp_path: Path) -> dict:
    """{"file": FLEET.toml, "repos": {name: GitRepo}}: api (2 commits), billing, api-fork
    (a clone of api with one commit of its own)."""
    api = GitRepo.create(tmp_path / "api")
    api.write_many(_api_files(8))
    api.commit("api")
    api.write("api/README.md", "# The api service\n\nRoutes requests to handlers.\n")
    api.commit("readme")
    billing = GitRepo.create(tmp_path / "billing")
    billing.write_many({
        "billing/retry.py": ("class BillingRetryPolicy:\n    \"\"\"Retry policy for calls to the billing API.\"\"\"\n\n"
                             "    def backoff_seconds(self, attempt):\n        return 2 ** attempt\n"),
        "billing/invoice.rb": "class Invoice\n  def total\n    42\n  end\nend\n",
        "vendor/helpers.py": VENDORED,
    })
    billing.commit("billing")
    fork_path = tmp_path / "api-fork"
    shutil.copytree(api.path, fork_path)
    fork = GitRepo(fork_path, git.Repo(fork_path))
    fork.write("api/handler_0.py", "def handle_request_0(request):\n    return forked_route(request)\n")
    fork.commit("fork's own change")
    repos = {"api": api, "billing": billing, "api-fork": fork}
    file = write_fleet(tmp_path / "fleet.toml", {"api": (api.path, ["main", "main~1"]),
                                                 "billing": (billing.path, ["main"]),
                                                 "api-fork": (fork.path, ["main"])})
    return {"file": file, "repos": repos, "refs": {"api": ["main", "main~1"], "billing": ["main"],
                                                  "api-fork": ["main"]}}
