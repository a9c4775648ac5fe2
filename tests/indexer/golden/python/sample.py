"""Inventory service: stock levels and reservations."""

import logging
import os.path as osp
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Optional

from .errors import OutOfStock as StockError

log = logging.getLogger(__name__)
MAX_RESERVATION = 100


@dataclass
class Item:
    """One stocked item."""

    sku: str
    quantity: int = 0
    tags: list[str] = field(default_factory=list)


class Repository(ABCRepository, metaclass=RepoMeta):
    # Loaded lazily from disk.
    _cache = None

    def __init__(self, root: str) -> None:
        self.root = osp.abspath(root)
        self.items: dict[str, Item] = defaultdict(Item)

    @staticmethod
    def normalise(sku: str) -> str:
        """Upper-case and strip a SKU."""
        return sku.strip().upper()

    @property
    def size(self) -> int:
        return len(self.items)

    async def reserve(self, sku: str, count: int = 1) -> Optional[Item]:
        """Reserve `count` units of `sku`.

        Raises StockError when there are not enough units.
        """
        item = self.items[self.normalise(sku)]
        if item.quantity < count or count > MAX_RESERVATION:
            raise StockError(sku)
        item.quantity -= count
        log.info("reserved %s x%d", sku, count)
        return item

    def _load(self, paths: Iterable[str]) -> None:
        def read(path):
            with open(path) as fh:
                return fh.read()

        for path in paths:
            self.items[path] = Item(read(path))


def total_quantity(repo: Repository) -> int:
    """Sum of all quantities."""
    return sum(item.quantity for item in repo.items.values())
