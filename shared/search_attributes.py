"""The custom search attributes quantdesk runs carry, so the Web UI can filter them.

Plain names and Temporal type names (no temporalio import, so the stack, the
compose file's test and the workflows share one table): registered by the
embedded dev server at start (``--search-attribute Name=Type``), by the
namespace job of ``docker-compose.yml`` (``tests/test_compose.py`` checks both
agree with this table) and by the test servers; set by the workflows themselves
(``workflows/visibility.py``). A namespace without them cannot run quantdesk
workflows: upserting an unknown attribute fails the workflow task.

Also the server's own mark on a run whose workflow task keeps failing
(``REPORTED_PROBLEMS``) and the dynamic config that says when it is set, which the
dev server, the test servers and docker-compose share.
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


def quoted(value: str) -> str:
    """``value`` as a string literal of a visibility query (``Symbol = "GOOG"``), escaped."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


REPORTED_PROBLEMS = "TemporalReportedProblems"
"""The server's own KeywordList on a run whose workflow task keeps failing, e.g.
``category=WorkflowTaskFailed`` and ``cause=WorkflowTaskFailedCauseWorkflowWorkerUnhandledFailure``;
cleared once a task succeeds (``activities/stuck_runs.py`` reads it)."""
WORKFLOW_TASK_FAILED = "category=WorkflowTaskFailed"

TASK_PROBLEMS_SETTING = "system.numConsecutiveWorkflowTaskProblemsToTriggerSearchAttribute"
TASK_PROBLEMS_BEFORE_REPORTED = 2
"""Consecutive workflow task problems after which the server sets ``REPORTED_PROBLEMS``: the
dev server of `quantdesk up`, the test servers and docker-compose's dynamic config (the
server's default is 5). Measured on the dev server: the Python SDK reports only a task's
first failure; each later attempt times out after the workflow task timeout (10 s), so a
run is marked about 10 s after its first failure here, and about 53 s with the default."""
TASK_PROBLEMS_DYNAMIC_CONFIG = f"{TASK_PROBLEMS_SETTING}={TASK_PROBLEMS_BEFORE_REPORTED}"
"""The dev server's ``--dynamic-config-value`` for it."""
