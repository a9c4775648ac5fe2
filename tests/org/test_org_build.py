"""`codeagent org build` with the local engine: the same manifests as one build per repository
and ref, each distinct content parsed once; search across the fleet; fleet gc and verify."""

from __future__ import annotations

import json
from pathlib import Path

from codeagent.format.fleet import fleet_ref, read_listing
from codeagent.indexer.build import BuildOptions, build
from codeagent.indexer.fleet.engines import LocalEngine
from codeagent.indexer.fleet.plan import build_fleet
from codeagent.indexer.fleet.spec import load_fleet
from codeagent.indexer.fleet.maintenance import fleet_gc
from codeagent.indexer.maintenance import verify_store
from codeagent.query.org import open_fleet, org_search
from codeagent.query.search import SearchRequest
from codeagent.store import Store

from fleet_helpers import write_fleet


def _ids(result) -> dict[tuple[str, str], str]:
    return {(name, p.ref): p.manifest_id for name, plans in result.repos.items() for p in plans}


def single_build_ids(fleet: dict, tmp_path: Path) -> dict[tuple[str, str], str]:
    """Manifest ids of `codeagent build --ref` run per repository and ref, each in its own store."""
    out = {}
    for name, refs in fleet["refs"].items():
        for rev in refs:
            r = build(BuildOptions(repo=fleet["repos"][name].path, store_dir=tmp_path / f"single-{name}", rev=rev, jobs=1))
            out[(name, r.ref)] = r.manifest_id
            assert Store(tmp_path / f"single-{name}").get(r.manifest_id)  # stored, re-hashed
    return out


def test_fleet_manifests_are_the_single_builds_and_shared_content_is_parsed_once(fleet, tmp_path):
    store = Store(tmp_path / "fleet-store", create=True)
    result = build_fleet(load_fleet(fleet["file"]), store, LocalEngine(1))
    ids = _ids(result)
    assert ids == single_build_ids(fleet, tmp_path)
    assert len(set(ids.values())) == 4  # api@main, api@main~1, billing, the fork: all different trees
    for (name, ref), mid in ids.items():
        assert store.read_ref(fleet_ref(name, ref)) == mid and store.is_assembled(mid)
    # the fork's and api~1's files, and the vendored file of billing, are api's content
    assert result.files_parsed_per_ref == 10 + 11 + 3 + 11
    assert result.blobs_parsed == 11 + 2 + 1  # api@main + billing's two own + the fork's edit
    assert read_listing(store.root) == {"api": ["heads/main", "commits/" + fleet["repos"]["api"].repo.git.rev_parse("main~1")],
                                        "billing": ["heads/main"], "api-fork": ["heads/main"]}

    again = build_fleet(load_fleet(fleet["file"]), store, LocalEngine(1))
    assert _ids(again) == ids and again.blobs_parsed == 0 and again.assembled == 0
    fork = fleet["repos"]["api-fork"]
    fork.write("api/new.py", "def brand_new():\n    return 1\n")
    fork.commit("one more")
    third = build_fleet(load_fleet(fleet["file"]), store, LocalEngine(2))
    assert third.blobs_parsed == 1 and third.assembled == 1
    assert _ids(third)[("api", "heads/main")] == ids[("api", "heads/main")]
    assert verify_store(store).ok


def test_org_search_names_the_repository_and_the_filter_narrows(fleet, tmp_path, cli):
    cli("org", "build", fleet["file"], "--store", tmp_path / "s", "--json", check=True)
    with open_fleet(tmp_path / "s") as view:
        answer = org_search(view, SearchRequest("retry policy for the billing API", limit=5))
        assert answer.results[0].repo == "billing" and answer.results[0].hit.path == "billing/retry.py"
        only = org_search(view, SearchRequest("handle_request_0", limit=10), repos=["api", "api-fork"])
        assert only.results and {h.repo for h in only.results} <= {"api", "api-fork"}
        assert {h.repo for h in only.results if h.hit.path == "api/handler_0.py"} == {"api", "api-fork"}
        ranked = org_search(view, SearchRequest("StartServer", limit=5), fusion="rank")
        assert ranked.results[0].hit.name == "StartServer"
    proc = cli("org", "search", "--store", tmp_path / "s", "BillingRetryPolicy", "--repos", "billing,api", "--json", check=True)
    hits = json.loads(proc.stdout)["results"]
    assert hits[0]["repo"] == "billing" and hits[0]["name"] == "BillingRetryPolicy"
    bad = cli("org", "search", "--store", tmp_path / "s", "x", "--repos", "nope")
    assert bad.returncode == 2 and "no repository nope" in bad.stderr


