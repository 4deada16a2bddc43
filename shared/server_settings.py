"""The Temporal server settings (dynamic config) every dev server quantdesk starts gets:
`quantdesk up`'s, the tests' and the benches'; docker-compose sets the same in its file.

- ``TASK_PROBLEMS_DYNAMIC_CONFIG``: a run whose workflow task keeps failing is marked
  after two problems (``shared.search_attributes``).
- One partition per task queue. The server splits a queue's rate limit
  (``max_task_queue_activities_per_second``, a provider's ``REQUESTS_PER_SECOND``) among
  the queue's partitions, and a partition without a waiting task leaves its share unused:
  with the dev server's default of four, a queue limited to 5 calls/s with a full backlog
  dispatched 3.6 calls/s (calls of 10 ms) to 4.65 (calls of 1 s) here, and with one, 5.2
  (a first burst, then the limit). A desk's queues carry a few calls a second, far below
  what one partition serves.
"""

from __future__ import annotations

from shared.search_attributes import TASK_PROBLEMS_DYNAMIC_CONFIG

ONE_PARTITION = (
    "matching.numTaskqueueReadPartitions=1",
    "matching.numTaskqueueWritePartitions=1",
)
DEV_SERVER_DYNAMIC_CONFIG = (TASK_PROBLEMS_DYNAMIC_CONFIG, *ONE_PARTITION)


def dev_server_arguments() -> list[str]:
    """``--dynamic-config-value`` for each of ``DEV_SERVER_DYNAMIC_CONFIG``."""
    return [arg for value in DEV_SERVER_DYNAMIC_CONFIG for arg in ("--dynamic-config-value", value)]
