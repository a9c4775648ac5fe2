"""The shape of a successful tool answer: its structured content slimmed (nested fields that
only repeat their schema default are left out), cut to the call's budget together with its
text block, and the text block rendered in the asked-for format."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from .budget import Page, compact, fit
from .render import render

MIN_STRUCTURED = 600  # characters the structured part keeps however small the budget
JSON_SHARE, TEXT_SHARE = 0.5, 0.75  # the structured part's first share of the budget


def slim(body: dict[str, Any], model: Any) -> dict[str, Any]:
    """`body` with the fields of nested objects that equal their default (null, "", [],
    false, "ready") left out: the schema still holds them, and an agent pays for each. The
    top level (metadata, truncated, the answer's own fields) keeps every field."""
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return body
    try:
        lean = model.model_validate(body).model_dump(mode="json", exclude_defaults=True,
                                                     by_alias=True)
    except ValidationError:
        return body
    return {k: (lean[k] if k in lean and k != "metadata" and isinstance(v, (list, dict)) else v)
            for k, v in body.items() if not (k == "omitted" and v is None)}


def shaped(body: dict[str, Any], page: Page, fmt: str) -> tuple[dict[str, Any], str]:
    """(structured content, text) that together fit the page's budget, cut on whole items."""
    out = fit(body, page)
    text = render(out, fmt)
    if len(text) + len(compact(out)) <= page.max_chars:
        return out, text
    share = int(page.max_chars * (JSON_SHARE if fmt == "json" else TEXT_SHARE))
    for _ in range(8):
        out = fit(body, page.within(max(share, MIN_STRUCTURED)))
        text = render(out, fmt)
        over = len(text) + len(compact(out)) - page.max_chars
        if over <= 0 or share <= MIN_STRUCTURED:
            break
        share = min(share, len(compact(out))) - (over // 2 + 16 if fmt == "json" else over)
    return out, text
