"""Invariants of the build: determinism, idempotence, order independence, verifiability."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from codeagent.indexer.build import BuildOptions, build
from codeagent.indexer.maintenance import verify_store
from codeagent.store import Store

NAMES = st.sampled_from(["a.py", "b.py", "pkg/c.py", "pkg/sub/d.py", "README.md", "notes.txt",
                         "web/app.js", "data.bin"])
CONTENT = st.one_of(
    st.text(alphabet="abcdefxyz_ =():\n#", max_size=60),
    st.sampled_from(["def f(x):\n    return x\n", "class A:\n    pass\n", "# Head\n\nbody\n"]),
    st.binary(min_size=1, max_size=20).map(lambda b: b + b"\x00"),
)
TREES = st.dictionaries(NAMES, CONTENT, min_size=1, max_size=6)
SETTINGS = settings(max_examples=6, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _write_tree(root: Path, tree: dict, order: list[str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name in order:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        content = tree[name]
        p.write_bytes(content if isinstance(content, bytes) else content.encode())


def _store_files(store_root: Path) -> dict[str, bytes]:
    objects = store_root / "objects"
    return {p.name: p.read_bytes() for p in objects.rglob("*") if p.is_file()}


@given(tree=TREES, data=st.data())
@SETTINGS
def test_same_tree_gives_byte_identical_manifest_and_shards(tree, data):
    order_a = sorted(tree)
    order_b = data.draw(st.permutations(order_a))
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        _write_tree(base / "a", tree, order_a)
        _write_tree(base / "b", tree, list(order_b))
        ra = build(BuildOptions(repo=base / "a", jobs=1))
        rb = build(BuildOptions(repo=base / "b", jobs=2))
        assert ra.manifest_id == rb.manifest_id
        sa = Store(base / "a" / ".codeagent")
        sb = Store(base / "b" / ".codeagent")
        assert sa.get(ra.manifest_id) == sb.get(rb.manifest_id)
        assert _store_files(sa.root) == _store_files(sb.root)


@given(trees=st.lists(TREES, min_size=1, max_size=4))
@SETTINGS
def test_any_build_sequence_verifies_and_rebuild_is_noop(trees):
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "r"
        for tree in trees:
            if repo.exists():
                shutil.rmtree(repo)
            _write_tree(repo, tree, sorted(tree))
            # keep the store across builds: move it aside and back
            first = build(BuildOptions(repo=repo, jobs=1, store_dir=Path(tmp) / "store"))
            again = build(BuildOptions(repo=repo, jobs=1, store_dir=Path(tmp) / "store"))
            assert not again.changed and again.files_parsed == 0
            assert again.manifest_id == first.manifest_id
            report = verify_store(Store(Path(tmp) / "store"))
            assert report.ok, report.to_dict()


@given(tree=TREES, which=st.integers(min_value=0), offset=st.integers(min_value=0))
@SETTINGS
def test_verify_fails_after_a_flipped_byte_in_any_object(tree, which, offset):
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "r"
        _write_tree(repo, tree, sorted(tree))
        build(BuildOptions(repo=repo, jobs=1))
        store = Store(repo / ".codeagent")
        objects = sorted(store.iter_objects())
        victim = store.object_path(objects[which % len(objects)])
        data = bytearray(victim.read_bytes())
        data[offset % len(data)] ^= 0x01
        victim.write_bytes(bytes(data))
        report = verify_store(store)
        assert not report.ok
        assert any(p.kind == "corrupt_object" and p.name == victim.name for p in report.problems)
