"""The custom search attributes quantdesk runs carry, so the Web UI can filter them.

Plain names and Temporal type names (no temporalio import, so the stack, the
compose file's test and the workflows share one table): registered by the
embedded dev server at start (``--search-attribute Name=Type``), by the
namespace job of ``docker-compose.yml`` (``tests/test_compose.py`` checks both
agree with this table) and by the test servers; set by the workflows themselves
(``workflows/visibility.py``). A namespace without them cannot run quantdesk
workflows: upserting an unknown attribute fails the workflow task.
"""

from __future__ import annotations

FLOW = "QuantdeskFlow"
SYMBOL = "Symbol"
PORTFOLIO = "Portfolio"
AS_OF = "AsOf"

SEARCH_ATTRIBUTES: dict[str, str] = {
    FLOW: "Keyword",
    SYMBOL: "Keyword",
    PORTFOLIO: "Keyword",
    AS_OF: "Datetime",
}
