"""The assembly writes the resident arrays readers map (format/resident.py); an incremental
assembly copies the previous one's name tables when the names did not change, and builds
them again when they did: either way they equal a fresh build's."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from codeagent.format import resident
from codeagent.format.resident_write import write_resident
from codeagent.format.shard import shard_texts
from codeagent.format.texts import TextBlocks
from codeagent.hashing import hash_bytes
from codeagent.indexer.build import BuildOptions, build
from codeagent.query import find_symbols, open_index
from codeagent.store import Store


def _names_files(repo, manifest_id: str) -> dict[str, bytes]:
    directory = Store(repo / ".codeagent").assembled_dir(manifest_id)
    return {p: (directory / resident.file_name("names", p)).read_bytes()
            for p in resident.STRUCTURES["names"][1]}


def _fresh_names(repo) -> dict:
    with open_index(repo, ref="main") as view:
        return resident.name_arrays(view.cursor().sql(resident.NAMES_SQL).to_arrow_table())


def test_name_tables_are_reused_only_while_the_names_stay_the_same(git_repo):
    git_repo.write("m.py", "def parse_header(x):\n    return x\n")
    git_repo.commit()
    first = build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    git_repo.write("m.py", "def parse_header(x):\n    return x + 1\n")  # a body edit: same names
    git_repo.commit()
    second = build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    assert second.manifest_id != first.manifest_id
    assert _names_files(git_repo.path, second.manifest_id) == _names_files(git_repo.path, first.manifest_id)
    git_repo.write("m.py", "def parse_header(x):\n    return x\n\n\ndef read_trailer(y):\n    return y\n")
    git_repo.commit()
    third = build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    assert _names_files(git_repo.path, third.manifest_id) != _names_files(git_repo.path, second.manifest_id)
    with open_index(git_repo.path, ref="main") as view:
        mapped = resident.map_arrays(view.path.parent, "names")
        view.keep_text_in_memory = True
        hits = find_symbols(view, "read_trailr", match="fuzzy").results  # the new name, by trigram
    assert [h.name for h in hits] == ["read_trailer"]
    fresh = _fresh_names(git_repo.path)
    assert {k: v.to_pylist() for k, v in mapped.items()} == {k: v.to_pylist() for k, v in fresh.items()}
    assert "trailer" in mapped["subtokens"].column("key").to_pylist()


# Each structure's rows as the in-memory builders (resident.STRUCTURES) read them.
_SQL = {"symbols": resident.symbols_sql(), "names": resident.NAMES_SQL, "refs": resident.REFS_SQL,
        "edges": resident.EDGES_SQL, "texts": resident.TEXT_SHARDS_SQL, "postings": resident.POSTINGS_SQL}


def _shard_texts(con, store: Store) -> pa.Table:
    """Every indexed file's (path, text), read from its shard (the database keeps no text)."""
    return shard_texts(con.execute(resident.TEXT_SHARDS_SQL).fetchall(), store.get)


