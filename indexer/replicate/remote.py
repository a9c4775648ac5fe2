"""Remotes: where indexes are published and synced from, one layout over several backends.

A remote is a tree of small files that plain GET can read (so a static web server is a
remote). Layout, version 1 (`REMOTE_FORMAT`):

    CODEAGENT-REMOTE        "codeagent-remote 1": marks the remote and its layout version
    refs.json               {"format": "codeagent-remote", "version": 1,
                             "refs": {"heads/main": {"manifest": ID, "commit": SHA}}}
    refs/<ref>              "<manifest id>": e.g. refs/heads/main (authoritative)
    commits/<sha>           "<manifest id>": every published commit (ancestor fallback)
    scores/<sha>.json       search quality measured on the commit's own history (optional)
    manifests/<id>          chunk list of manifest <id> (delta transfer, `manifest_chunks`)
    objects/<id[:2]>/<id>   shards, vector objects, manifests and manifest chunks

Writers upload objects first, then the manifest, then `commits/<sha>`, then the ref: a
reader never sees a ref naming a missing object. `refs.json` is a listing for backends
that cannot list directories (HTTP); `refs/<ref>` wins when the two disagree.

A backend moves bytes by key (`read`/`write`/`exists`/`list`); `Remote` knows the layout.
Backends: a directory (`local`), http(s) read-only (`http`), pyarrow
filesystems such as s3:// and gs:// (`arrow`) and a single tar file (`bundle`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

from ...errors import InvalidParameter, RemoteError
from ...hashing import is_object_id
from .arrow import ArrowBackend
from .bundle import BundleBackend
from .http import HttpBackend
from .local import DirectoryBackend

REMOTE_FORMAT = 1
MARKER = "CODEAGENT-REMOTE"
REFS_INDEX = "refs.json"
BUNDLE_SUFFIXES = (".tar",)


class Backend(Protocol):
    """Bytes by key (a relative posix path). `read` returns None when the key is absent."""

    label: str
    writable: bool

    def read(self, key: str) -> bytes | None: ...

    def exists(self, key: str) -> bool: ...

    def write(self, key: str, data: bytes) -> None: ...

    def list(self, prefix: str) -> list[str] | None:
        """Keys under `prefix` (a folder), or None when the backend cannot list."""

    def close(self) -> None: ...


def object_key(object_id: str) -> str:
    if not is_object_id(object_id):
        raise InvalidParameter(f"not an object id: {object_id!r}")
    return f"objects/{object_id[:2]}/{object_id}"


def _check_name(kind: str, name: str) -> str:
    parts = name.split("/")
    if not name or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        raise InvalidParameter(f"invalid {kind} name: {name!r}")
    return name


def _pointer(data: bytes | None, what: str) -> str | None:
    if data is None:
        return None
    value = data.decode("utf-8", "replace").strip()
    if not is_object_id(value):
        raise RemoteError(f"{what} on the remote does not hold a manifest id",
                          hint="republish it with `codeagent publish`")
    return value


class Remote:
    """The remote layout over one backend."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @property
    def label(self) -> str:
        return self.backend.label

    @property
    def writable(self) -> bool:
        return self.backend.writable

    def __enter__(self) -> "Remote":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.backend.close()

    # ---- reading --------------------------------------------------------------------------
    def is_remote(self) -> bool:
        return self.backend.exists(MARKER)

    def require_remote(self) -> None:
        if not self.is_remote():
            raise RemoteError(f"{self.label} is not a codeagent remote (no {MARKER} file)",
                              hint="publish to it first with `codeagent publish --to ...`, "
                              "or check the path/URL")

    def refs_index(self) -> dict[str, dict]:
        raw = self.backend.read(REFS_INDEX)
        if raw is None:
            return {}
        try:
            data = json.loads(raw)
            refs = data["refs"]
        except (ValueError, KeyError, TypeError) as exc:
            raise RemoteError(f"{REFS_INDEX} on {self.label} is not valid: {exc}") from exc
        return {k: v for k, v in refs.items() if isinstance(v, dict) and is_object_id(v.get("manifest", ""))}

    def list_refs(self) -> dict[str, str]:
        """ref name -> manifest id."""
        keys = self.backend.list("refs")
        if keys is None:
            return {name: v["manifest"] for name, v in sorted(self.refs_index().items())}
        out = {}
        for key in keys:
            name = key[len("refs/"):]
            value = self.read_ref(name)
            if value:
                out[name] = value
        return dict(sorted(out.items()))

    def read_ref(self, name: str) -> str | None:
        return _pointer(self.backend.read(f"refs/{_check_name('ref', name)}"), f"ref {name}")

    def read_commit(self, sha: str) -> str | None:
        return _pointer(self.backend.read(f"commits/{_check_name('commit', sha)}"), f"commit {sha[:12]}")

    def read_scores(self, sha: str) -> bytes | None:
        """The scores document published for commit `sha` (unchecked), None if there is none."""
        return self.backend.read(f"scores/{_check_name('commit', sha)}.json")

    def has_object(self, object_id: str) -> bool:
        return self.backend.exists(object_key(object_id))

    def get_object(self, object_id: str) -> bytes | None:
        """The remote's bytes for an object, unverified (callers re-hash), None if absent."""
        return self.backend.read(object_key(object_id))

    def read_chunk_list(self, manifest_id: str) -> bytes | None:
        return self.backend.read(f"manifests/{object_key(manifest_id).rsplit('/', 1)[1]}")

    # ---- writing (publishers) -------------------------------------------------------------
    def _require_writable(self) -> None:
        if not self.writable:
            raise RemoteError(f"{self.label} is read-only",
                              hint="publish to a directory, file://, s3:// or gs:// remote, "
                              "or a .tar bundle, and serve that over http")

    def init(self) -> None:
        self._require_writable()
        if not self.backend.exists(MARKER):
            self.backend.write(MARKER, f"codeagent-remote {REMOTE_FORMAT}\n".encode())

    def put_object(self, object_id: str, data: bytes) -> None:
        self._require_writable()
        self.backend.write(object_key(object_id), data)

    def put_chunk_list(self, manifest_id: str, data: bytes) -> None:
        self._require_writable()
        self.backend.write(f"manifests/{object_key(manifest_id).rsplit('/', 1)[1]}", data)

    def set_commit(self, sha: str, manifest_id: str) -> None:
        self._require_writable()
        self.backend.write(f"commits/{_check_name('commit', sha)}", f"{manifest_id}\n".encode())

    def put_scores(self, sha: str, data: bytes) -> None:
        self._require_writable()
        self.backend.write(f"scores/{_check_name('commit', sha)}.json", data)

    def set_ref(self, name: str, manifest_id: str, commit: str | None) -> None:
        """Point `name` at a manifest (the commit point), then refresh the refs.json listing."""
        self._require_writable()
        self.backend.write(f"refs/{_check_name('ref', name)}", f"{manifest_id}\n".encode())
        refs = self._listing()
        refs[name] = {"manifest": manifest_id, "commit": commit}
        body = {"format": "codeagent-remote", "version": REMOTE_FORMAT, "refs": dict(sorted(refs.items()))}
        self.backend.write(REFS_INDEX, json.dumps(body, indent=1, sort_keys=True).encode())


    def _listing(self) -> dict[str, dict]:
        """refs.json's entries rebuilt from the authoritative refs/ files where the backend can
        list them, so a ref another publisher set since our last read is kept (and one a lost
        race dropped comes back); commits come from the old listing where it agrees."""
        old = self.refs_index()
        if self.backend.list("refs") is None:
            return old
        return {ref: {"manifest": mid, "commit": (old.get(ref) or {}).get("commit")
                      if (old.get(ref) or {}).get("manifest") == mid else None}
                for ref, mid in self.list_refs().items()}


def is_bundle_spec(spec: str) -> bool:
    return "://" not in spec and spec.endswith(BUNDLE_SUFFIXES) and not Path(spec).is_dir()


def open_remote(spec: str, *, create: bool = False) -> Remote:
    """A remote from a path or URL: DIR, file://DIR, http(s)://..., s3://..., gs://..., FILE.tar.

    `create` makes a missing directory or bundle (publishers); readers get RemoteError.
    """
    if not spec:
        raise InvalidParameter("empty remote", hint="pass a directory, URL or .tar bundle")
    scheme = spec.split("://", 1)[0].lower() if "://" in spec else ""
    if scheme in ("http", "https"):
        return Remote(HttpBackend(spec))
    if scheme == "file":
        from urllib.parse import unquote, urlparse

        spec = unquote(urlparse(spec).path)
        scheme = ""
    if scheme:
        return Remote(ArrowBackend.from_uri(spec))
    if is_bundle_spec(spec):
        return Remote(BundleBackend(Path(spec), create=create))

    return Remote(DirectoryBackend(Path(spec), create=create))
