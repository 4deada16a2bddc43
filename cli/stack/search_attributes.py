"""The custom search attributes quantdesk runs carry, so the Web UI can filter them.

Plain names and Temporal type names (no temporalio import), registered by the
embedded dev server at start (``--search-attribute Name=Type``) and by the
namespace job of ``docker-compose.yml``; ``tests/test_compose.py`` checks that
both agree with this table.
"""

from __future__ import annotations

SEARCH_ATTRIBUTES: dict[str, str] = {
    "QuantdeskFlow": "Keyword",
    "Symbol": "Keyword",
    "Portfolio": "Keyword",
    "AsOf": "Datetime",
}
