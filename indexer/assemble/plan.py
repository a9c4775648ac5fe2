"""What one assembly is: the manifest being built, what it is built on, and with which budget
and inputs, as one `Assembly` value the assembly's functions take instead of a dozen
parameters threaded by hand.

Two manifests stand around a change, each with one name everywhere in indexer/assemble/:
  previous  the manifest the ref named before this build (an overlay's chain and its graph
            step follow the change since it; assemble_change starts from it);
  base      the full assembly the new one is made on: its database copied and updated
            (pipeline.assemble), or read beneath an overlay (overlay.assemble_overlay).
When `previous` is a full assembly it is its own base; when it is an overlay, its base is the
full assembly beneath it (overlay.consolidation_base).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ...format.manifest import Manifest
from ...store import Store
from ..budget import MemoryBudget

if TYPE_CHECKING:  # only a type here: base.py's imports are not for a no-op build, which imports this
    from .base import BaseCopy


class Assembled(NamedTuple):
    """A manifest and its id: `previous` or `base` of an Assembly."""

    manifest: Manifest
    id: str


@dataclass(frozen=True)
class Assembly:
    """One assembly. What is built: `manifest` (its id `manifest_id`) into `store`. On what:
    `base` and `previous` (see the module's docstring). With which budget: `memory` (DuckDB's
    limit, batch sizes; None: the defaults) and `batch_bytes` (the source bytes inserted per
    batch; None: the budget's). Inputs: `tables`, shard id -> the Arrow table of a shard the
    build has in memory (read instead of its Parquet); `base_copy`, the base's database already
    being copied while the build parsed; `progress("assemble", done, total)`."""

    store: Store
    manifest: Manifest
    manifest_id: str
    base: Assembled | None = None
    previous: Assembled | None = None
    memory: MemoryBudget | None = None
    batch_bytes: int | None = None
    tables: Mapping[str, object] = field(default_factory=dict)
    base_copy: BaseCopy | None = None
    progress: Callable[[str, int, int], None] | None = None

    @property
    def final(self) -> Path:
        """Where the finished assembly is renamed into place: assembled/<manifest_id>/."""
        return self.store.assembled_dir(self.manifest_id)

    def on(self, base: tuple[Manifest, str] | None) -> Assembly:
        """The same assembly made on `base` (a (manifest, id) pair, or None: from nothing)."""
        return replace(self, base=None if base is None else Assembled(*base))
