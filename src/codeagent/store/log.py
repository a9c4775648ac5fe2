"""Append-only JSON-lines logs under the store's logs/ (builds, vectors)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .. import format as fmt

if TYPE_CHECKING:
    from .objects import Store


def append_log(store: Store, name: str, record: dict) -> None:
    """Append one JSON line to logs/NAME.jsonl (best effort: a log never fails a build)."""
    try:
        with open(store.root / fmt.LOGS_DIR / f"{name}.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
    except OSError:
        pass


def read_log(store: Store, name: str, limit: int = 20) -> list[dict]:
    try:
        lines = (store.root / fmt.LOGS_DIR / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out = []
    for line in lines[-limit:]:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
