"""Pages of a long list (an AutoRun's hundred tickers): ``?page=N``, 25 to a page.

A page number is read from the query as text, so a wrong one gets the console's own
message (400 for what is not a page number, 404 for a page past the last) rather than
a validation error's wording.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from client.errors import DeskError, NotFound

T = TypeVar("T")
PAGE_SIZE = 25


def page_number(raw: str) -> int:
    """``?page=`` as a number from 1; a ``DeskError`` saying what is allowed otherwise."""
    if not raw.isdigit() or int(raw) < 1:
        raise DeskError(f"page {raw!r} is not a page number: pages count from 1")
    return int(raw)


@dataclass(frozen=True)
class Paging:
    """Which page of how many items is shown."""

    number: int
    total: int
    size: int = PAGE_SIZE

    @property
    def pages(self) -> int:
        """How many pages the items fill (one, even when there are none)."""
        return max(1, -(-self.total // self.size))

    @property
    def first(self) -> int:
        """The index of the page's first item."""
        return (self.number - 1) * self.size

    @property
    def last(self) -> int:
        """The index after the page's last item."""
        return min(self.total, self.first + self.size)

    def window(self, items: Sequence[T]) -> list[T]:
        """The items on this page."""
        return list(items[self.first : self.last])


def paged(number: int, total: int, what: str) -> Paging:
    """Page ``number`` of ``total`` items; ``NotFound`` naming the last page past it."""
    paging = Paging(number, total)
    if number > paging.pages:
        raise NotFound(
            f"no page {number}: the {total} {what} fill {paging.pages} page(s) of {paging.size}"
        )
    return paging
