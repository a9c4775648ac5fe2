"""The fleet file: TOML, one `[[repo]]` table per repository (name, path or url, refs)."""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from ...errors import InvalidParameter, NotARepository
from ...format.fleet import check_repo_name


@dataclass(frozen=True)
class RepoSpec:
    name: str
    path: Path | None  # a local git repository (a work tree or a bare one)
    url: str | None  # else a git url, cloned (bare) into the store's cache and fetched each build
    refs: tuple[str, ...]


def load_fleet(path: Path) -> list[RepoSpec]:
    """The repositories of a fleet file; a mistake is an InvalidParameter naming the table."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidParameter(f"no fleet file at {path}") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidParameter(f"{path} is not a readable TOML fleet file: {exc}") from None
    tables = raw.get("repo")
    if not isinstance(tables, list) or not tables:
        raise InvalidParameter(f"{path} has no [[repo]] tables",
                               hint='add one per repository: [[repo]] name = "api" path = "../api" refs = ["main"]')
    out: list[RepoSpec] = []
    for n, table in enumerate(tables, 1):
        out.append(_repo(path, n, table))
    names = [r.name for r in out]
    dupes = sorted({x for x in names if names.count(x) > 1})
    if dupes:
        raise InvalidParameter(f"{path}: repository names must be unique ({', '.join(dupes)} repeated)")
    return out


def _repo(fleet: Path, n: int, table: object) -> RepoSpec:
    where = f"{fleet}: [[repo]] #{n}"
    if not isinstance(table, dict):
        raise InvalidParameter(f"{where} is not a table")
    unknown = sorted(set(table) - {"name", "path", "url", "refs"})
    if unknown:
        raise InvalidParameter(f"{where} has unknown keys: {', '.join(unknown)}")
    name = check_repo_name(table.get("name"))
    if ("path" in table) == ("url" in table):
        raise InvalidParameter(f"{where} ({name}) needs exactly one of `path` and `url`")
    refs = table.get("refs", ["HEAD"])
    if isinstance(refs, str):
        refs = [refs]
    if not isinstance(refs, list) or not refs or not all(isinstance(r, str) and r for r in refs):
        raise InvalidParameter(f"{where} ({name}): refs must be a list of revision names")
    path = None
    if "path" in table:
        path = (fleet.parent / str(table["path"])).resolve()
        if not path.exists():
            raise NotARepository(f"{where} ({name}): no repository at {path}")
    return RepoSpec(name, path, str(table["url"]) if "url" in table else None, tuple(refs))


def local_checkout(spec: RepoSpec, cache: Path) -> Path:
    """The repository to read: its path, or a bare clone of its url under `cache` (fetched
    again on every build, so its refs are the remote's)."""
    if spec.path is not None:
        return spec.path
    assert spec.url is not None
    target = cache / f"{spec.name}-{hashlib.sha256(spec.url.encode()).hexdigest()[:12]}.git"
    if target.exists():
        args = ["git", "-C", str(target), "fetch", "-q", "--prune", "origin", "+refs/*:refs/*"]
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        args = ["git", "clone", "-q", "--mirror", "--", spec.url, str(target)]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise NotARepository(f"cannot fetch {spec.name} from {spec.url}: {proc.stderr.strip()[:300]}")
    return target
