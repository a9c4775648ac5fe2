"""A fleet store: one store for many repositories (docs/org.md).

Objects and the action cache are shared, so content common to forks, vendored copies and
branches is one shard; each repository's refs live under `repos/<name>/` (`repos/api/heads/main`),
so `gc` and `verify` of the store cover every repository. The manifests themselves are the ones
a single-repository `codeagent build --ref` writes (they name no repository). `fleet.json` lists
the repositories and their refs in the fleet file's order: a reader serves each repository's
first ref.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..errors import InvalidParameter, StoreCorrupt

REPOS_PREFIX = "repos"
FLEET_FILE = "fleet.json"
FLEET_FORMAT = "codeagent-fleet"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def check_repo_name(name: object) -> str:
    """`name` when it can name a repository of a fleet (one ref-path segment), else an error."""
    if not isinstance(name, str) or not _NAME.match(name) or name.endswith(".lock"):
        raise InvalidParameter(f"invalid repository name {name!r}: use letters, digits, '.', '_' "
                               "and '-', starting with a letter or digit")
    return name


def fleet_ref(repo: str, ref: str) -> str:
    """The store ref of a repository's ref (`heads/main` of `api` -> `repos/api/heads/main`)."""
    return f"{REPOS_PREFIX}/{check_repo_name(repo)}/{ref}"


def split_fleet_ref(name: str) -> tuple[str, str] | None:
    """(repository, ref) of a fleet store ref; None for a ref outside `repos/`."""
    parts = name.split("/", 2)
    if len(parts) == 3 and parts[0] == REPOS_PREFIX:
        return parts[1], parts[2]
    return None


def write_listing(root: Path, repos: dict[str, list[str]], write) -> None:
    """Record the fleet's repositories and their refs (first: the one a reader serves);
    `write(path, bytes)` is the store's atomic write."""
    body = {"format": FLEET_FORMAT, "version": 1,
            "repos": [{"name": name, "refs": refs} for name, refs in repos.items()]}
    write(root / FLEET_FILE, json.dumps(body, indent=1, sort_keys=True).encode())


def read_listing(root: Path) -> dict[str, list[str]]:
    """The fleet's repositories -> their refs (fleet file order); {} when the store has none."""
    try:
        raw = json.loads((root / FLEET_FILE).read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise StoreCorrupt(f"{root / FLEET_FILE} cannot be read: {exc}",
                           hint="run `codeagent org build` again") from exc
    if not isinstance(raw, dict) or raw.get("format") != FLEET_FORMAT:
        raise StoreCorrupt(f"{root / FLEET_FILE} is not a fleet listing",
                           hint="run `codeagent org build` again")
    return {r["name"]: list(r["refs"]) for r in raw.get("repos", [])}
