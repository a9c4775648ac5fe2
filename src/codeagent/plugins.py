"""Optional modules that register themselves (assembly steps, retrievers) when imported."""

from __future__ import annotations

import importlib


def import_optional(modules: tuple[str, ...]) -> None:
    """Import each module; one that does not exist is skipped, any other failure raises."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
