"""A view without vectors remembers why (no file look-up per search) and says so every time."""

from __future__ import annotations

import pytest

from codeagent.errors import IndexMissing
from codeagent.indexer.build import BuildOptions, build
from codeagent.query import SearchRequest, open_index, search


def test_missing_vectors_are_remembered_per_view_and_reported_each_time(git_repo):
    git_repo.write("m.py", "def remove_file(path):\n    return path\n")
    git_repo.commit()
    build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    with open_index(git_repo.path, ref="main") as view:
        errors = []
        for _ in range(2):
            with pytest.raises(IndexMissing) as info:
                search(view, SearchRequest("delete a file", mode="semantic"))
            errors.append(info.value)
        assert "vectors" in view.cache
        assert str(errors[0]) == str(errors[1]) and "--embedder" in str(errors[0])
        assert errors[0] is not errors[1]  # a fresh error each time, not a re-raised object
        assert search(view, SearchRequest("remove_file", mode="auto")).results[0].name == "remove_file"
