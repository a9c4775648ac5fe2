"""The MCP output models of query answers are projections of `codeagent.model`, the one result
family the CLI's `--json` prints: declared once each, they cannot drift from the results."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from codeagent import model
from codeagent.mcp_server import schemas

# Result types with an MCP answer of another shape: search_files answers `FileSearch`
# (a result_id per match, its context as one object).
NOT_PROJECTED = {model.GrepMatch, model.GrepResponse}
# What the MCP answers add or leave out, by model (the declarations in schemas.py say why).
MCP_ONLY = {"Hit": {"context_before", "context_after", "more_in_file"},
            "SearchResults": {"suggested_next_actions"}, "Symbol": {"collapsed"},
            "FileOutline": {"collapsed"},
            "ResponseMetadata": {"protocol_version", "indexing_status", "ignored_arguments"},
            "SymbolDetailOut": {"is_public_api", "is_static", "is_abstract", "is_async", "is_override",
                                "is_deprecated", "has_doc_comment", "parameter_signature",
                                "parameter_count", "return_type"}}  # seed 000's facts
RESPONSE = {"truncated", "next_cursor", "omitted"}  # every MCP response's paging fields
LEFT_OUT = {"Symbol": {"body_hash", "col_start", "col_end", "name_line", "fq_name"}}


def test_every_result_type_of_the_model_has_its_projection():
    results = {c for c in vars(model).values() if dataclasses.is_dataclass(c) and isinstance(c, type)}
    assert results - NOT_PROJECTED - set(schemas._PROJECTED) == set()


@pytest.mark.parametrize("result", sorted(schemas._PROJECTED, key=lambda c: c.__name__),
                         ids=lambda c: c.__name__)
def test_a_projection_has_the_results_fields(result):
    mcp = schemas._PROJECTED[result]
    extra = MCP_ONLY.get(mcp.__name__, set()) | (RESPONSE if issubclass(mcp, schemas.Response) else set())
    wanted = {f.name for f in dataclasses.fields(result)} - LEFT_OUT.get(mcp.__name__, set()) | extra
    assert set(mcp.model_fields) == wanted


def test_a_projection_refuses_a_field_it_neither_declares_nor_leaves_out():
    @dataclass
    class Result:
        name: str
        added: int = 0

    with pytest.raises(TypeError, match=r"\['added'\] are neither projected nor left out"):
        schemas.projection("R", Result, order="name")
    with pytest.raises(TypeError, match=r"\['nope'\] are not fields"):
        schemas.projection("R", Result, left_out="nope")
    whole = schemas.projection("R", Result, {"note": (str, "")})
    assert list(whole.model_fields) == ["name", "added", "note"]
    assert whole.model_validate({"name": "x"}).model_dump() == {"name": "x", "added": 0, "note": ""}


def test_nested_results_are_their_projections():
    """A result inside a result is typed, on the wire, as its own projection."""
    assert schemas.SearchResults.model_fields["results"].annotation == list[schemas.Hit]
    assert schemas.Graph.model_fields["root"].annotation == schemas.Symbol | None
    assert schemas.FileOutline.model_fields["metadata"].annotation is schemas.ResponseMetadata