def _built_in_memory(db, out, store: Store):
    """The resident files as the in-memory builders write them from the database `db` (and
    the texts from the shards in `store`)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        for structure, (builder, _) in resident.STRUCTURES.items():
            table = _shard_texts(con, store) if structure == "texts" else con.sql(_SQL[structure]).to_arrow_table()
            source = (hash_bytes("\x00".join(table.column(0).to_pylist()).encode())
                      if structure in resident.REUSABLE else None)
            resident.write_arrays(out, structure, builder(table), source)
    finally:
        con.close()


def _project(git_repo) -> None:
    git_repo.write("pkg/core.py", "import os\n\n\nclass Caf\u00e9Parser:\n    \"\"\"Parses.\"\"\"\n\n"
                   "    def parse_header(self, raw):\n        return os.path.join(raw, 'x')\n\n"
                   "    @staticmethod\n    def Zeta():\n        return CaféParser()\n")
    git_repo.write("pkg/use.py", "from pkg.core import Caf\u00e9Parser\n\n\ndef main():\n"
                   "    p = Caf\u00e9Parser()\n    return p.parse_header('a') or p.Zeta()\n")
    git_repo.write("tests/test_core.py", "from pkg.use import main\n\n\ndef test_main():\n    assert main()\n")
    git_repo.write("lib.go", "package lib\n\nfunc Parse(s string) int { return len(s) }\n\n"
                   "func Use() int { return Parse(\"x\") }\n")
    git_repo.write("README.md", "# Project\n\nSee `parse_header`.\n")
    git_repo.commit()


@pytest.mark.parametrize("incremental", [False, True])
def test_streamed_resident_files_are_the_in_memory_builders_byte_for_byte(git_repo, tmp_path, incremental):
    """A full assembly (its texts fed from the shards it inserts) and an incremental one on
    it (the changed files' texts merged with its base's) write what the builders do."""
    _project(git_repo)
    manifest_id = build(BuildOptions(repo=git_repo.path, rev="main", jobs=1)).manifest_id
    if incremental:
        git_repo.write("pkg/core.py", "import os\n\n\ndef parse_header(raw):\n    return raw\n")
        git_repo.write("pkg/added.py", "def added():\n    return 1\n")
        git_repo.remove("README.md")
        git_repo.commit()
        again = build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
        assert again.manifest_id != manifest_id and again.files_parsed == 2
        manifest_id = again.manifest_id
    store = Store(git_repo.path / ".codeagent")
    directory = store.assembled_dir(manifest_id)
    expected = tmp_path / "memory"
    expected.mkdir()
    _built_in_memory(directory / "index.duckdb", expected, store)
    names = sorted(p.name for p in expected.iterdir())
    assert sorted(p.name for p in directory.glob("resident.*")) == names
    assert len(names) == sum(len(parts) for _, parts in resident.STRUCTURES.values())
    for name in names:
        assert (directory / name).read_bytes() == (expected / name).read_bytes(), name
    edges = pa.ipc.open_file(pa.memory_map(str(directory / resident.file_name("edges", "rows")))).read_all()
    assert edges.num_rows > 0 and "Caf\u00e9Parser" in str(edges.column("target").to_pylist())
    for name in ("src_id", "dst_id"):  # RESIDENT_VERSION 8: the id dictionaries as bytes
        assert edges.schema.field(name).type.value_type == pa.binary(8), name


@pytest.mark.parametrize("memory", [0, 3000])
def test_resident_files_read_in_small_batches_hold_the_same_rows(git_repo, tmp_path, memory):
    """Spooled on disk (memory 0), or in memory until the spool passes 3000 bytes."""
    _project(git_repo)
    manifest_id = build(BuildOptions(repo=git_repo.path, rev="main", jobs=1)).manifest_id
    db = Store(git_repo.path / ".codeagent").assembled_dir(manifest_id) / "index.duckdb"
    expected, small = tmp_path / "memory", tmp_path / "small"
    expected.mkdir()
    small.mkdir()
    store = Store(git_repo.path / ".codeagent")
    _built_in_memory(db, expected, store)
    con = duckdb.connect(str(db), read_only=True)
    try:
        texts = TextBlocks()
        texts.add(resident.sorted_texts(_shard_texts(con, store)))
        write_resident(con, small, tmp_path / "spool", texts, rows=3, memory=memory)
    finally:
        con.close()
    assert not (tmp_path / "spool").exists()
    for path in sorted(expected.iterdir()):
        want = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
        reader = pa.ipc.open_file(pa.memory_map(str(small / path.name)))
        assert reader.num_record_batches == (1 if want.num_rows else 0), path.name
        assert reader.schema.equals(want.schema, check_metadata=True), path.name
        assert reader.read_all().equals(want), path.name


@pytest.mark.parametrize("older", ["", " resident 5", " resident 6", " resident 7"])
def test_an_assembly_of_older_resident_arrays_is_said_then_assembled_again(git_repo, older):
    """An older layout's COMPLETE (no resident version: RESIDENT_VERSION 1's arrays; 5: the
    texts uncompressed; 6: the symbols' hex ids as strings; 7: the edges' id dictionaries
    as strings): a reader names the build to run, and the next build assembles it again
    from its shards."""
    from codeagent import format as fmt
    from codeagent.errors import IndexMissing

    git_repo.write("m.py", "def parse_header(x):\n    return x\n")
    git_repo.commit()
    first = build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    store = Store(git_repo.path / ".codeagent")
    directory = store.assembled_dir(first.manifest_id)
    (directory / fmt.COMPLETE_MARKER).write_text(
        f"{first.manifest_id} assembly {fmt.ASSEMBLY_VERSION} graph {fmt.GRAPH_VERSION}{older}\n")
    try:
        open_index(git_repo.path, ref="main").close()
    except IndexMissing as exc:
        assert "not assembled" in exc.message and "codeagent build" in str(exc.hint)
    else:
        raise AssertionError("an assembly of older resident arrays was read as current")
    again = build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    assert again.manifest_id == first.manifest_id and again.files_parsed == 0
    assert any("older layout" in r for r in again.repairs)  # said, not "nothing changed"
    assert store.is_assembled(first.manifest_id)
    with open_index(git_repo.path, ref="main") as view:
        assert resident.map_arrays(view.path.parent, "symbols") is not None
        assert resident.map_arrays(view.path.parent, "edges")["rows"].schema.metadata[
            b"codeagent.resident_version"] == str(resident.RESIDENT_VERSION).encode()
        assert resident.map_arrays(view.path.parent, "texts")["blocks"].num_rows == 1