def test_fleet_gc_keeps_what_the_fleet_needs(fleet, tmp_path, cli):
    store = Store(tmp_path / "s", create=True)
    first = build_fleet(load_fleet(fleet["file"]), store, LocalEngine(1))
    billing_only = {e.shard for e in _manifest(store, _ids(first)[("billing", "heads/main")]).files
                    if e.path.startswith("billing/")}
    smaller = write_fleet(tmp_path / "smaller.toml", {"api": (fleet["repos"]["api"].path, ["main"]),
                                                      "api-fork": (fleet["repos"]["api-fork"].path, ["main"])})
    build_fleet(load_fleet(smaller), store, LocalEngine(1))
    dry = cli("org", "gc", "--store", tmp_path / "s", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"would delete ref {fleet_ref('billing', 'heads/main')}" in dry.stdout.splitlines()
    assert "would delete 2 refs" in dry.stdout and "history views" in dry.stdout and "scores files" in dry.stdout
    report = fleet_gc(store)
    assert sorted(report.refs_deleted) == sorted([fleet_ref("billing", "heads/main"),
                                                  fleet_ref("api", "commits/" + fleet["repos"]["api"].repo.git.rev_parse("main~1"))])
    assert billing_only and not any(store.has(s) for s in billing_only)
    assert verify_store(store).ok
    with open_fleet(store.root) as view:  # the vendored file billing shared with api stays searchable
        hits = org_search(view, SearchRequest("vendored_helper_3", limit=3)).results
        assert hits and hits[0].hit.path == "vendor/helpers.py"


def test_a_bad_fleet_file_is_a_clear_error(tmp_path, cli):
    (tmp_path / "f.toml").write_text('[[repo]]\nname = "a"\npath = "missing"\n')
    proc = cli("org", "build", tmp_path / "f.toml", "--store", tmp_path / "s")
    assert proc.returncode == 3 and "no repository at" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "g.toml").write_text('[[repo]]\nname = "a/b"\npath = "."\n')
    proc = cli("org", "build", tmp_path / "g.toml", "--store", tmp_path / "s")
    assert proc.returncode == 2 and "invalid repository name" in proc.stderr
    proc = cli("org", "build", tmp_path / "g.toml")
    assert proc.returncode == 2 and "--store" in proc.stderr


def _manifest(store: Store, mid: str):
    from codeagent.format.manifest import load_manifest

    return load_manifest(store, mid)


def test_build_to_a_remote_publishes_every_repository_ref(fleet, tmp_path, monkeypatch):
    from codeagent.cli.org import run_build
    from codeagent.indexer.replicate.remote import open_remote

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # where --to stages
    report = run_build(fleet["file"], "local", None, None, str(tmp_path / "remote"), 1, None)
    published = {r["ref"]: r["manifest_id"] for r in report["published"]["refs"]}
    assert published == {fleet_ref(repo["name"], ref["ref"]): ref["manifest_id"]
                         for repo in report["repos"] for ref in repo["refs"]}
    with open_remote(str(tmp_path / "remote")) as remote:
        assert remote.list_refs() == published
        assert all(remote.has_object(mid) for mid in published.values())


def test_a_repository_named_by_url_is_mirrored_and_indexed_alike(fleet, tmp_path):
    billing = fleet["repos"]["billing"].path
    by_url = write_fleet(tmp_path / "url.toml", {})
    by_url.write_text(f'[[repo]]\nname = "billing"\nurl = "file://{billing}"\nrefs = ["main"]\n')
    by_path = write_fleet(tmp_path / "path.toml", {"billing": (billing, ["main"])})
    first = build_fleet(load_fleet(by_url), Store(tmp_path / "u", create=True), LocalEngine(1))
    second = build_fleet(load_fleet(by_path), Store(tmp_path / "p", create=True), LocalEngine(1))
    assert _ids(first) == _ids(second) and len(_ids(first)) == 1
    assert list((tmp_path / "u" / "cache" / "fleet-clones").iterdir())  # the mirror it read


def test_build_to_s3_through_a_moto_server(fleet, tmp_path, monkeypatch):
    """`--to s3://...`: the same publication into a real S3 API (moto's server on 127.0.0.1)."""
    import socket
    import subprocess
    import sys
    import time

    import pytest

    pytest.importorskip("moto.server", reason="moto[server] is not installed")
    from pyarrow import fs as pafs

    from codeagent.cli.org import run_build
    from codeagent.indexer.replicate.remote import open_remote

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):  # until it listens (no clock: a bounded number of tries)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.05)
        for key, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                           "XDG_CACHE_HOME": str(tmp_path / "cache")}.items():
            monkeypatch.setenv(key, value)
        pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http", region="us-east-1",
                          allow_bucket_creation=True).create_dir("fleet")
        uri = f"s3://fleet/org?endpoint_override=127.0.0.1:{port}&scheme=http&region=us-east-1"
        report = run_build(fleet["file"], "local", None, None, uri, 1, None)
        published = {r["ref"]: r["manifest_id"] for r in report["published"]["refs"]}
        assert len(published) == 4
        with open_remote(uri) as remote:
            assert remote.list_refs() == published
            assert all(remote.has_object(mid) for mid in published.values())
    finally:
        server.terminate()
        server.wait()
