"""Collecting a fleet store: keep what any repository's kept refs need."""

from __future__ import annotations

from ...errors import IndexMissing
from ...format.fleet import fleet_ref, read_listing
from ...store import Store
from ..maintenance import GcReport, gc_store


def fleet_gc(store: Store, *, dry_run: bool = False) -> GcReport:
    """gc keeping the refs the fleet's last build listed (every repository's, every ref):
    the refs of repositories since dropped from the fleet file go, and what only they needed."""
    listing = read_listing(store.root)
    if not listing:
        raise IndexMissing(f"{store.root} holds no fleet (no fleet.json)",
                           hint="run `codeagent org build FLEET.toml --store DIR` first, or `codeagent gc`")
    keep = [fleet_ref(name, ref) for name, refs in listing.items() for ref in refs]
    present = store.list_refs()
    return gc_store(store, [r for r in keep if r in present], dry_run=dry_run)
