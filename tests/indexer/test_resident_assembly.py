"""The assembly writes the resident arrays readers map (format/resident.py); an incremental
assembly copies the previous one's name tables when the names did not change, and builds
them again when they did: either way they equal a fresh build's."""

from __future__ import annotations

from codeagent.format import resident
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
